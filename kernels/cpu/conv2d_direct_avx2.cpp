// The stride-1 convolution kernels compiled for AVX2: 32-byte vectors.
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

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
namespace ember::cpu::conv2d_detail {
namespace {
constexpr int kBytes = 32;
}  // namespace
}  // namespace ember::cpu::conv2d_detail
#include "kernels/cpu/conv2d_direct_impl.h"
#include "kernels/cpu/relu_pool_impl.h"
namespace ember::cpu::conv2d_detail {
namespace {
constexpr DirectKernels kSet{"avx2", direct_table<float>(), direct_table<double>(),
                             relu_pool_table<float>(), relu_pool_table<double>()};
}  // namespace
}  // namespace ember::cpu::conv2d_detail
EMBER_ISA_END

namespace ember::cpu::conv2d_detail {
const DirectKernels* direct_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::conv2d_detail

#else

namespace ember::cpu::conv2d_detail {
const DirectKernels* direct_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::conv2d_detail

#endif
