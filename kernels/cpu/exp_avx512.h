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
// exponent bits.
inline __m512 exp16_n(__m512 xc) {
  return _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline __m512 exp16_reduced(__m512 xc, __m512 n) {
  return _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440054905e-4f), _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), xc));
}
inline __m512 exp16_poly(__m512 r) {
  __m512 q = _mm512_set1_ps(0.001374532817862928f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.008368946611881256f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.04166964814066887f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.166665181517601f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0.49999988079071045f));
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

// e^-b for b >= 0 (or NaN): the same bits as exp16(-b), with -b formed as 0 - b
// (which keeps a NaN's sign), and fewer instructions. One clamp, b <= 104, where
// exp16 clamps its argument on both sides (the clamp at 89 never applies, since
// e^-b <= 1). And -b is never formed: its sign is folded into the constants, n =
// round(b * -log2 e) and r = -b - n * 0.693359375 + n * 2.12194e-4 (ln 2 is
// 0.693359375 - 2.12194e-4), the same exact values as exp16_reduced's, so the same
// roundings. tanh16 passes b = |x| + |x|, an addition where -2|x| was a multiply: on
// this Zen CPU additions run on their own two pipes, and the tanh loop is bound by the
// two FMA pipes that multiplies share. A NaN b stays NaN (vminps returns its second
// operand then).
inline __m512 exp16_neg(__m512 b) {
  const __m512 bc = _mm512_min_ps(_mm512_set1_ps(104.0f), b);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(bc, _mm512_set1_ps(-1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440054905e-4f),
                                   _mm512_fnmsub_ps(n, _mm512_set1_ps(0.693359375f), bc));
  return _mm512_scalef_ps(exp16_poly(r), n);
}

// e^x as 2^(x log2 e) = 2^n 2^f, n = floor(s), s = x log2 e, f = s - n: vreduceps gives f
// (exact but for s in (-2^-25, 0), where 1 + s rounds to f = 1: the polynomial is
// fitted on the closed [0, 1]), a degree-4 polynomial 2^f (scripts/fit-vmath,
// 2.9e-6), and vscalefps multiplies by 2^floor(s) itself, rounding once (a subnormal
// result included), so n is never formed: 7 instructions where exp16's ln 2
// reduction and degree-6 polynomial take 12. No clamp either: vreduceps gives 0 for
// +-inf and for every |s| >= 2^23 (integers), so the result is 2^floor(s) times 1:
// inf, or 0; a NaN runs through. Rounding x log2 e adds up to half an ulp of 128 to
// the exponent: below 1e-5 relative in all (tests assert 1e-5), far below a
// float16's half ulp (2.4e-4 at least) and a bfloat16's (2.0e-3). For loops whose
// results are stored as float16 or bfloat16, where exp16's 1 ulp of float32 buys
// nothing. (The route with n rounded to nearest and f in [-1/2, 1/2] took a clamp, a
// vroundscaleps and a subtraction more: the float16 softmax read 0.51-0.59 of the
// copy floor.) exp2_16 is 2^s itself, for callers that form s with an FMA.
inline __m512 exp2_16(__m512 s) {
  const __m512 f = _mm512_reduce_ps(s, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_set1_ps(0.013426565565168858f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.052240870893001556f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24128270149230957f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6930440068244934f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, s);
}
inline __m512 exp16_pow2(__m512 x) { return exp2_16(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f))); }

// exp of values whose results are stored as float16 or bfloat16 (the half runs of
// the elementwise exp): the short route above, for any argument.
inline __m512 exp16_half(__m512 t) { return exp16_pow2(t); }

// e^t for t <= 64 or NaN by a table of 2^(j/16): n = round(t * 16 / ln 2) comes from
// one FMA onto 1.5 * 2^23 (v = 1.5 * 2^23 + n, whose low 4 mantissa bits are n mod
// 16, the table index for vpermps, which reads only those), r = t - n ln2/16 (ln 2 /
// 16 in two parts: n * hi is exact for |n| <= 2401, |t| <= 104), |r| <= ln2/32, so
// e^r - 1 = r (1 + r (1/2 + r / 6)) leaves 9e-9 relative out; the result is T[j] +
// T[j] (e^r - 1) in one FMA, scaled by 2^floor(n / 16) with vscalefps (rounding once,
// a subnormal result included). Eight instructions on the FMA pipes where the ln 2
// route without its upper clamp took ten: 1.48-1.52 ns per 16 values in L1 on one
// thread against 1.76-1.80. Over every float in [-104, -0], 1.07 ulp from exp at
// worst (exp16: 1.01); tests/kernels/test_vec_math.cpp holds it to 1 ulp of the
// rounded reference over [-104, 64]. The softmax loops call it on x - max (never
// positive) and the short rows' blocks on logits within [-64, 64] (their zero
// shift). t below -104 is clamped there (e^-104 is 6.8e-46: the result is 0, as
// exp16's); there is no upper clamp; NaN runs through (vmaxps returns its second
// operand, then every step keeps it).
inline __m512 exp16_table(__m512 t) {
  const __m512 table = _mm512_setr_ps(1.0f, 1.0442737340927124f, 1.0905077457427979f, 1.1387885808944702f,
                                      1.1892070770263672f, 1.2418577671051025f, 1.2968395948410034f,
                                      1.3542555570602417f, 1.4142135381698608f, 1.4768261909484863f,
                                      1.5422108173370361f, 1.610490322113037f, 1.6817928552627563f,
                                      1.7562521696090698f, 1.8340080976486206f, 1.9152065515518188f);
  const __m512 magic = _mm512_set1_ps(12582912.0f);  // 1.5 * 2^23
  const __m512 tc = _mm512_max_ps(_mm512_set1_ps(-104.0f), t);
  const __m512 v = _mm512_fmadd_ps(tc, _mm512_set1_ps(23.083120346069336f), magic);  // 16 / ln 2
  const __m512 n = _mm512_sub_ps(v, magic);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.0433197021484375f), tc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.9966364561696537e-06f), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.16666666f), r, _mm512_set1_ps(0.5f));
  p = _mm512_mul_ps(_mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f)), r);  // e^r - 1
  const __m512 tj = _mm512_permutexvar_ps(_mm512_castps_si512(v), table);
  return _mm512_scalef_ps(_mm512_fmadd_ps(tj, p, tj), _mm512_mul_ps(n, _mm512_set1_ps(0.0625f)));
}

}  // namespace
}  // namespace ember::cpu
