// erf and gelu on 16 float32 lanes with AVX-512, for the AVX-512 vmath table.
// Include it after EMBER_ISA_BEGIN of an avx512 level, after <immintrin.h> and
// exp_avx512.h; internal linkage, like exp_avx512.h.
//
// The portable erf_fast/gelu_fast (vec_erf.h) blend three erfc pieces and divide:
// about 150 instructions per 16 values, so the loops ran at a third of memory speed.
// Here the argument's interval picks its polynomial's coefficients out of 32-entry
// tables (erf_tables.h, fitted by scripts/fit-vmath) with vpermt2ps, one instruction
// per coefficient and no blend of pieces: about 30 instructions for erf, 45 for gelu
// (20 for a vector whose lanes are all below 4: the last case below).
//
//   erf(a), a = |x| >= 0.5: interval k = floor(8a) - 4, u = 8a - (k + 4.5), a
//     degree-4 polynomial. Below 0.5 the odd polynomial of vec_erf.h (erf_small).
//   gelu(x) = x Phi(x): Phi(-a) = e^(-a^2/2) R(a) with R smooth (interval
//     k = floor(2a), u = 2a - (k + 0.5), degree 6), a^2/2 split exactly into two
//     floats (with an fma) so the exponential has no error from rounding it.
//     x < 0: x Phi(-a), the 2^n of the exponential applied last (vscalefps), so a
//     subnormal result is rounded once; x >= 0: x (1 - Phi(-a)), no cancellation
//     because Phi(-a) <= 1/2.
//   gelu of lanes with a < 4 (activations almost always): Phi(-a) itself, interval
//     k = floor(8a), u = 8a - (k + 0.5), degree 5: no exponential. A vector whose
//     lanes are all below 4 needs nothing else (about 20 instructions); one mixing
//     both sides computes both and blends, so each lane's formula is its own.
// Bounds are those of the portable functions, asserted by tests/kernels/
// test_vec_math.cpp on this table; docs/numerics.md has the measured ones.
#pragma once

#include "kernels/base/vec_erf.h"
#include "kernels/cpu/erf_tables.h"

namespace ember::cpu {
namespace {

// Coefficient j of each lane's interval: the 32-entry row is two registers.
inline __m512 lookup32(const float* row, __m512i k) {
  return _mm512_permutex2var_ps(_mm512_load_ps(row), k, _mm512_load_ps(row + 16));
}

// p_k(u) for a table of D + 1 rows, Horner from the highest coefficient.
template <int D>
inline __m512 table_poly(const float (&t)[D + 1][32], __m512i k, __m512 u) {
  __m512 p = lookup32(t[D], k);
  for (int j = D - 1; j >= 0; --j) p = _mm512_fmadd_ps(p, u, lookup32(t[j], k));
  return p;
}

// The interval index floor(s) - base and the offset u = s - floor(s) - 0.5 of a
// scaled argument s (exact: s and floor(s) are close enough that s - floor(s) is
// representable). Indices outside [0, 32) only come from lanes whose result is not
// used; vpermt2ps reads the low 5 bits of each.
inline void interval(__m512 s, int base, __m512i& k, __m512& u) {
  const __m512 f = _mm512_roundscale_ps(s, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  k = _mm512_sub_epi32(_mm512_cvttps_epi32(f), _mm512_set1_epi32(base));
  u = _mm512_sub_ps(_mm512_sub_ps(s, f), _mm512_set1_ps(0.5f));
}

inline __m512 sign_of(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u))));
}

// erf_fast (vec_erf.h) on 16 lanes. A NaN takes the small branch (its comparison
// with 0.5 is unordered) and stays NaN; past a = 4.49 the last interval's
// polynomial is 1 to within its rounding, and erf is 1 there.
inline __m512 erf16(__m512 x) {
  const __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(int(0x80000000u)), _mm512_castps_si512(x)));
  const __m512 t = _mm512_mul_ps(a, a);
  __m512 q = _mm512_set1_ps(0.004720761906355619f);  // erf_small's coefficients
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.026758812367916107f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.11282855272293091f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.37612611055374146f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.12837916612625122f));
  const __m512 small = _mm512_fmadd_ps(a, q, a);
  __m512i k;
  __m512 u;
  interval(_mm512_mul_ps(_mm512_min_ps(a, _mm512_set1_ps(4.49f)), _mm512_set1_ps(8.0f)), 4, k, u);
  const __m512 large = table_poly<4>(kErfTable, k, u);
  const __m512 y = _mm512_mask_mov_ps(large, _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.5f), _CMP_NGE_UQ), small);
  return _mm512_or_ps(y, sign_of(x));
}

// gelu_fast (vec_erf.h) on 16 lanes. a is clamped below 16 for the table and the
// exponential (gelu(-16) is far below every subnormal); x itself multiplies on the
// positive side, so +inf gives inf and NaN gives NaN. gelu(-inf) is NaN, as the defining formula
// (-inf * 0) and the portable function give.
inline __m512 gelu16(__m512 x) {
  const __m512 ac = _mm512_min_ps(
      _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(int(0x80000000u)), _mm512_castps_si512(x))),
      _mm512_set1_ps(15.99f));
  __m512i k;
  __m512 u;
  interval(_mm512_add_ps(ac, ac), 0, k, u);
  const __m512 r = table_poly<6>(kGeluTable, k, u);
  // -ac^2/2 = hi + lo exactly: with fused multiply-add, ac^2 - round(ac^2) is
  // representable and fma computes it exactly (where the portable neg_scaled_square
  // splits ac into 12 + 12 bits); halving is exact.
  const __m512 sq = _mm512_mul_ps(ac, ac);
  const __m512 hi = _mm512_mul_ps(_mm512_set1_ps(-0.5f), sq);
  const __m512 lo = _mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_fmsub_ps(ac, ac, sq));
  // e^(hi + lo) = er 2^n, exp16's steps with lo added to the reduced argument;
  // hi >= -128, so no clamp is needed and 2^n stays apart until the end.
  const __m512 n = exp16_n(hi);
  const __m512 er = exp16_poly(_mm512_add_ps(exp16_reduced(hi, n), lo));
  const __m512 er_r = _mm512_mul_ps(er, r);
  // One scaling by 2^n for both signs: x < 0 scales x Phi(-a) itself (x as -ac: past
  // the clamp the result must underflow to -0), x >= 0 scales Phi(-a) and then
  // takes x (1 - Phi(-a)).
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 scaled = _mm512_scalef_ps(
      _mm512_mask_mul_ps(er_r, negative, er_r, _mm512_or_ps(ac, sign_of(x))), n);
  const __m512 y =
      _mm512_mask_mov_ps(_mm512_mul_ps(x, _mm512_sub_ps(_mm512_set1_ps(1.0f), scaled)), negative, scaled);
  const __mmask16 minus_inf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
  return _mm512_mask_mov_ps(y, minus_inf, _mm512_set1_ps(__builtin_nanf("")));
}

// gelu16 for lanes that all have a = |x| < 4 (the caller checks; a is passed in):
// Phi(-a) by one degree-5 polynomial per interval of width 1/8 (kGeluNearTable), no
// exponential, about 20 instructions against gelu16's 45. The interval comes from
// s = 8a - 0.5 rounded to an integer by adding 1.5 * 2^23, whose low bits are then
// the index (a < 4 keeps it below 32) and u = s - round(s) is exact. x < 0 (its sign
// bit: -0 stays -0): x Phi(-a), one rounding; else x - x Phi(-a), fused, one rounding.
inline __m512 gelu16_near(__m512 x, __m512 a) {
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 s = _mm512_fmadd_ps(a, _mm512_set1_ps(8.0f), _mm512_set1_ps(-0.5f));
  const __m512 t = _mm512_add_ps(s, magic);
  const __m512 u = _mm512_sub_ps(s, _mm512_sub_ps(t, magic));
  const __m512 p = table_poly<5>(kGeluNearTable, _mm512_castps_si512(t), u);
  const __mmask16 negative = _mm512_cmplt_epi32_mask(_mm512_castps_si512(x), _mm512_setzero_si512());
  return _mm512_mask_mul_ps(_mm512_fnmadd_ps(x, p, x), negative, x, p);
}

// gelu on 16 lanes, each lane by the formula its own value picks: gelu16_near for
// |x| < 4, gelu16 for the rest (NaN and infinities included). A value's bits must
// not depend on its neighbours (the two formulas can differ in the last bit, and
// which values share a vector moves with the layout and the thread count), so a
// mixed vector computes both and blends. Activations rarely reach 4: almost every
// vector takes the first branch.
inline __m512 gelu16_any(__m512 x) {
  const __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32(int(0x80000000u)), _mm512_castps_si512(x)));
  const __mmask16 near = _mm512_cmp_ps_mask(a, _mm512_set1_ps(4.0f), _CMP_LT_OQ);
  if (near == 0xffff) [[likely]]
    return gelu16_near(x, a);
  if (near == 0) return gelu16(x);
  // Lanes at or past 4 read a wrapped interval in gelu16_near; the blend drops them.
  return _mm512_mask_mov_ps(gelu16(x), near, gelu16_near(x, a));
}

}  // namespace
}  // namespace ember::cpu
