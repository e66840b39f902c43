// The transposing block copy of transpose.h with AVX-512: each 16 x 16 block is 16
// row loads, the register transpose of transpose16_avx512.h, and 16 row stores.
#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/isa.h"
#include "kernels/cpu/transpose.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/transpose16_avx512.h"
namespace ember::cpu::transpose_detail {
namespace {

// One 16 x 16 block: 16 row loads, the register transpose of transpose16_avx512.h,
// and 16 row stores, plain or streaming (that header's own helper masks its stores,
// for the GEMM's partial panels).
template <bool kStream>
inline void block16(const float* s, int64_t in_ld, float* d, int64_t out_ld) {
  __m512 r[16], c[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * in_ld);
  transpose16x16_in_registers(r, c);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    if constexpr (kStream) _mm512_stream_ps(d + j * out_ld, c[j]);
    else _mm512_storeu_ps(d + j * out_ld, c[j]);
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
  // Each block reads one line from each of 16 input rows, and a band walks 256 rows
  // side by side: more streams than the hardware prefetcher follows. So each block
  // asks for the lines its 16 rows hold two lines further on, which the block two
  // steps of i0 later reads (4096 x 4096 on 2 threads, alternating: 49-57 -> 60-62
  // GB/s; one or three lines ahead about the same, 8 or 16 less).
  constexpr int64_t kAhead = 2;
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const float* s = src + j0 * in_ld + i0;
      if (i0 + 16 * kAhead < rows)
        for (int i = 0; i < 16; ++i) __builtin_prefetch(s + i * in_ld + 16 * kAhead);
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
