// The float32 softmax loops (softmax_row_impl.h) compiled for AVX-512.
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

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/exp_avx512.h"
#include "kernels/cpu/softmax_row_impl.h"
namespace ember::cpu::softmax_detail {
namespace {

// The softmax loops' exp policy (ExpLoop in softmax_row_impl.h) on exp16.
struct ExpScalef {
  // e[i] = exp(x[i] - m) for i in [0, n); e may be x. The last n % 16 lanes masked.
  static void shifted(const float* x, float m, float* e, int64_t n) {
    const __m512 mv = _mm512_set1_ps(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(e + i, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv)));
    if (i < n) {
      const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
      _mm512_mask_storeu_ps(e + i, k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv)));
    }
  }
  // e[i] = exp(x[i] - m[i]) for i in [0, n).
  static void shifted_each(const float* x, const float* m, float* e, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(e + i, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(m + i))));
    if (i < n) {
      const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
      const __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, m + i));
      _mm512_mask_storeu_ps(e + i, k, exp16(t));
    }
  }
};

// The largest (kMax) or the sum of v's 16 lanes, in every lane: halves, quarters,
// pairs and neighbours swapped and combined.
template <bool kMax>
inline __m512 all_lanes(__m512 v) {
  const auto op = [](__m512 a, __m512 b) { return kMax ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b); };
  v = op(v, _mm512_shuffle_f32x4(v, v, 0x4e));
  v = op(v, _mm512_shuffle_f32x4(v, v, 0xb1));
  v = op(v, _mm512_permute_ps(v, 0x4e));
  return op(v, _mm512_permute_ps(v, 0xb1));
}

// Rows of n <= 16 values (a batch of logits), one masked vector per row: its max
// and sum stay in registers, where the portable block loop (softmax_rows_f32) runs
// them as scalar chains. Each row is a chain of about 40 dependent instructions, so
// kRows rows go side by side (8 measured faster than 4 and than 1). Longer short
// rows go to the block loop.
void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  if (n > 16) return softmax_rows_f32<ExpScalef>(x, y, rows, n, log);
  constexpr int kRows = 8;
  const __mmask16 k = static_cast<__mmask16>((1u << n) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
    // Fewer than kRows rows left: the missing ones repeat the first and are not stored.
    const int nr = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
    __m512 v[kRows], m[kRows], e[kRows], s[kRows];
    for (int i = 0; i < kRows; ++i) v[i] = _mm512_mask_loadu_ps(neg_inf, k, x + (r0 + (i < nr ? i : 0)) * n);
    for (int i = 0; i < kRows; ++i) m[i] = all_lanes<true>(v[i]);
    for (int i = 0; i < kRows; ++i) {  // all -inf: m = 0; the -inf lanes past n give 0
      m[i] = _mm512_mask_mov_ps(m[i], _mm512_cmpeq_ps_mask(m[i], neg_inf), _mm512_setzero_ps());
      e[i] = exp16(_mm512_sub_ps(v[i], m[i]));
    }
    for (int i = 0; i < kRows; ++i) s[i] = all_lanes<false>(e[i]);
    if (log) {
      // The library log, all calls in one loop (each call clobbers the vector registers).
      float ls[kRows];
      for (int i = 0; i < nr; ++i) ls[i] = std::log(_mm512_cvtss_f32(s[i]));
      for (int i = 0; i < nr; ++i)
        _mm512_mask_storeu_ps(y + (r0 + i) * n, k, _mm512_sub_ps(v[i], _mm512_add_ps(m[i], _mm512_set1_ps(ls[i]))));
    } else {
      for (int i = 0; i < kRows; ++i)
        if (i < nr) _mm512_mask_storeu_ps(y + (r0 + i) * n, k, _mm512_div_ps(e[i], s[i]));
    }
  }
}

constexpr SoftmaxRowKernels kSet = {"avx512", softmax_row_f32<ExpScalef, 64>, softmax_rows_avx512,
                                    softmax_cols_f32<ExpScalef>};
}  // namespace
}  // namespace ember::cpu::softmax_detail
EMBER_ISA_END

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::softmax_detail

#else

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::softmax_detail

#endif
