// half <-> float conversions for AVX2 CPUs: float16 eight at a time with F16C's
// vcvtph2ps / vcvtps2ph (round to nearest even), bfloat16 in 32-byte vectors.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/half_vec_kernels.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/half_vec_impl.h"
namespace ember::cpu::half_vec_detail {
namespace {

void load_half(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  load_half_scalar(src + i, dst + i, n - i);
}

// vcvtps2ph into a register, then the store: the memory form GCC would fold it into
// runs at about 60% of the speed on this Zen 5 (see to_f16 in half16_avx512.h; 8
// values from L1: 0.56 against 0.33 ns).
void store_half(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    asm("" : "+x"(h));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  store_half_scalar(src + i, dst + i, n - i);
}

void add_half(const Half* src, float* acc, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i),
                                            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)))));
  add_half_scalar(src + i, acc + i, n - i);
}

constexpr HalfVecKernels kSet{"avx2", load_half, store_half, load_bf16, store_bf16, add_half, add_bf16, nullptr, nullptr};

}  // namespace
}  // namespace ember::cpu::half_vec_detail
EMBER_ISA_END

namespace ember::cpu::half_vec_detail {
const HalfVecKernels* half_vec_kernels_avx2() { return &kSet; }
}  // namespace ember::cpu::half_vec_detail

#else

namespace ember::cpu::half_vec_detail {
const HalfVecKernels* half_vec_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::half_vec_detail

#endif
