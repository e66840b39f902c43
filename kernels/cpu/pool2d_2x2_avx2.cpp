// The 2x2 stride-2 pooling loops (pool2d_2x2_impl.h) compiled for AVX2.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/pool2d_2x2.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/pool2d_2x2_impl.h"
namespace ember::cpu::pool2d_detail {
namespace {
constexpr Pool2x2Kernels kSet{"avx2", max_2x2<float>, max_2x2<double>, avg_2x2<float>, avg_2x2<double>};
}  // namespace
}  // namespace ember::cpu::pool2d_detail
EMBER_ISA_END

namespace ember::cpu::pool2d_detail {
const Pool2x2Kernels* pool2x2_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::pool2d_detail

#else

namespace ember::cpu::pool2d_detail {
const Pool2x2Kernels* pool2x2_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::pool2d_detail

#endif
