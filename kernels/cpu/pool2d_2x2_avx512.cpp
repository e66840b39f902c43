// The 2x2 stride-2 pooling loops compiled for AVX-512: pool2d_2x2_impl.h, and for
// float32 max pooling a hand-written version, 16 outputs of a row at a time (the
// compiler's vectorization of the impl's loop leaves a row of 12, the net's first
// pooling, half scalar). Each input row's 32 floats are loaded under a mask (nothing
// past the row is touched) and split into even and odd columns, the four candidates
// run the select chain of max_plane_2x2 as mask blends, and the chosen offsets
// (0, 1, w, w+1) ride along in 32-bit lanes.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/pool2d_2x2.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/pool2d_2x2_impl.h"
namespace ember::cpu::pool2d_detail {
namespace {

// One candidate v of every lane's window: where it replaces the running maximum m,
// take it and its offset.
[[gnu::always_inline]] inline void max_step(__m512& m, __m512i& k, __m512 v, __m512i off) {
  const __mmask16 c =
      _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  m = _mm512_mask_blend_ps(c, m, v);
  k = _mm512_mask_blend_epi32(c, k, off);
}

void max_2x2_f32_avx512(const Pool2dShape& s, const float* x, float* y, int64_t* ind, int64_t p0, int64_t p1) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i two_lane = even;  // 2 * lane
  const int64_t in = s.h * s.w, out = s.h_out * s.w_out;
  const __m512i off_r = _mm512_set1_epi32(1), off_b = _mm512_set1_epi32(int32_t(s.w)),
                off_br = _mm512_set1_epi32(int32_t(s.w + 1));
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t oy = 0; oy < s.h_out; ++oy) {
      const float* r0 = x + p * in + 2 * oy * s.w;
      const float* r1 = r0 + s.w;
      float* yr = y + p * out + oy * s.w_out;
      for (int64_t ox = 0; ox < s.w_out; ox += 16) {
        const int n = int(std::min<int64_t>(16, s.w_out - ox));
        const uint32_t in_mask = n == 16 ? 0xFFFFFFFFu : (1u << (2 * n)) - 1;
        const __mmask16 lo = __mmask16(in_mask), hi = __mmask16(in_mask >> 16);
        const __mmask16 keep = __mmask16(n == 16 ? 0xFFFFu : (1u << n) - 1);
        const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ox);
        const __m512 a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ox + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ox);
        const __m512 b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ox + 16);
        __m512 m = _mm512_permutex2var_ps(a0, even, a1);
        __m512i k = _mm512_setzero_si512();
        max_step(m, k, _mm512_permutex2var_ps(a0, odd, a1), off_r);
        max_step(m, k, _mm512_permutex2var_ps(b0, even, b1), off_b);
        max_step(m, k, _mm512_permutex2var_ps(b0, odd, b1), off_br);
        _mm512_mask_storeu_ps(yr + ox, keep, m);
        if (ind) {
          // Index within the plane: 2*oy*w + 2*(ox + lane) + chosen offset.
          const __m512i i32 = _mm512_add_epi32(
              _mm512_add_epi32(k, two_lane), _mm512_set1_epi32(int32_t(2 * oy * s.w + 2 * ox)));
          int64_t* ir = ind + p * out + oy * s.w_out + ox;
          _mm512_mask_storeu_epi64(ir, __mmask8(keep),
                                   _mm512_cvtepi32_epi64(_mm512_castsi512_si256(i32)));
          _mm512_mask_storeu_epi64(ir + 8, __mmask8(keep >> 8),
                                   _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(i32, 1)));
        }
      }
    }
}

// The hand-written kernel indexes within a plane in 32-bit lanes: planes up to 2^31
// elements; larger ones take the impl's loop.
void max_2x2_f32(const Pool2dShape& s, const float* x, float* y, int64_t* ind, int64_t p0, int64_t p1) {
  if (s.h * s.w < (int64_t(1) << 31)) return max_2x2_f32_avx512(s, x, y, ind, p0, p1);
  max_2x2<float>(s, x, y, ind, p0, p1);
}

constexpr Pool2x2Kernels kSet{"avx512", max_2x2_f32, max_2x2<double>, avg_2x2<float>, avg_2x2<double>};

}  // namespace
}  // namespace ember::cpu::pool2d_detail
EMBER_ISA_END

namespace ember::cpu::pool2d_detail {
const Pool2x2Kernels* pool2x2_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::pool2d_detail

#else

namespace ember::cpu::pool2d_detail {
const Pool2x2Kernels* pool2x2_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::pool2d_detail

#endif
