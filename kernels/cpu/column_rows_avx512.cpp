// The float32 column-schedule row loops of column_rows.h with AVX-512: the results of
// 64 (sums) or 16 (extremes; moments, as two vectors of 8 doubles) adjacent outputs
// stay in registers while every row of the batch is folded in, then go back once; a
// masked last vector instead of a scalar tail. Separate multiplies and adds, no FMA:
// the baseline's roundings.
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/column_rows.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::column_rows_detail {
namespace {

inline __mmask16 first16(int64_t k) { return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << k) - 1); }
inline __mmask8 first8(int64_t k) { return k >= 8 ? __mmask8(0xff) : __mmask8((1u << k) - 1); }

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
    const __mmask16 m = first16(n - j);
    __m512 a = _mm512_maskz_loadu_ps(m, part + j);
    for (int r = 0; r < nrows; ++r) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, rows[r] + j));
    _mm512_mask_storeu_ps(part + j, m, a);
  }
}

// 16 columns at a time: their best values in one vector, their positions in two
// (8 int64 lanes each, the low and high halves of the win mask).
template <bool kMax>
void extreme_rows(const float* const* rows, int nrows, int64_t pos0, float* best, int64_t* pos, int64_t n) {
  constexpr int kBeyond = kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = first16(n - j);
    __m512 b = _mm512_maskz_loadu_ps(m, best + j);
    __m512i lo = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(m), pos + j);
    __m512i hi = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(m >> 8), pos + j + 8);
    for (int r = 0; r < nrows; ++r) {
      const __m512 v = _mm512_maskz_loadu_ps(m, rows[r] + j);
      const __mmask16 best_nan = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
      const __mmask16 win = static_cast<__mmask16>(
          (_mm512_cmp_ps_mask(v, b, kBeyond) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) & ~best_nan & m);
      const __m512i at = _mm512_set1_epi64(pos0 + r);
      b = _mm512_mask_mov_ps(b, win, v);
      lo = _mm512_mask_mov_epi64(lo, static_cast<__mmask8>(win), at);
      hi = _mm512_mask_mov_epi64(hi, static_cast<__mmask8>(win >> 8), at);
    }
    _mm512_mask_storeu_ps(best + j, m, b);
    _mm512_mask_storeu_epi64(pos + j, static_cast<__mmask8>(m), lo);
    _mm512_mask_storeu_epi64(pos + j + 8, static_cast<__mmask8>(m >> 8), hi);
  }
}

void extreme_rows_f32(const float* const* rows, int nrows, int64_t pos0, bool max, float* best, int64_t* pos,
                      int64_t n) {
  if (max) extreme_rows<true>(rows, nrows, pos0, best, pos, n);
  else extreme_rows<false>(rows, nrows, pos0, best, pos, n);
}

// a + b and a * b, each rounded: GCC writes the plain intrinsics as vector
// arithmetic and would contract a multiply and an add into an FMA (one rounding, the
// baseline has two); the embedded-rounding forms are never contracted.
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
inline __m512d add(__m512d a, __m512d b) { return _mm512_add_round_pd(a, b, kNearest); }
inline __m512d mul(__m512d a, __m512d b) { return _mm512_mul_round_pd(a, b, kNearest); }

// 16 columns at a time, as two vectors of 8 doubles each for mean and m2.
void moments_rows_f32(const float* const* rows, int nrows, int64_t count0, double* mean, double* m2, int64_t n) {
  double inv[kMaxRows];
  for (int r = 0; r < nrows; ++r) inv[r] = 1.0 / static_cast<double>(count0 + r + 1);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask8 ml = first8(n - j), mh = first8(n - j - 8 > 0 ? n - j - 8 : 0);
    __m512d mu0 = _mm512_maskz_loadu_pd(ml, mean + j), mu1 = _mm512_maskz_loadu_pd(mh, mean + j + 8);
    __m512d sq0 = _mm512_maskz_loadu_pd(ml, m2 + j), sq1 = _mm512_maskz_loadu_pd(mh, m2 + j + 8);
    for (int r = 0; r < nrows; ++r) {
      const __m512d x0 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(ml, rows[r] + j));
      const __m512d x1 = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mh, rows[r] + j + 8));
      const __m512d w = _mm512_set1_pd(inv[r]);
      const __m512d d0 = _mm512_sub_pd(x0, mu0), d1 = _mm512_sub_pd(x1, mu1);
      mu0 = add(mu0, mul(d0, w));
      mu1 = add(mu1, mul(d1, w));
      sq0 = add(sq0, mul(d0, _mm512_sub_pd(x0, mu0)));
      sq1 = add(sq1, mul(d1, _mm512_sub_pd(x1, mu1)));
    }
    _mm512_mask_storeu_pd(mean + j, ml, mu0);
    _mm512_mask_storeu_pd(mean + j + 8, mh, mu1);
    _mm512_mask_storeu_pd(m2 + j, ml, sq0);
    _mm512_mask_storeu_pd(m2 + j + 8, mh, sq1);
  }
}

constexpr ColumnRowKernels kSet = {"avx512", add_rows_f32, extreme_rows_f32, moments_rows_f32};

}  // namespace
}  // namespace ember::cpu::column_rows_detail
EMBER_ISA_END

namespace ember::cpu::column_rows_detail {
const ColumnRowKernels* column_row_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::column_rows_detail

#else

namespace ember::cpu::column_rows_detail {
const ColumnRowKernels* column_row_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::column_rows_detail

#endif
