// float32 -> bfloat16 rounding on 16 lanes with AVX-512, bit for bit as half.h's
// BFloat16(float): to nearest, ties to even, a NaN kept with its quiet bit set,
// subnormals kept (vcvtneps2bf16 would flush them to zero). Shared by the bfloat16
// GEMM's store, the AVX-512 half conversions and the AVX-512 half softmax. Include
// it after EMBER_ISA_BEGIN of an avx512 level or above, after <immintrin.h>; it has
// internal linkage, a copy per kernel file.
#pragma once

namespace ember::cpu {
namespace {

// Each lane's bfloat16 in its high 16 bits (the low 16 bits are not meaningful):
// 0x7fff plus the lowest kept bit added, or for a NaN the quiet bit set.
inline __m512i bf16_in_high_halves(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(rounded, nan, x, _mm512_set1_epi32(0x00400000));
}

// The 16 bfloat16 values, packed.
inline __m256i bf16_round16(__m512 v) {
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_in_high_halves(v), 16));
}

}  // namespace
}  // namespace ember::cpu
