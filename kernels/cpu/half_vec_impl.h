// The conversions written once, included by each half_vec_<isa>.cpp inside its
// instruction-set region: float16 one element at a time through half.h (the tail of
// the vector loops, and all of it on a CPU without F16C), and bfloat16 with shifts the
// compiler vectorizes. Everything sits in an anonymous namespace (see isa.h).
#pragma once

namespace ember::cpu::half_vec_detail {
namespace {

void load_half_scalar(const Half* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i].bits);
}
void store_half_scalar(const float* src, Half* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = float_to_half_bits(src[i]);
}
void add_half_scalar(const Half* src, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += half_bits_to_float(src[i].bits);
}

// bfloat16 is the top half of a float32: widening is a shift, and narrowing rounds
// by adding 0x7fff plus the lowest kept bit. Written with selects instead of
// half.h's early return for NaN, so that the loop vectorizes.
void load_bf16(const BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i].bits) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

void add_bf16(const BFloat16* src, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i].bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    acc[i] += f;
  }
}

void store_bf16(const float* src, BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, src + i, 4);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (x >> 16) | 0x40u;
    dst[i].bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

}  // namespace
}  // namespace ember::cpu::half_vec_detail
