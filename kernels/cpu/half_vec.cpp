// Vectorized half <-> float conversions (see half_vec.h). The float16 functions are
// compiled three times (AVX-512, AVX+F16C, portable) and a function pointer picks
// one on first use, so the library still runs on a CPU without F16C.
#include "kernels/cpu/half_vec.h"

#include <immintrin.h>

#include <cstring>

namespace ember::cpu {
namespace {

using LoadHalf = void (*)(const Half*, float*, int64_t);
using StoreHalf = void (*)(const float*, Half*, int64_t);

void load_half_portable(const Half* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i].bits);
}
void store_half_portable(const float* src, Half* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = float_to_half_bits(src[i]);
}

__attribute__((target("avx,f16c"))) void load_half_f16c(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  load_half_portable(src + i, dst + i, n - i);
}
__attribute__((target("avx,f16c"))) void store_half_f16c(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  store_half_portable(src + i, dst + i, n - i);
}

// GCC 12 warns, wrongly, that the intrinsics' internal pass-through operand is
// uninitialized (a known false positive of the masked builtins).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void load_half_avx512(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  load_half_portable(src + i, dst + i, n - i);
}
__attribute__((target("avx512f"))) void store_half_avx512(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  store_half_portable(src + i, dst + i, n - i);
}
#pragma GCC diagnostic pop

struct HalfPath {
  LoadHalf load;
  StoreHalf store;
  const char* name;
};

const HalfPath& half_path() {
  static const HalfPath path = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return HalfPath{load_half_avx512, store_half_avx512, "avx512"};
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c"))
      return HalfPath{load_half_f16c, store_half_f16c, "f16c"};
    return HalfPath{load_half_portable, store_half_portable, "portable"};
  }();
  return path;
}

}  // namespace

void load_to_float(const Half* src, float* dst, int64_t n) { half_path().load(src, dst, n); }
void store_from_float(const float* src, Half* dst, int64_t n) { half_path().store(src, dst, n); }
const char* half_conversion_path() { return half_path().name; }

// bfloat16 is the top half of a float32: widening is a shift, and narrowing rounds
// by adding 0x7fff plus the lowest kept bit. Written with selects instead of
// half.h's early return for NaN, so that the loop vectorizes.
__attribute__((target_clones("avx512f", "avx2", "default")))
void load_to_float(const BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(src[i].bits) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void store_from_float(const float* src, BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, src + i, 4);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (x >> 16) | 0x40u;
    dst[i].bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

}  // namespace ember::cpu
