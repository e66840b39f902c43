// Half-precision storage types: IEEE float16 and bfloat16.
// Both are 16-bit containers; arithmetic always happens in float32 (the conversion
// operators make `float(h)` and `Half(f)` the only two things a kernel needs).
// Conversions round to nearest, ties to even, and keep NaN, Inf and subnormals right.
#pragma once

#include "kernels/base/export.h"

#include <bit>
#include <cstdint>

EMBER_API_BEGIN

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

namespace ember {

// Bits of a float and back: std::bit_cast on the host, the CUDA intrinsics in device
// code (std::bit_cast is a host-only constexpr function to nvcc).
EMBER_HD inline uint32_t float_as_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}
EMBER_HD inline float bits_as_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// float32 -> float16 bits. Normal numbers re-bias the exponent and round the 13
// dropped mantissa bits; a carry out of the mantissa correctly bumps the exponent
// (up to Inf). Numbers below 2^-14 become subnormals by shifting the implicit bit in.
EMBER_HD inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_as_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u)  // NaN: stay quiet, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536 or Inf
  if (a < 0x33000000u) return sign;                                     // < 2^-25: rounds to 0
  if (a < 0x38800000u) {                                                // half subnormal
    const uint32_t e = a >> 23;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (a - 0x38000000u) >> 13;  // exponent re-biased from 127 to 15
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

EMBER_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) return bits_as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float32
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

// bfloat16 is the top half of a float32; rounding adds 0x7fff plus the lowest kept
// bit so that ties go to even. NaN is handled first so the add cannot make it Inf.
EMBER_HD inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_as_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

EMBER_HD inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_as_float(static_cast<uint32_t>(b) << 16);
}

struct Half {
  uint16_t bits = 0;
  Half() = default;
  EMBER_HD Half(float f) : bits(float_to_half_bits(f)) {}
  EMBER_HD operator float() const { return half_bits_to_float(bits); }
  EMBER_HD static Half from_bits(uint16_t b) { Half h; h.bits = b; return h; }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  EMBER_HD BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  EMBER_HD operator float() const { return bfloat16_bits_to_float(bits); }
  EMBER_HD static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
};

}  // namespace ember

EMBER_API_END
