// float32 erf and gelu (the exact form, 0.5 x (1 + erf(x / sqrt 2))) written, like
// vec_math.h, so that loops calling them vectorize. Below z = 0.5 erf(z) is an odd
// polynomial; above, erfc(z) = e^(-z^2) times a slowly varying factor, fitted in
// three pieces (scripts/fit-vmath). gelu uses erfc directly for negative x, so its
// left tail (down to the last subnormal result) keeps its relative accuracy instead
// of cancelling in 1 + erf. Bounds (tests/kernels/test_vec_math.cpp):
//   erf   <= 2 ulp over all of float32
//   gelu  see docs/numerics.md ("Vectorized transcendentals")
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/base/vec_math.h"

namespace ember {
namespace vec_detail {

// -s * x^2 as hi + lo with hi exact: x is split into 12 + 12 significant bits, so
// xh * xh, xh * xl and xl * xl are exact and only lo is rounded (relative 2^-34 of
// the whole). e^(hi + lo) then has the accuracy of e^(-s x^2) for the exact x^2; a
// rounded x^2 near 100 would cost about 100 ulp. s is a power of two.
inline void neg_scaled_square(float x, float s, float& hi, float& lo) {
  const float xh = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xfffff000u);
  const float xl = x - xh;
  hi = -s * (xh * xh);
  lo = -s * ((2.0f * xh) * xl + xl * xl);
}

// erfc(z) / e^(-z^2) for z >= 0.5 (any z gives a finite result, used or not) is
// g(z) on [0.5, 1] and t h(t) with t = 1/z on [1, 2] and [2, 10.5]; this returns g or
// h (the caller multiplies by t where z >= 1, or knows x t). Each is a polynomial in
// the distance v from the middle of its piece (so its terms shrink and do not cancel).
// The pieces have one degree, so a vector picks each coefficient with a select
// instead of branching.
template <bool kFma>
inline float erfc_poly(float z, float t) {
  const bool a = z < 1.0f, b = z < 2.0f;
  const float v = (a ? z : t) - (b ? 0.75f : 0.2976190447807312f);  // exact on the first two
  auto c = [&](float ga, float hb, float hc) { return a ? ga : (b ? hb : hc); };
  float p = c(-0.007842378690838814f, -0.001789846457540989f, -0.18187737464904785f);
  p = madd<kFma>(p, v, c(0.01561987679451704f, -0.016290411353111267f, 0.32523873448371887f));
  p = madd<kFma>(p, v, c(-0.0317070335149765f, 0.037794630974531174f, -0.16573697328567505f));
  p = madd<kFma>(p, v, c(0.06666693091392517f, -0.05055755004286766f, -0.07911822944879532f));
  p = madd<kFma>(p, v, c(-0.12984207272529602f, 0.04029156267642975f, 0.20886534452438354f));
  p = madd<kFma>(p, v, c(0.23096175491809845f, 0.019349563866853714f, -0.13707612454891205f));
  p = madd<kFma>(p, v, c(-0.36797264218330383f, -0.1690809726715088f, -0.13395190238952637f));
  p = madd<kFma>(p, v, c(0.5069376230239868f, 0.4681795835494995f, 0.541952908039093f));
  return p;
}

// erf(z) / z - 1 as a polynomial in t = z^2, for z < 0.5.
template <bool kFma>
inline float erf_small(float t) {
  float p = 0.004720761906355619f;
  p = madd<kFma>(p, t, -0.026758812367916107f);
  p = madd<kFma>(p, t, 0.11282855272293091f);
  p = madd<kFma>(p, t, -0.37612611055374146f);
  return madd<kFma>(p, t, 0.12837916612625122f);
}

}  // namespace vec_detail

template <bool kFma = false>
inline float erf_fast(float x) {
  using namespace vec_detail;
  const float z = abs_bits(x);
  const float small = madd<kFma>(z, erf_small<kFma>(z * z), z);
  // Past 10.5 erf is 1 and e^(-z^2) is 0; clamping keeps inf out of the split.
  const float zc = z < 10.5f ? z : 10.5f;
  float hi, lo;
  neg_scaled_square(zc, 1.0f, hi, lo);
  const float t = 1.0f / zc;
  const float p = erfc_poly<kFma>(zc, t);
  const float large = 1.0f - (zc < 1.0f ? p : p * t) * exp_parts<kFma>(hi, lo);
  const float y = with_sign_of(z < 0.5f ? small : large, x);
  return x != x ? x : y;
}

// 0.5 x (1 + erf(z)) with z = x / sqrt 2. For x < 0, 1 + erf(-|z|) is erfc(|z|):
// 1 - erf(|z|) while erf(|z|) < 1/2 (no cancellation), the erfc form above, whose
// exponent -x^2/2 is taken from x exactly; past z = 1, 0.5 x erfc(z) is
// -h(t) e / sqrt 2 since 0.5 x t = -1 / sqrt 2 exactly, which spares rounding t twice.
// The exponential is multiplied in last, so a subnormal result is rounded once.
template <bool kFma = false>
inline float gelu_fast(float x) {
  using namespace vec_detail;
  const float a = abs_bits(x);
  const float z = a * 0.70710678118654752f;
  const float es = madd<kFma>(z, erf_small<kFma>(z * z), z);  // erf(z), z < 0.5
  const float ac = a < 14.85f ? a : 14.85f;  // 10.5 sqrt 2: gelu(-14.85) is below every subnormal
  float hi, lo;
  neg_scaled_square(ac, 0.5f, hi, lo);
  const float e = exp_parts<kFma>(hi, lo);
  const float zc = ac * 0.70710678118654752f;
  const float t = 1.0f / zc;
  const float p = erfc_poly<kFma>(zc, t);
  const float half_x = 0.5f * x;
  const float pos = half_x * (z < 0.5f ? 1.0f + es : 2.0f - (zc < 1.0f ? p : p * t) * e);
  const float neg = z < 0.5f ? half_x * (1.0f - es) : (zc < 1.0f ? half_x * p : -0.70710678118654752f * p) * e;
  const float y = x >= 0.0f ? pos : neg;
  // NaN stays NaN, and gelu(-inf) is -inf * 0 in the defining formula: NaN too.
  return x > -__builtin_inff() ? y : x * 0.0f;
}

}  // namespace ember
