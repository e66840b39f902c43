// 16 float16 or bfloat16 values widened to float32 lanes and narrowed back with
// AVX-512, for loops that compute half data in registers instead of float blocks
// (the half arithmetic of half_vec_avx512.cpp). float16 uses vcvtph2ps / vcvtps2ph
// (round to nearest even); bfloat16 is a shift in and bf16_round16 out. Bit for bit
// the conversions of half.h. widen16/narrow16 take whole vectors; the codecs below
// take a mask for a run's tail and work on 16-bit patterns (the half softmax, the
// half transcendentals of vmath_avx512.cpp). Include it after EMBER_ISA_BEGIN of an
// avx512 level, after <immintrin.h> and bf16_round_avx512.h; internal linkage, a
// copy per kernel file.
#pragma once

#include <cstdint>

#include "kernels/base/half.h"

namespace ember::cpu {
namespace {

// 16 float32 lanes rounded to float16 in a register. Given the intrinsic's result
// to store, GCC folds the store into vcvtps2ph's memory form, which on this Zen 5
// runs at two thirds of the register form plus a store (16 values from L1: 0.58
// against 0.38 ns, masked stores alike); the empty asm keeps the value in a register.
inline __m256i to_f16(__m512 v) {
  __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
  asm("" : "+v"(h));
  return h;
}

inline __m512 widen16(const Half* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 widen16(const BFloat16* p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline void narrow16(__m512 v, Half* p) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), to_f16(v));
}
inline void narrow16(__m512 v, BFloat16* p) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_round16(v)); }

// The lanes of `k` widened (the others read as +0, nothing loaded there), and 16
// lanes narrowed to their packed 16-bit patterns.
struct F16Codec {
  static __m512 widen(const uint16_t* p, __mmask16 k) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)); }
  static __m256i narrow(__m512 v) { return to_f16(v); }
};
struct BF16Codec {
  static __m512 widen(const uint16_t* p, __mmask16 k) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p)), 16));
  }
  static __m256i narrow(__m512 v) { return bf16_round16(v); }
};

}  // namespace
}  // namespace ember::cpu
