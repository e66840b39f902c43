// The AVX-512 VNNI int8 panel kernel. One vpdpbusd multiplies 64 unsigned bytes of A
// by 64 signed bytes of B and adds each group of 4 products into one of 16 int32
// lanes, with no intermediate saturation (the AVX2 vpmaddubsw route saturates at
// int16, which is why PyTorch's fbgemm narrows activations to 7 bits: not needed here).
// A micro-tile is R <= 10 rows x 32 channels: 20 zmm accumulators, two for the B
// group, one for the broadcast 4 bytes of A. (12 rows fit the 32 registers too, but
// measured slower on Zen 5: 2.8 against 3.2 ms for 64 x 4096 x 4096 on one core.)
// Compiled for the avx512_vnni level (isa.h); gemm_int8.cpp uses it only when that
// level is active.
#include "kernels/cpu/gemm_int8_kernel.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512_VNNI)

namespace ember::cpu::gemm_int8_detail {
namespace {

constexpr int kMaxRows = 10;

// Applies the epilogue to one row's two accumulators and stores the valid columns.
__attribute__((always_inline)) inline void store_row(const __m512i acc[2], int64_t ncols, const Int8Epilogue* ep,
                                                     int64_t col0, void* crow) {
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) {
    const int64_t valid = ncols - 16 * v;
    if (valid <= 0) break;
    const __mmask16 m = valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
    if (!ep) {
      _mm512_mask_storeu_epi32(static_cast<int32_t*>(crow) + 16 * v, m, acc[v]);
      continue;
    }
    const int64_t col = col0 + 16 * v;
    // (sum a*w) - a_zero * rowsum, wrapping in int32: the true value fits (see gemm_int8.h).
    const __m512i rs = _mm512_maskz_loadu_epi32(m, ep->w_row_sums + col);
    const __m512i corrected = _mm512_sub_epi32(acc[v], _mm512_mullo_epi32(rs, _mm512_set1_epi32(ep->a_zero_point)));
    const __m512 scale = ep->per_channel
                             ? _mm512_mul_ps(_mm512_maskz_loadu_ps(m, ep->w_scales + col), _mm512_set1_ps(ep->a_scale))
                             : _mm512_set1_ps(ep->a_scale * ep->w_scales[0]);
    __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(corrected), scale);
    if (ep->bias) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, ep->bias + col));
    _mm512_mask_storeu_ps(static_cast<float*>(crow) + 16 * v, m, y);
  }
}

template <int R>
void micro(int64_t ncols, int64_t kp, const uint8_t* a, int64_t lda, const int8_t* panel, const Int8Epilogue* ep,
           int64_t col0, void* c, int64_t ldc) {
  __m512i acc[R][2];
#pragma GCC unroll 10
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  const int64_t groups = kp / 4;
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i b0 = _mm512_load_si512(panel + g * 128);
    const __m512i b1 = _mm512_load_si512(panel + g * 128 + 64);
#pragma GCC unroll 10
    for (int r = 0; r < R; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * lda + 4 * g, 4);
      const __m512i va = _mm512_set1_epi32(four);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], va, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], va, b1);
    }
  }
  const size_t elem = ep ? sizeof(float) : sizeof(int32_t);
#pragma GCC unroll 10
  for (int r = 0; r < R; ++r) store_row(acc[r], ncols, ep, col0, static_cast<char*>(c) + r * ldc * elem);
}

using MicroFn = void (*)(int64_t, int64_t, const uint8_t*, int64_t, const int8_t*, const Int8Epilogue*, int64_t,
                         void*, int64_t);
constexpr MicroFn kMicro[kMaxRows + 1] = {nullptr,  micro<1>, micro<2>, micro<3>, micro<4>, micro<5>,
                                          micro<6>, micro<7>, micro<8>, micro<9>, micro<10>};

// Splits the rows into equal blocks of at most kMaxRows: 64 rows run as 7 blocks of
// 9 or 10, not 6 full blocks and a sliver of 4 that would waste most of a tile.
void panel_vnni(int64_t rows, int64_t ncols, int64_t kp, const uint8_t* a, int64_t lda, const int8_t* panel,
                const Int8Epilogue* ep, int64_t col0, void* c, int64_t ldc) {
  const size_t elem = ep ? sizeof(float) : sizeof(int32_t);
  const int64_t blocks = (rows + kMaxRows - 1) / kMaxRows;
  int64_t r0 = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r1 = rows * (b + 1) / blocks;
    kMicro[r1 - r0](ncols, kp, a + r0 * lda, lda, panel, ep, col0, static_cast<char*>(c) + r0 * ldc * elem, ldc);
    r0 = r1;
  }
}

constexpr Int8Kernel kKernel{"vnni512", panel_vnni};

}  // namespace

const Int8Kernel* int8_kernel_vnni512() { return &kKernel; }

}  // namespace ember::cpu::gemm_int8_detail

EMBER_ISA_END

#else

namespace ember::cpu::gemm_int8_detail {
const Int8Kernel* int8_kernel_vnni512() { return nullptr; }
}  // namespace ember::cpu::gemm_int8_detail

#endif
