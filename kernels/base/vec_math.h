// float32 exp, sigmoid and tanh written so that a loop calling them vectorizes: no
// branches (every range is computed and the right one selected), no libm call.
// Each takes kFma: the per-ISA kernels (kernels/cpu/vmath_impl.h) instantiate it with
// true for fused multiply-adds, the generic code with false; both stay within the
// bounds below (tests/kernels/test_vec_math.cpp checks every instruction-set path
// against double). In kernels/base because the shared elementwise functors use
// them for float on the CPU. Coefficients: scripts/fit-vmath.
//   exp      <= 1 ulp over all of float32, subnormal results included (rounded once)
//   sigmoid  <= 2 ulp; tanh <= 2 ulp
#pragma once

#include <bit>
#include <cstdint>

namespace ember {
namespace vec_detail {

template <bool kFma>
inline float madd(float a, float b, float c) {
  if constexpr (kFma) return __builtin_fmaf(a, b, c);
  else return a * b + c;
}

inline float abs_bits(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu); }

// y (>= 0, or NaN) with the sign bit of x.
inline float with_sign_of(float y, float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y) | (std::bit_cast<uint32_t>(x) & 0x80000000u));
}

// e^(hi + lo), lo a small correction to hi (the low half of an exactly split
// argument, or 0). Cody-Waite: n = round(hi / ln2), r = hi - n*ln2 with ln2 in two
// parts (n * kLn2Hi is exact, so is the first subtraction), e^r = 1 + r + r^2 q(r)
// on |r| <= ln2/2, then 2^n built in the exponent bits as two factors: n runs from
// -150 to 128 and one exponent field cannot hold both ends. The first factor leaves
// a normal number, so a subnormal result is rounded once, by the second.
template <bool kFma>
inline float exp_parts(float hi, float lo) {
  constexpr float kMax = 89.0f;    // e^89 > FLT_MAX: the scaling overflows to inf
  constexpr float kMin = -104.0f;  // e^-104 < 2^-150: the scaling rounds to 0
  // NaN fails the first comparison and takes kMax's path (converting NaN to an
  // integer would be undefined); its result is replaced at the end.
  const float xc = hi < kMax ? (hi > kMin ? hi : kMin) : kMax;
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round: 1.5 * 2^23 trick
  constexpr float kLn2Hi = 0.693359375f;           // 9 significant bits
  constexpr float kLn2Lo = -2.12194440054905e-4f;  // ln2 - kLn2Hi
  const float r = madd<kFma>(n, -kLn2Lo, madd<kFma>(n, -kLn2Hi, xc)) + lo;
  float q = 0.001374532817862928f;
  q = madd<kFma>(q, r, 0.008368946611881256f);
  q = madd<kFma>(q, r, 0.04166964814066887f);
  q = madd<kFma>(q, r, 0.166665181517601f);
  q = madd<kFma>(q, r, 0.49999988079071045f);
  const float er = madd<kFma>(r * r, q, r) + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1;
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(half + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(ni - half + 127) << 23);
  const float y = er * s1 * s2;
  return hi != hi ? hi : y;  // NaN stays NaN
}

}  // namespace vec_detail

template <bool kFma = false>
inline float exp_fast(float x) {
  return vec_detail::exp_parts<kFma>(x, 0.0f);
}

// 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below: e = e^-|x| <= 1 never
// overflows, and the negative side keeps its tiny (down to subnormal) results.
template <bool kFma = false>
inline float sigmoid_fast(float x) {
  const float e = exp_fast<kFma>(-vec_detail::abs_bits(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

// tanh(|x|) = (1 - e) / (1 + e) with e = e^-2|x|, except below 0.625 where 1 - e
// would cancel: there tanh(x) = x + x^3 p(x^2). The sign is put back last.
template <bool kFma = false>
inline float tanh_fast(float x) {
  using vec_detail::madd;
  const float a = vec_detail::abs_bits(x);
  const float t = a * a;
  float p = -0.0056977225467562675f;
  p = madd<kFma>(p, t, 0.020632116124033928f);
  p = madd<kFma>(p, t, -0.05373740196228027f);
  p = madd<kFma>(p, t, 0.1333141177892685f);
  p = madd<kFma>(p, t, -0.3333328068256378f);
  const float small = madd<kFma>(a * t, p, a);
  const float e = exp_fast<kFma>(-2.0f * a);
  const float large = (1.0f - e) / (1.0f + e);
  return vec_detail::with_sign_of(a < 0.625f ? small : large, x);
}

}  // namespace ember
