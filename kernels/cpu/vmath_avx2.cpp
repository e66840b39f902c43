// The float32 transcendentals (vmath_impl.h) compiled for AVX2, with FMA.
#include <cstdint>

#include "kernels/base/vec_erf.h"
#include "kernels/base/vec_math.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/vmath.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/vmath_impl.h"
namespace ember::cpu::vmath_detail {
namespace {
constexpr VmathKernels kSet = table<true>("avx2");
}  // namespace
}  // namespace ember::cpu::vmath_detail
EMBER_ISA_END

namespace ember::cpu::vmath_detail {
const VmathKernels* vmath_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::vmath_detail

#else

namespace ember::cpu::vmath_detail {
const VmathKernels* vmath_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::vmath_detail

#endif
