// The stride-1 convolution kernels compiled for AVX-512: 64-byte vectors, float32
// (float64 borrows the avx2 table, below).
// conv2d.cpp runs them when this level is active (see isa.h); the code is
// conv2d_direct_impl.h and relu_pool_impl.h.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/transpose16_avx512.h"  // the lane tiles' transposed store
namespace ember::cpu::conv2d_detail {
namespace {
constexpr int kBytes = 64;
}  // namespace
}  // namespace ember::cpu::conv2d_detail
#include "kernels/cpu/conv2d_direct_impl.h"
#include "kernels/cpu/relu_pool_impl.h"
namespace ember::cpu::conv2d_detail {
namespace {
constexpr Kernels<float> kF32 = direct_table<float>();
constexpr ReluPool<float> kReluPoolF32 = relu_pool_table<float>();
}  // namespace
}  // namespace ember::cpu::conv2d_detail
EMBER_ISA_END

namespace ember::cpu::conv2d_detail {
// float64 at this level runs the avx2 kernels, which every AVX-512 CPU runs: float64
// convolutions (gradient checks, mostly) do not pay for the 54 KB that their
// AVX-512 instantiations took in the library.
const DirectKernels* direct_kernels_avx512() {
  static const DirectKernels set{"avx512", kF32, direct_kernels_avx2()->f64, kReluPoolF32,
                                 direct_kernels_avx2()->relu_pool_f64};
  return &set;
}
}  // namespace ember::cpu::conv2d_detail

#else

namespace ember::cpu::conv2d_detail {
const DirectKernels* direct_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::conv2d_detail

#endif
