// The 2x2 stride-2 pooling loops (pool2d_2x2_impl.h) for any CPU (SSE2 on x86-64).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/pool2d_2x2.h"

#include "kernels/cpu/pool2d_2x2_impl.h"

namespace ember::cpu::pool2d_detail {
namespace {
constexpr Pool2x2Kernels kSet{"generic", max_2x2<float>, max_2x2<double>, avg_2x2<float>, avg_2x2<double>};
}  // namespace

const Pool2x2Kernels* pool2x2_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::pool2d_detail
