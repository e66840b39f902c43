// A 16x16 transpose of 32-bit elements in AVX-512 registers, shared by the GEMM
// kernels' packing (float32 values in gemm_kernel_avx512.cpp, bfloat16 pairs in
// gemm_kernel_bf16.cpp), the transposing copy (transpose_avx512.cpp) and the
// convolution's lane tiles (conv2d_lanes_impl.h, through conv2d_direct_avx512.cpp).
// Include it after EMBER_ISA_BEGIN of an avx512 level or above, after <immintrin.h>;
// it has internal linkage, a copy per kernel file.
#pragma once

namespace ember::cpu {
namespace {

// r[i] holds row i of a 16x16 block of 32-bit elements; afterwards c[j] holds
// column j. Four rounds of two-source shuffles: 32-bit interleave, 64-bit
// interleave (each 128-bit lane then holds four rows of one column), and two rounds
// that transpose the 4x4 grid of 128-bit lanes.
__attribute__((always_inline)) inline void transpose16x16_in_registers(__m512 r[16], __m512 c[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[g][c] -> r[4g + c]: rows 4g..4g+3 of column 4L+c in lane L.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    r[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512 v0 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xEE);
    c[0 + k] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    c[4 + k] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    c[8 + k] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    c[12 + k] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

// `rows` (<= 16) rows of 16 elements, row i at src + i * ld_bytes, become 16 rows of
// `rows` elements at dst (dst_ld elements apart). Missing rows read as zero and are
// not stored, so panels of fewer rows work.
__attribute__((always_inline)) inline void transpose16x16_32bit(const void* src, int64_t ld_bytes, int rows,
                                                                 void* dst, int64_t dst_ld) {
  const char* s = static_cast<const char*>(src);
  __m512 r[16], c[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_loadu_ps(reinterpret_cast<const float*>(s + i * ld_bytes)) : _mm512_setzero_ps();
  transpose16x16_in_registers(r, c);
  const __mmask16 keep = __mmask16((1u << rows) - 1);
  float* d = static_cast<float*>(dst);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(d + j * dst_ld, keep, c[j]);
}

}  // namespace
}  // namespace ember::cpu
