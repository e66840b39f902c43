// The float32 row adds of column_sum.h with AVX-512: four 16-lane vectors of part
// (64 values) stay in registers while every row of the batch is added into them,
// then go back once; a masked last vector instead of a scalar tail.
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/column_sum.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::column_sum_detail {
namespace {

// Each lane adds its rows in order: the same roundings as the baseline's
// part[j] += row[j], one row after another. (Where two NaNs meet, this keeps part's;
// the baseline keeps whichever operand the compiler put first.)
void add_rows_f32(const float* const* rows, int nrows, float* part, int64_t n) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512 a = _mm512_loadu_ps(part + j), b = _mm512_loadu_ps(part + j + 16);
    __m512 c = _mm512_loadu_ps(part + j + 32), d = _mm512_loadu_ps(part + j + 48);
    for (int r = 0; r < nrows; ++r) {
      const float* s = rows[r] + j;
      a = _mm512_add_ps(a, _mm512_loadu_ps(s));
      b = _mm512_add_ps(b, _mm512_loadu_ps(s + 16));
      c = _mm512_add_ps(c, _mm512_loadu_ps(s + 32));
      d = _mm512_add_ps(d, _mm512_loadu_ps(s + 48));
    }
    _mm512_storeu_ps(part + j, a);
    _mm512_storeu_ps(part + j + 16, b);
    _mm512_storeu_ps(part + j + 32, c);
    _mm512_storeu_ps(part + j + 48, d);
  }
  for (; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    __m512 a = _mm512_maskz_loadu_ps(m, part + j);
    for (int r = 0; r < nrows; ++r) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, rows[r] + j));
    _mm512_mask_storeu_ps(part + j, m, a);
  }
}

constexpr ColumnSumKernels kSet = {"avx512", add_rows_f32};

}  // namespace
}  // namespace ember::cpu::column_sum_detail
EMBER_ISA_END

namespace ember::cpu::column_sum_detail {
const ColumnSumKernels* column_sum_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::column_sum_detail

#else

namespace ember::cpu::column_sum_detail {
const ColumnSumKernels* column_sum_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::column_sum_detail

#endif
