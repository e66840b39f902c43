// The float32 softmax loops (softmax_row_impl.h) compiled for AVX2.
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

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/softmax_row_impl.h"
namespace ember::cpu::softmax_detail {
namespace {
constexpr SoftmaxRowKernels kSet = table<ExpLoop<true>, 32>("avx2");
}  // namespace
}  // namespace ember::cpu::softmax_detail
EMBER_ISA_END

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::softmax_detail

#else

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::softmax_detail

#endif
