// The float32 extreme scan of extreme.h with AVX-512: four 16-lane accumulators,
// each with a vector of the positions its values came from, and a mask of the lanes
// that met a NaN. One read of the block; the lanes are compared once at the end.
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/extreme.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::extreme_detail {
namespace {

// Every lane starts from x[0] at position 0 and takes a value only when it is
// strictly beyond the lane's (a NaN never is: ordered compares are false for it), so
// each lane holds the first position of its own extreme. The block's extreme is the
// lanes' extreme; among the lanes that hold it, the smallest position is the first.
template <bool kMax>
void scan(const float* x, int64_t n, float* best, int64_t* pos) {
  constexpr int kBeyond = kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 first = _mm512_set1_ps(x[0]);
  __m512 acc[4] = {first, first, first, first};
  __m512i at[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  __mmask16 seen_nan = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i here = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), iota);
    for (int k = 0; k < 4; ++k) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      const __mmask16 win = _mm512_cmp_ps_mask(v, acc[k], kBeyond);
      acc[k] = _mm512_mask_mov_ps(acc[k], win, v);
      at[k] = _mm512_mask_mov_epi32(at[k], win, _mm512_add_epi32(here, _mm512_set1_epi32(16 * k)));
      seen_nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
  }
  for (; i < n; i += 16) {  // the last 1 to 63 values, a masked vector at a time
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 win = _mm512_mask_cmp_ps_mask(m, v, acc[0], kBeyond);
    acc[0] = _mm512_mask_mov_ps(acc[0], win, v);
    at[0] = _mm512_mask_mov_epi32(at[0], win, _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), iota));
    seen_nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
  }
  if (seen_nan) {  // rare: the first NaN, one by one
    int64_t j = 0;
    while (x[j] == x[j]) ++j;
    *best = x[j];
    *pos = j;
    return;
  }
  // No NaN: vmaxps/vminps then give the lanes' extreme exactly.
  const auto pick = [](__m512 a, __m512 b) { return kMax ? _mm512_max_ps(a, b) : _mm512_min_ps(a, b); };
  const float b = kMax ? _mm512_reduce_max_ps(pick(pick(acc[0], acc[1]), pick(acc[2], acc[3])))
                       : _mm512_reduce_min_ps(pick(pick(acc[0], acc[1]), pick(acc[2], acc[3])));
  const __m512 bv = _mm512_set1_ps(b);
  __m512i first_at = _mm512_set1_epi32(0x7fffffff);
  for (int k = 0; k < 4; ++k)
    first_at = _mm512_mask_min_epi32(first_at, _mm512_cmp_ps_mask(acc[k], bv, _CMP_EQ_OQ), first_at, at[k]);
  *pos = _mm512_reduce_min_epi32(first_at);
  *best = x[*pos];  // b may be the other zero: -0 and +0 compare equal
}

void extreme_pos_f32(const float* x, int64_t n, bool max, float* best, int64_t* pos) {
  if (max) scan<true>(x, n, best, pos);
  else scan<false>(x, n, best, pos);
}

constexpr ExtremeKernels kSet = {"avx512", extreme_pos_f32};

}  // namespace
}  // namespace ember::cpu::extreme_detail
EMBER_ISA_END

namespace ember::cpu::extreme_detail {
const ExtremeKernels* extreme_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::extreme_detail

#else

namespace ember::cpu::extreme_detail {
const ExtremeKernels* extreme_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::extreme_detail

#endif
