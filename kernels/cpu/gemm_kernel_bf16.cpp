// The bfloat16 GEMM kernel for CPUs with AVX512_BF16: vdpbf16ps multiplies 16 pairs
// of bfloat16 values by 16 other pairs and adds both products to 16 float32 sums,
// twice the multiply-adds of a float32 FMA in one instruction. So A and B are packed
// as pairs of consecutive k (one uint32_t each, the lower k in the low half), and
// the 14x32 tile of the float32 kernel keeps its shape: 28 zmm accumulators, two
// registers of B pairs, one broadcast pair of A. gemm.cpp's driver blocks, threads
// and calls the packing and macro-kernel below; the file is compiled for the
// avx512_bf16 level (isa.h) and used only when that level is active.
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512_BF16)
// GCC 12 reports the shuffle intrinsics' self-initialized "undefined" vectors as used
// uninitialized here too (the PR 105593 of isa.h), in its definite form.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#define EMBER_NOCLONE gnu::noclone  // GCC's own: no specialized copies of tile
#else
#define EMBER_NOCLONE  // clang makes no clones of a noinline function's body anyway
#endif

#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/transpose16_avx512.h"

namespace ember::cpu::gemm_detail {
namespace {

constexpr int MR = 14;  // rows of A per tile
constexpr int NR = 32;  // columns of B per tile: two vectors of 16 float32 sums

inline int64_t imin(int64_t x, int64_t y) { return x < y ? x : y; }

// The pair (x[lo], x[hi]) as vdpbf16ps reads it; a missing hi (an odd k) is zero.
inline uint32_t pair_of(const BFloat16* lo, const BFloat16* hi) {
  return uint32_t(lo->bits) | (hi ? uint32_t(hi->bits) << 16 : 0u);
}

// Interleaves the 16-bit lanes of two rows: lanes 0..15 of the result alternate
// r0[0], r1[0], r0[1], r1[1], ... (lo) and the same for elements 16..31 (hi).
inline __m512i interleave_lo(__m512i r0, __m512i r1) {
  const __m512i idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                       39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  return _mm512_permutex2var_epi16(r0, idx, r1);
}
inline __m512i interleave_hi(__m512i r0, __m512i r1) {
  const __m512i idx = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24,
                                       55, 23, 54, 22, 53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
  return _mm512_permutex2var_epi16(r0, idx, r1);
}

// A 16x16 transpose of bfloat16 pairs (32-bit elements, transpose16_avx512.h): `rows`
// rows of 16 pairs at src, rows `ld` bfloat16 values apart (any parity), become 16
// rows of `rows` pairs at dst (stride dst_ld pairs).
inline void transpose_pairs(const BFloat16* src, int64_t ld, int rows, uint32_t* dst, int64_t dst_ld) {
  transpose16x16_32bit(src, ld * int64_t(sizeof(BFloat16)), rows, dst, dst_ld);
}

// Packs `count` lines of a matrix into pair-major order: out[p * ld_out + l] = the pair
// (k = 2p, 2p + 1) of line l, for p in [0, ceil(kc/2)); lines past `count` up to
// `width` are zero. A line is a row of A or a column of B; `line` and `step` are the
// strides between lines and between consecutive k. Two layouts have fast paths:
//   step == 1: each line's pairs are contiguous 32-bit words: 16x16 transposes.
//   line == 1: each k holds `count` contiguous values: two k interleaved per vector.
// Anything else (and the odd tails) goes one pair at a time.
template <int WIDTH>
void pack_pairs(int64_t count, int64_t kc, const BFloat16* src, int64_t line, int64_t step,
                uint32_t* out) {
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  int64_t p0 = 0;
  if (step == 1) {
    for (; p0 + 16 <= full; p0 += 16) {
      for (int64_t g = 0; g < count; g += 16)
        transpose_pairs(src + g * line + 2 * p0, line, int(imin(16, count - g)), out + p0 * WIDTH + g,
                        WIDTH);
      for (int64_t p = p0; p < p0 + 16; ++p)
        for (int64_t l = count; l < WIDTH; ++l) out[p * WIDTH + l] = 0;
    }
  } else if (line == 1) {
    const __mmask32 lanes = count >= 32 ? ~__mmask32(0) : __mmask32((1u << count) - 1);
    const __mmask16 lo_keep = __mmask16(count >= 16 ? 0xffff : (1u << count) - 1);
    const __mmask16 hi_keep = __mmask16(count <= 16 ? 0 : count >= 32 ? 0xffff : (1u << (count - 16)) - 1);
    for (; p0 < full; ++p0) {
      const __m512i r0 = _mm512_maskz_loadu_epi16(lanes, src + 2 * p0 * step);
      const __m512i r1 = _mm512_maskz_loadu_epi16(lanes, src + (2 * p0 + 1) * step);
      uint32_t* o = out + p0 * WIDTH;
      _mm512_mask_storeu_epi32(o, lo_keep, interleave_lo(r0, r1));
      if constexpr (WIDTH > 16) _mm512_mask_storeu_epi32(o + 16, hi_keep, interleave_hi(r0, r1));
      for (int64_t l = count; l < WIDTH; ++l) o[l] = 0;
    }
  }
  for (int64_t p = p0; p < kp; ++p) {
    uint32_t* o = out + p * WIDTH;
    const bool has_hi = 2 * p + 1 < kc;
    for (int64_t l = 0; l < count; ++l) {
      const BFloat16* x = src + l * line + 2 * p * step;
      o[l] = pair_of(x, has_hi ? x + step : nullptr);
    }
    for (int64_t l = count; l < WIDTH; ++l) o[l] = 0;
  }
}

void pack_a(int64_t mc, int64_t kc, const BFloat16* a, int64_t a_rs, int64_t a_cs, uint32_t* out) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t i0 = 0; i0 < mc; i0 += MR, out += MR * kp)
    pack_pairs<MR>(imin(MR, mc - i0), kc, a + i0 * a_rs, a_rs, a_cs, out);
}

void pack_b(int64_t kc, int64_t nc, const BFloat16* b, int64_t b_rs, int64_t b_cs, uint32_t* out) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t j0 = 0; j0 < nc; j0 += NR, out += NR * kp)
    pack_pairs<NR>(imin(NR, nc - j0), kc, b + j0 * b_cs, b_cs, b_rs, out);
}

inline __m512 dot_pairs(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

// ReLU as the relu op computes it: x > 0 or NaN is kept, anything else (-0 too) is 0.
inline __m512 relu(__m512 v) {
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ), v);
}

// Where a tile's sums go when C is bfloat16 (the last depth block of
// gemm_bf16_rounded): alpha * sum + beta * c, plus the column's bias, through ReLU,
// rounded once into `out`. Null `out` means C is the float32 c.
struct RoundedStore {
  BFloat16* out;
  int64_t out_rs;
  const float* bias;
  bool relu;
};

// One MR x NR tile of C over kp packed pairs, of which the first `rows` rows are
// stored: the accumulators stay in registers for the whole loop. An edge tile
// computes the zero rows its panel was padded with rather than have an instantiation
// of its own (as the float kernels do): one copy of this loop keeps the library
// small, and edge tiles are a small share of any product worth this kernel.
// Not inlined: macro and macro_rounded share this one copy of the unrolled loop (a
// call per tile of kp steps costs nothing measurable; a second copy costs 17 KB).
[[gnu::noinline, EMBER_NOCLONE]] void tile(int64_t kp, const uint32_t* __restrict a, const uint32_t* __restrict b, float alpha,
                            float beta, float* __restrict c, int64_t c_rs, int64_t c_cs, int64_t nr, int rows,
                            const RoundedStore& rs) {
  constexpr int ROWS = MR;
  __m512 acc[ROWS][2];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int i = 0; i < rows; ++i) {
    if (rs.out) {
      __builtin_prefetch(rs.out + i * rs.out_rs, 1);
      __builtin_prefetch(rs.out + i * rs.out_rs + NR - 1, 1);
    } else {
      __builtin_prefetch(c + i * c_rs, 1);
      __builtin_prefetch(c + i * c_rs + (NR - 1) * c_cs, 1);
    }
  }
  for (int64_t p = 0; p < kp; ++p) {
    const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 16);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const __m512i ai = _mm512_set1_epi32(int(a[i]));
      acc[i][0] = dot_pairs(acc[i][0], ai, b0);
      acc[i][1] = dot_pairs(acc[i][1], ai, b1);
    }
    a += MR;
    b += NR;
  }

  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const int n0 = nr >= 16 ? 16 : int(nr), n1 = nr >= 32 ? 16 : nr > 16 ? int(nr - 16) : 0;
  const __mmask16 m0 = __mmask16((1u << n0) - 1), m1 = __mmask16((1u << n1) - 1);
  if (rs.out) {  // c, when read, has unit column stride (gemm.cpp's float32 sums)
    const __m512 bias0 = rs.bias ? _mm512_maskz_loadu_ps(m0, rs.bias) : _mm512_setzero_ps();
    const __m512 bias1 = rs.bias ? _mm512_maskz_loadu_ps(m1, rs.bias + 16) : _mm512_setzero_ps();
    for (int i = 0; i < rows; ++i) {
      __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
      if (beta != 0.f) {
        r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c + i * c_rs), r0);
        r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + i * c_rs + 16), r1);
      }
      if (rs.bias) {
        r0 = _mm512_add_ps(r0, bias0);
        r1 = _mm512_add_ps(r1, bias1);
      }
      if (rs.relu) {
        r0 = relu(r0);
        r1 = relu(r1);
      }
      BFloat16* oi = rs.out + i * rs.out_rs;
      _mm256_mask_storeu_epi16(oi, m0, bf16_round16(r0));
      _mm256_mask_storeu_epi16(oi + 16, m1, bf16_round16(r1));
    }
    return;
  }
  if (c_cs == 1) {
    for (int i = 0; i < rows; ++i) {
      float* ci = c + i * c_rs;
      __m512 r0 = _mm512_mul_ps(va, acc[i][0]), r1 = _mm512_mul_ps(va, acc[i][1]);
      if (beta != 0.f) {
        r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
        r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
      }
      _mm512_mask_storeu_ps(ci, m0, r0);
      _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
    return;
  }
  // C without unit column stride goes through a buffer.
  alignas(64) float buf[ROWS][NR];
  for (int i = 0; i < ROWS; ++i) {
    _mm512_store_ps(&buf[i][0], _mm512_mul_ps(va, acc[i][0]));
    _mm512_store_ps(&buf[i][16], _mm512_mul_ps(va, acc[i][1]));
  }
  for (int i = 0; i < rows; ++i) {
    float* ci = c + i * c_rs;
    for (int64_t j = 0; j < nr; ++j)
      ci[j * c_cs] = beta == 0.f ? buf[i][j] : buf[i][j] + beta * ci[j * c_cs];
  }
}

// Same loop order as the float kernels (gemm_kernel_impl.h): an A micro-panel stays
// in L1 while the block's B panels stream past it.
void macro(int64_t mc, int64_t nc, int64_t kc, const uint32_t* pa, const uint32_t* pb, float alpha,
           float beta, float* c, int64_t c_rs, int64_t c_cs) {
  const int64_t kp = (kc + 1) / 2;
  const RoundedStore none{nullptr, 0, nullptr, false};
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int rows = int(imin(MR, mc - i0));
    for (int64_t j0 = 0; j0 < nc; j0 += NR)
      tile(kp, pa + i0 * kp, pb + j0 * kp, alpha, beta, c + i0 * c_rs + j0 * c_cs, c_rs, c_cs,
           imin(NR, nc - j0), rows, none);
  }
}

// macro with bfloat16 C (GemmKernelBf16::macro_rounded): c is read only when beta
// is not 0, and is then float32 with unit column stride.
void macro_rounded(int64_t mc, int64_t nc, int64_t kc, const uint32_t* pa, const uint32_t* pb, float alpha,
                   float beta, const float* c, int64_t c_rs, BFloat16* out, int64_t out_rs, const float* bias,
                   bool relu) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int rows = int(imin(MR, mc - i0));
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
      const RoundedStore rs{out + i0 * out_rs + j0, out_rs, bias ? bias + j0 : nullptr, relu};
      tile(kp, pa + i0 * kp, pb + j0 * kp, alpha, beta, beta != 0.f ? const_cast<float*>(c) + i0 * c_rs + j0 : nullptr,
           c_rs, 1, imin(NR, nc - j0), rows, rs);
    }
  }
}

constexpr GemmKernelBf16 kKernel{{"avx512_bf16", MR, NR, 2, &pack_a, &pack_b, &macro, nullptr}, &macro_rounded};

}  // namespace

const GemmKernelBf16* gemm_kernel_bf16_avx512() { return &kKernel; }

}  // namespace ember::cpu::gemm_detail

EMBER_ISA_END

#else

namespace ember::cpu::gemm_detail {
const GemmKernelBf16* gemm_kernel_bf16_avx512() { return nullptr; }
}  // namespace ember::cpu::gemm_detail

#endif
