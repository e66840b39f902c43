// exp for float32 written so the compiler can vectorize loops that call it: no
// branches (out-of-range inputs are handled by selects) and no libm call. It is
// Cephes' expf: x = n*ln2 + r with n = round(x/ln2), ln2 split in two constants
// (Cody-Waite) so r is exact, a degree-6 polynomial for e^r on |r| <= ln2/2, and
// 2^n built in the exponent bits. Error: within 2 ulp of the true value (tested
// against double in tests/kernels/test_vec_math.cpp). In kernels/base because the
// elementwise functors, shared by CPU and CUDA, use it on the CPU.
#pragma once

#include <bit>
#include <cstdint>

namespace ember {

inline float exp_fast(float x) {
  constexpr float kHi = 88.72283935546875f;   // above: +inf
  constexpr float kLo = -87.33654022216797f;  // below: 0 (results there would be subnormal)
  // Written so that NaN fails the first comparison and takes kHi's path (its result is
  // replaced at the end): converting NaN to an integer below would be undefined
  // behaviour. Same two selects as a plain clamp, so no cost.
  const float xc = x < kHi ? (x > kLo ? x : kLo) : kHi;
  // Round to nearest with the 1.5*2^23 trick (exact for |v| < 2^22).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // 2^n as two factors: n reaches 128 near the top of the range and -126 near the
  // bottom, and one float exponent field cannot hold both ends.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1;
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(half + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(ni - half + 127) << 23);
  float y = er * s1 * s2;
  y = x > kHi ? __builtin_inff() : y;
  y = x < kLo ? 0.0f : y;
  return x != x ? x : y;  // NaN stays NaN
}

}  // namespace ember
