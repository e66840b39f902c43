// The float32 softmax loops (softmax_row_impl.h) for any CPU (SSE2 on x86-64).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/isa.h"
#include "kernels/cpu/softmax_row.h"
#include "kernels/base/vec_math.h"

#include "kernels/cpu/softmax_row_impl.h"

namespace ember::cpu::softmax_detail {
namespace {
constexpr SoftmaxRowKernels kSet = table<ExpLoop<false>, 16>("generic");
}  // namespace

const SoftmaxRowKernels* softmax_row_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::softmax_detail
