// The transposing block copy of transpose.h with AVX-512: each 16 x 16 block is 16
// row loads, the four shuffle rounds of transpose16_avx512.h, and 16 row stores.
#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/isa.h"
#include "kernels/cpu/transpose.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::transpose_detail {
namespace {

// One 16 x 16 block: 16 row loads, four rounds of two-source shuffles (as in
// transpose16_avx512.h, whose masked stores are for the GEMM's partial panels), and
// 16 row stores, plain or streaming.
template <bool kStream>
inline void block16(const float* s, int64_t in_ld, float* d, int64_t out_ld) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * in_ld);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    r[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
  const auto store = [&](int row, __m512 v) {
    if constexpr (kStream) _mm512_stream_ps(d + row * out_ld, v);
    else _mm512_storeu_ps(d + row * out_ld, v);
  };
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
    store(0 + c, _mm512_shuffle_f32x4(v0, v2, 0x88));
    store(4 + c, _mm512_shuffle_f32x4(v0, v2, 0xDD));
    store(8 + c, _mm512_shuffle_f32x4(v1, v3, 0x88));
    store(12 + c, _mm512_shuffle_f32x4(v1, v3, 0xDD));
  }
}

// Sixteen output rows at a time, across all `cols` (the caller's band, 256 wide):
// the loads advance one line at a time along `cols` input rows, and the stores
// write `cols` values of each of the 16 output rows. The other order, down each
// band of 16 input rows, ran 3x slower when the rows are a power of two floats
// apart (all 16 lines of a block, and the next 16, fall in one L1 set) and 1.5x
// slower otherwise; bands of 32 and 64 columns were slower too (docs/kernels-cpu.md).
void transpose32_avx512(const void* in, int64_t in_ld, void* out, int64_t out_ld, int64_t rows, int64_t cols,
                        bool stream) {
  const float* src = static_cast<const float*>(in);
  float* dst = static_cast<float*>(out);
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const float* s = src + j0 * in_ld + i0;
      float* d = dst + i0 * out_ld + j0;
      if (stream) block16<true>(s, in_ld, d, out_ld);
      else block16<false>(s, in_ld, d, out_ld);
    }
  if (stream) _mm_sfence();  // the streamed stores are visible before the caller goes on
}

constexpr TransposeKernels kSet = {"avx512", transpose32_avx512};

}  // namespace
}  // namespace ember::cpu::transpose_detail
EMBER_ISA_END

namespace ember::cpu::transpose_detail {
const TransposeKernels* transpose_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::transpose_detail

#else

namespace ember::cpu::transpose_detail {
const TransposeKernels* transpose_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::transpose_detail

#endif
