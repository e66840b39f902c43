// exp on 16 float32 lanes with AVX-512, shared by the AVX-512 softmax loops and the
// AVX-512 vmath table. Include it after EMBER_ISA_BEGIN of an avx512 level or above,
// after <immintrin.h>; it has internal linkage, a copy per kernel file.
#pragma once

namespace ember::cpu {
namespace {

// The steps of exp_fast<true> (vec_math.h) on 16 lanes, for an argument already
// clamped to [-104, 89] (or NaN): n = round(x / ln2), the reduced argument
// r = x - n ln2 (ln2 in two parts, so r is exact), and e^r = 1 + r + r^2 q(r).
// The caller scales by 2^n with vscalefps: one instruction, rounding once (a
// subnormal result included), where the portable code builds two factors in the
// exponent bits. kShort: q of degree 2 instead of 4 (relative error 6.2e-6 instead
// of 1 ulp; scripts/fit-vmath's exp fit at degree 2), for results that are only
// kept rounded to a 16-bit float.
inline __m512 exp16_n(__m512 xc) {
  return _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline __m512 exp16_reduced(__m512 xc, __m512 n) {
  return _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440054905e-4f), _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), xc));
}
template <bool kShort = false>
inline __m512 exp16_poly(__m512 r) {
  __m512 q;
  if constexpr (kShort) {
    q = _mm512_set1_ps(0.04091719537973404f);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.16753989458084106f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.5000893473625183f));
  } else {
    q = _mm512_set1_ps(0.001374532817862928f);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.008368946611881256f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.04166964814066887f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.166665181517601f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.49999988079071045f));
  }
  return _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r), _mm512_set1_ps(1.0f));
}

// exp on 16 lanes: about 15 instructions per vector instead of 25, for loops bound
// by exp (softmax, exp of half blocks). vmaxps and vminps return their second
// operand when either is NaN, so a NaN runs through to the result.
inline __m512 exp16(__m512 t) {
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), t));
  const __m512 n = exp16_n(xc);
  return _mm512_scalef_ps(exp16_poly(exp16_reduced(xc, n)), n);
}

// exp16 for the softmax loops' arguments x - max, which are <= 0 or NaN: no upper
// clamp. kShort as above, for loops whose results are stored as float16/bfloat16.
template <bool kShort>
inline __m512 exp16_nonpos(__m512 t) {
  const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-104.0f), t);
  const __m512 n = exp16_n(xc);
  return _mm512_scalef_ps(exp16_poly<kShort>(exp16_reduced(xc, n)), n);
}

}  // namespace
}  // namespace ember::cpu
