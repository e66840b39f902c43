// The float32 transcendentals (vmath_impl.h) for any CPU (SSE2 on x86-64), without
// fused multiply-add.
#include <cstdint>

#include "kernels/base/vec_erf.h"
#include "kernels/base/vec_math.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/vmath.h"

#include "kernels/cpu/vmath_impl.h"

namespace ember::cpu::vmath_detail {
namespace {
constexpr VmathKernels kSet = table<false>("generic");
}  // namespace

const VmathKernels* vmath_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::vmath_detail
