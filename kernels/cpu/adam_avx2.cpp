// adam_impl.h's float32 range loop compiled for avx2: 8 lanes a step.
#include <cmath>
#include <cstdint>

#include "kernels/base/scalar.h"
#include "kernels/cpu/adam_kernels.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/adam_impl.h"
namespace ember::cpu::adam_detail {
namespace {
constexpr AdamKernels kSet = adam_table("avx2");
}  // namespace
}  // namespace ember::cpu::adam_detail
EMBER_ISA_END

namespace ember::cpu::adam_detail {
const AdamKernels* adam_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::adam_detail

#else

namespace ember::cpu::adam_detail {
const AdamKernels* adam_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::adam_detail

#endif
