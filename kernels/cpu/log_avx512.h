// Natural log on 16 float32 lanes with AVX-512, for the softmax loops' log sums (a
// block of 16 short rows takes its 16 logs in one vector instead of 16 library
// calls). Include it after EMBER_ISA_BEGIN of an avx512 level or above, after
// <immintrin.h>; it has internal linkage, a copy per kernel file.
#pragma once

namespace ember::cpu {
namespace {

// log x = k ln 2 + log m with x = m 2^k, m in [0.75, 1.5) (vgetmantps; vgetexpps
// gives floor(log2 x), one more where m < 1), and log m = 2 atanh(f) = 2f + 2f u q(u),
// f = (m - 1) / (m + 1) in [-1/7, 1/5], u = f^2, q of degree 2 (scripts/fit-vmath:
// 2.8e-9 of log m). m - 1 is exact; f carries two roundings, so log m is within
// about 1.5 ulp, and k ln 2 enters in two parts (ln 2's high part has 15 bits, so k
// times it is exact for every float's k; both parts are positive, so an infinite k,
// of 0 or inf, stays one infinity). Subnormal x is normalized by vgetexpps and
// vgetmantps; 0 and -0 give -inf, +inf gives +inf, a negative x or a NaN gives NaN.
// tests/kernels/test_vec_math.cpp holds it to 2 ulp of the rounded log.
// log x as hi + lo, hi = k ln 2's high part (exact) and lo = k ln 2's low part + log m
// (|lo| <= 0.41 + 1.4e-6 |k|): a log sum of up to 2^96 keeps about 1e-7 of absolute
// precision in lo where one float (up to 67) would round to 4e-6. log16 adds them.
struct Log16Parts {
  __m512 hi, lo;
};
inline Log16Parts log16_parts(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_nan);
  __m512 k = _mm512_getexp_ps(x);
  k = _mm512_mask_add_ps(k, _mm512_cmp_ps_mask(m, one, _CMP_LT_OQ), k, one);
  const __m512 f = _mm512_div_ps(_mm512_sub_ps(m, one), _mm512_add_ps(m, one));
  const __m512 u = _mm512_mul_ps(f, f);
  __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(0.15180884301662445f), u, _mm512_set1_ps(0.19978870451450348f));
  q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(0.333334743976593f));
  const __m512 f2 = _mm512_add_ps(f, f);
  const __m512 logm = _mm512_fmadd_ps(_mm512_mul_ps(f2, u), q, f2);
  return {_mm512_mul_ps(k, _mm512_set1_ps(0.693145751953125f)),
          _mm512_fmadd_ps(k, _mm512_set1_ps(1.4286068203094172e-6f), logm)};
}

// hi + lo rounds once (hi is exact).
inline __m512 log16(__m512 x) {
  const Log16Parts p = log16_parts(x);
  return _mm512_add_ps(p.hi, p.lo);
}

}  // namespace
}  // namespace ember::cpu
