// The float32 extreme scans of extreme.h with AVX-512: four 16-lane accumulators
// and a NaN mask for the extreme, a compare mask and a count of trailing zeros for
// the first position.
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

// vmaxps(v, acc) is v > acc ? v : acc, so a NaN in v never enters acc (the NaN mask
// records it instead) and ties keep acc: the same selects as the baseline loop.
template <bool kMax>
void extreme(const float* x, int64_t n, float* best, bool* nan) {
  const auto pick = [](__m512 v, __m512 acc) { return kMax ? _mm512_max_ps(v, acc) : _mm512_min_ps(v, acc); };
  const __m512 first = _mm512_set1_ps(x[0]);
  __m512 acc[4] = {first, first, first, first};
  __mmask16 seen_nan = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 4; ++k) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      acc[k] = pick(v, acc[k]);
      seen_nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512 v = _mm512_mask_loadu_ps(first, m, x + i);
    acc[0] = pick(v, acc[0]);
    seen_nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  const __m512 a = pick(pick(acc[0], acc[1]), pick(acc[2], acc[3]));
  *best = kMax ? _mm512_reduce_max_ps(a) : _mm512_reduce_min_ps(a);
  *nan = seen_nan != 0;
}

void extreme_f32(const float* x, int64_t n, bool max, float* best, bool* nan) {
  if (max) extreme<true>(x, n, best, nan);
  else extreme<false>(x, n, best, nan);
}

int64_t first_equal_f32(const float* x, int64_t n, float v) {
  const __m512 vv = _mm512_set1_ps(v);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + i), vv, _CMP_EQ_OQ);
    if (eq) return i + __builtin_ctz(eq);
  }
  return n;
}

constexpr ExtremeKernels kSet = {"avx512", extreme_f32, first_equal_f32};

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
