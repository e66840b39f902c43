// var's float32 block moments (moments.h) with AVX-512: two 16-lane accumulators
// per look (two chains hide the add latency; four measured slower, their prefetches
// and loads crowding the loop), a masked last vector instead of a scalar tail. And
// sum's short rows in double lanes (sum_f32_wide).
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/isa.h"
#include "kernels/cpu/moments.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::moments_detail {
namespace {

inline __mmask16 first(int64_t k) { return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << k) - 1); }

// The 16 lanes of v added in double, in a fixed order.
inline double lanes(__m512 v) {
  const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

double sum_f32(const float* x, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_add_ps(a, _mm512_loadu_ps(x + i));
    b = _mm512_add_ps(b, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(first(n - i), x + i));
  return lanes(_mm512_add_ps(a, b));
}

// Masked-off lanes of the last vector stay 0: maskz_sub gives 0 there, not -c.
double sq_dev_f32(const float* x, int64_t n, float c) {
  const __m512 cv = _mm512_set1_ps(c);
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(x + n + i), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x + n + i + 16), _MM_HINT_T0);
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), cv);
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), cv);
    a = _mm512_fmadd_ps(d0, d0, a);
    b = _mm512_fmadd_ps(d1, d1, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = first(n - i);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), cv);
    a = _mm512_fmadd_ps(d, d, a);
  }
  return lanes(_mm512_add_ps(a, b));
}

// Four chains of 8 double lanes, each 8 floats widened by one conversion; a masked
// load for the last 1 to 7 values.
double sum_f32_wide(const float* x, int64_t n) {
  __m512d a = _mm512_setzero_pd(), b = a, c = a, d = a;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
    b = _mm512_add_pd(b, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
    c = _mm512_add_pd(c, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)));
    d = _mm512_add_pd(d, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24)));
  }
  for (; i + 8 <= n; i += 8) a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
  if (i < n) b = _mm512_add_pd(b, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(__mmask8((1u << (n - i)) - 1), x + i)));
  return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a, b), _mm512_add_pd(c, d)));
}

constexpr MomentsKernels kSet = {"avx512", sum_f32, sq_dev_f32, sum_f32_wide};

}  // namespace
}  // namespace ember::cpu::moments_detail
EMBER_ISA_END

namespace ember::cpu::moments_detail {
const MomentsKernels* moments_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::moments_detail

#else

namespace ember::cpu::moments_detail {
const MomentsKernels* moments_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::moments_detail

#endif
