// The stride-1 convolution kernels compiled for any CPU (SSE2 on x86-64): 16-byte vectors.
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

namespace ember::cpu::conv2d_detail {
namespace {
constexpr int kBytes = 16;
}  // namespace
}  // namespace ember::cpu::conv2d_detail
#include "kernels/cpu/conv2d_direct_impl.h"
#include "kernels/cpu/relu_pool_impl.h"

namespace ember::cpu::conv2d_detail {
namespace {
constexpr DirectKernels kSet{"generic", direct_table<float>(), direct_table<double>(),
                             relu_pool_table<float>(), relu_pool_table<double>()};
}  // namespace

const DirectKernels* direct_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::conv2d_detail
