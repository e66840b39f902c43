// The stride-1 convolution kernels on bfloat16 values with float32 sums, for CPUs
// with vdpbf16ps (the avx512_bf16 level of isa.h): autocast's bfloat16 convolution
// blocks of the seed network, whose 6 and 12 output channels are too few for the
// bfloat16 GEMM of conv2d_bf16.cpp. The layout is the float32 direct kernels'
// (conv2d_direct_impl.h, whose helpers this file instantiates for 16-bit values):
// the output on the input's grid, the input read in place; where much of each grid
// row lies past the output (conv2), the forward and the weight gradient work on
// compact copies instead (see "Compact positions" below).
//
// vdpbf16ps multiplies 16 pairs of bfloat16 values by 16 other pairs and adds both
// products of a pair to one float32 lane: twice the multiply-adds of an FMA, if the
// two operands come as pairs over the summed index.
//   weight gradient  dW[c][k] = sum over p of gy'[c][p] * x[off[k] + p]: the sum runs
//                    over pixels, and 32 consecutive pixels of gy' and of x are
//                    already 16 pairs, so both rows are loaded as they are (the
//                    driver is conv2d_direct_impl.h's weight_images).
//   forward          y[c][p] = sum over taps k of W[c][k] * x[off[k] + p]: taps
//                    (kx, kx + dil_w) are paired, one permute per 16 pixels turning
//                    32 loaded values into the pairs (x[q], x[q + dil_w]) (or, on
//                    compact copies, the pairs copied once per image).
//   input gradient   gx[ci][ky*Wv + p] = sum over c, kx of W[c][ci][ky][kx] *
//                    gy'[c][p - kx]: gy' is interleaved in channel pairs once per
//                    image and read shifted by kx.
// Around the tiles, the pooling epilogue, the gradient spread and the rounding of
// rows take 16 lanes a step with masks, four short rows at a time.
// Each result is a float32 sum of exact products (a bfloat16 product fits in a
// float32), so it differs from the float32 kernels run on the same values only by
// the order of the additions.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512_BF16)
namespace ember::cpu::conv2d_detail {
namespace {
constexpr int kBytes = 64;
}  // namespace
}  // namespace ember::cpu::conv2d_detail
#include "kernels/cpu/conv2d_direct_impl.h"
#include "kernels/cpu/relu_pool_impl.h"

namespace ember::cpu::conv2d_detail {
namespace {

using u16 = uint16_t;
constexpr int64_t kValues = 32;  // bfloat16 values in a register (16 pairs)

inline __m512bh as_pairs(__m512i v) { return (__m512bh)v; }

// ---------------------------------------------------------------------------------
// Row helpers in 16-lane steps with masked loads and stores: the seed network's rows
// are 4 to 24 values, where the generic code's halving vector widths cost more
// than the convolutions' arithmetic.

// Mask of the low n (0..16) lanes, and of the low 2n (0..32) 16-bit values.
inline __mmask16 low16(int64_t n) { return __mmask16(n >= 16 ? 0xffffu : (1u << n) - 1u); }
inline __mmask32 low32(int64_t n) { return __mmask32(n >= 32 ? 0xffffffffu : (1u << n) - 1u); }

// 16 floats rounded to bfloat16 (to nearest, ties to even; a NaN stays a NaN), as
// the 16 bfloat16 values and as floats.
inline __m256i to_bf16(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }
inline __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

// n floats to bfloat16, rounded once.
[[gnu::noinline]] void store_row16(const float* src, u16* dst, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = low16(n - j);
    _mm256_mask_storeu_epi16(dst + j, m, to_bf16(_mm512_maskz_loadu_ps(m, src + j)));
  }
}

// 64 values from p into lo and hi, zeros past the `left` (may be <= 0) that may be
// read: the compact copies' loads stop at the end of the image or the batch.
inline void load64(const u16* p, int64_t left, __m512i* lo, __m512i* hi) {
  if (left >= 64) [[likely]] {
    *lo = _mm512_loadu_si512(p);
    *hi = _mm512_loadu_si512(p + 32);
    return;
  }
  *lo = _mm512_maskz_loadu_epi16(left <= 0 ? __mmask32(0) : low32(left), p);
  *hi = _mm512_maskz_loadu_epi16(left <= 32 ? __mmask32(0) : low32(left - 32), p + 32);
}

// One step of the pooling: a0 a1 hold the top rows of 16 windows (window i's two
// values at lanes 2i and 2i + 1 of their concatenation), b0 b1 the bottom rows, each
// value already rounded to bfloat16. Returns the pooled values after ReLU; k gets
// each window's position and ReLU bit. Positions are tried in row-major order, a
// later one replacing the running maximum when it is larger or NaN.
inline __m512 pool_step16(__m512 a0, __m512 a1, __m512 b0, __m512 b1, __m512i* k_out) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512 cand[3] = {_mm512_permutex2var_ps(a0, odd, a1), _mm512_permutex2var_ps(b0, even, b1),
                          _mm512_permutex2var_ps(b0, odd, b1)};
  __m512 m = _mm512_permutex2var_ps(a0, even, a1);
  __m512i k = _mm512_setzero_si512();
  for (int c = 0; c < 3; ++c) {
    const __mmask16 takes =
        _mm512_cmp_ps_mask(cand[c], m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(cand[c], cand[c], _CMP_UNORD_Q);
    m = _mm512_mask_mov_ps(m, takes, cand[c]);
    k = _mm512_mask_mov_epi32(k, takes, _mm512_set1_epi32(c + 1));
  }
  const __mmask16 passes = _mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __mmask16 keep = passes | _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
  *k_out = _mm512_mask_or_epi32(k, passes, k, _mm512_set1_epi32(kPasses));
  return _mm512_maskz_mov_ps(keep, m);
}

// pool_step16 on float32 values it rounds itself: t0 t1 hold the top rows (window
// i's two values at lanes 2i and 2i + 1 of their concatenation), b0 b1 the bottom
// rows. Without a NaN among them (the common case) it takes no mask-register chain:
// each value is rounded (vcvtne2ps2bf16, 32 a step) and mapped to a 16-bit integer
// key in the values' order (a negative value's other bits flipped; -0 lands just
// below +0, which can only choose another zero as a window's position, whose
// gradient does not pass), placed in the top half of a 32-bit lane with 3 - its
// position in the low bits, so one signed maximum over the four candidates picks the
// largest value and, among equal ones, the first, as pool_step16's compares do.
// Half as many instructions, and no compare -> mask -> select chain: conv1's pooling
// took 52-57 us of its 122-127 us forward at batch 100 on one thread.
inline __m512 pool_fast16(__m512 t0, __m512 t1, __m512 b0, __m512 b1, __m512i* k_out) {
  if (_mm512_cmp_ps_mask(t0, b0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(t1, b1, _CMP_UNORD_Q)) {
    const auto round = [](__m512 v) { return widen(to_bf16(v)); };
    return pool_step16(round(t0), round(t1), round(b0), round(b1), k_out);
  }
  const __m512i low15 = _mm512_set1_epi32(0x7fff), high16 = _mm512_set1_epi32(int(0xffff0000u));
  // (a ^ (b & c)) and ((a & b) | c) as vpternlogd immediates.
  constexpr int kXorAnd = 0x78, kAndOr = 0xEA;
  __m512i left[2], right[2];
  const __m512 lo[2] = {t0, b0}, hi[2] = {t1, b1};
  for (int row = 0; row < 2; ++row) {
    __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi[row], lo[row]);  // value j at 16-bit lane j
    v = _mm512_ternarylogic_epi32(v, _mm512_srai_epi16(v, 15), _mm512_set1_epi16(0x7fff), kXorAnd);
    const int tag = 3 - 2 * row;  // positions 0 and 1 on top, 2 and 3 below
    left[row] = _mm512_or_si512(_mm512_slli_epi32(v, 16), _mm512_set1_epi32(tag));
    right[row] = _mm512_ternarylogic_epi32(v, high16, _mm512_set1_epi32(tag - 1), kAndOr);
  }
  const __m512i m = _mm512_max_epi32(_mm512_max_epi32(left[0], right[0]), _mm512_max_epi32(left[1], right[1]));
  const __m512i key = _mm512_srai_epi32(m, 16);  // sign-extended
  const __m512i bits = _mm512_ternarylogic_epi32(key, _mm512_srai_epi32(m, 31), low15, kXorAnd);
  const __m512i relu = _mm512_max_epi32(bits, _mm512_setzero_si512());  // a negative value's bits are < 0
  const __m512i k = _mm512_andnot_si512(m, _mm512_set1_epi32(3));
  *k_out = _mm512_mask_or_epi32(k, _mm512_test_epi32_mask(relu, relu), k, _mm512_set1_epi32(kPasses));
  return _mm512_castsi512_ps(_mm512_slli_epi32(relu, 16));
}

// 2*pw <= 8 values of a conv row in a 256-bit half (zeros past them).
inline __m256 short_row(const float* r, __mmask8 m) { return _mm256_maskz_loadu_ps(m, r); }

// relu_pool_forward_planes (relu_pool_impl.h) with each value rounded to bfloat16
// first and bfloat16 results: the same maximum, position and ReLU mask rules, 16
// windows a step. Rows of up to 4 pooled values (the seed network's conv2) take
// four rows a step, lane 4r + q holding window q of row r, and compress the lanes
// of narrower rows; longer rows take 16 windows of one row a step.
[[gnu::noinline]] void pool_planes16(const float* conv, int64_t planes, int64_t plane_stride, int64_t row_stride,
                                     int64_t h_out, int64_t w_out, u16* y, uint8_t* window) {
  const int64_t ph = h_out / 2, pw = w_out / 2;
  if (pw <= 4) {
    const __mmask8 m8 = __mmask8((1u << (2 * pw)) - 1u);
    const __mmask16 valid = __mmask16(0x1111u * ((1u << pw) - 1u));  // q < pw in each group of 4
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t py = 0; py < ph; py += 4) {
        const int64_t rows = std::min<int64_t>(4, ph - py);
        __m256 top[4], bottom[4];
        for (int r = 0; r < 4; ++r) {
          const float* r0 = conv + p * plane_stride + 2 * (py + std::min<int64_t>(r, rows - 1)) * row_stride;
          top[r] = short_row(r0, m8);
          bottom[r] = short_row(r0 + row_stride, m8);
        }
        auto join = [](__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); };
        __m512i k;
        const __m512 v = pool_fast16(join(top[0], top[1]), join(top[2], top[3]), join(bottom[0], bottom[1]),
                                     join(bottom[2], bottom[3]), &k);
        const __mmask16 keep = __mmask16(valid & ((1u << (4 * rows)) - 1u));
        const int n = __builtin_popcount(keep);
        const int64_t o = (p * ph + py) * pw;
        _mm256_mask_storeu_epi16(y + o, __mmask16((1u << n) - 1u), to_bf16(_mm512_maskz_compress_ps(keep, v)));
        if (window)
          _mm512_mask_cvtepi32_storeu_epi8(window + o, __mmask16((1u << n) - 1u), _mm512_maskz_compress_epi32(keep, k));
      }
    return;
  }
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t py = 0; py < ph; ++py) {
      const float* r0 = conv + p * plane_stride + 2 * py * row_stride;
      const float* r1 = r0 + row_stride;
      const int64_t o = (p * ph + py) * pw;
      for (int64_t j = 0; j < pw; j += 16) {
        const int64_t cols = 2 * std::min<int64_t>(16, pw - j);
        const __mmask16 ma = low16(cols), mb = low16(cols - 16 > 0 ? cols - 16 : 0);
        __m512i k;
        const __m512 v = pool_fast16(_mm512_maskz_loadu_ps(ma, r0 + 2 * j), _mm512_maskz_loadu_ps(mb, r0 + 2 * j + 16),
                                     _mm512_maskz_loadu_ps(ma, r1 + 2 * j), _mm512_maskz_loadu_ps(mb, r1 + 2 * j + 16),
                                     &k);
        // Whole 16-lane stores: the lanes past the row are overwritten by the next
        // row, or land in the slack the caller leaves after the last.
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + o + j), to_bf16(v));
        if (window) _mm_storeu_si128(reinterpret_cast<__m128i*>(window + o + j), _mm512_cvtepi32_epi8(k));
      }
    }
}

// The conv rows of 16 windows from their pooled gradients g and window bytes w
// (one per 32-bit lane): where the window passed ReLU (and g is not a zero: a -0
// arrives as +0, as in relu_pool_impl.h), g at the window's position, else 0. Lane
// i's 32 bits are columns 2i (low half) and 2i + 1 (high half) of the top row (top)
// and of the bottom row (bottom). Position q moves g up by 16q bits in the top row
// and by 16(q ^ 2) in the bottom one, and vpsllvd makes a shift of 32 or more a
// zero: two variable shifts instead of four compares and selects.
inline void spread_step16(__m512i g, __m512i w, __m512i* top, __m512i* bottom) {
  const __mmask16 passes =
      _mm512_test_epi32_mask(w, _mm512_set1_epi32(kPasses)) & _mm512_test_epi32_mask(g, _mm512_set1_epi32(0x7fff));
  const __m512i gp = _mm512_maskz_mov_epi32(passes, g);
  const __m512i shift = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(3)), 4);
  *top = _mm512_sllv_epi32(gp, shift);
  *bottom = _mm512_sllv_epi32(gp, _mm512_xor_si512(shift, _mm512_set1_epi32(32)));
}

// spread_pooled_rows (relu_pool_impl.h) for bfloat16: each dst row zeros but for the
// pooled gradient at its windows' positions, 16 windows a step. As in
// pool_planes16, rows of up to 4 pooled values take four rows a step (lane 4r + q).
[[gnu::noinline]] void spread_pooled16(const Conv2dShape& s, const Direct& v, const u16* gy, const uint8_t* window,
                                       int64_t rows, u16* dst, int64_t ld) {
  const int64_t ph = s.h_out / 2, pw = s.w_out / 2;
  // Rows longer than 4 pooled values: when the last step's 32 lanes reach the end
  // of the grid row (zeros past the row's pooled values, which g and w load as
  // zeros) and the dst row holds every grid row written (the weight gradient's rows
  // of Pw values can end before the last pooled grid row does), the stores write
  // whole rows and only the rows below are zeroed.
  const bool whole_rows = pw > 4 && v.Wv - 2 * ((pw - 1) / 16 * 16) <= 32 && 2 * ph * v.Wv <= ld;
  for (int64_t r = 0; r < rows; ++r) {
    u16* d = dst + r * ld;
    if (whole_rows) zero_n(d + 2 * ph * v.Wv, ld - 2 * ph * v.Wv);
    else zero_n(d, ld);
    if (pw <= 4) {
      const __mmask8 m8 = __mmask8((1u << pw) - 1u), m_out = __mmask8((1u << (2 * pw)) - 1u);
      for (int64_t py = 0; py < ph; py += 4) {
        const int64_t n = std::min<int64_t>(4, ph - py);
        // Rows past the last are zeros, and nothing of them is stored.
        __m128i g[4], w[4];
        for (int q = 0; q < 4; ++q) {
          const int64_t o = (r * ph + py + q) * pw;
          g[q] = q < n ? _mm_maskz_loadu_epi16(m8, gy + o) : _mm_setzero_si128();
          w[q] = q < n ? _mm_maskz_loadu_epi8(__mmask16(m8), window + o) : _mm_setzero_si128();
        }
        const __m256i g16 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi64(g[0], g[1])),
                                                    _mm_unpacklo_epi64(g[2], g[3]), 1);
        const __m128i w16 = _mm_unpacklo_epi64(_mm_unpacklo_epi32(w[0], w[1]), _mm_unpacklo_epi32(w[2], w[3]));
        __m512i top, bottom;
        spread_step16(_mm512_cvtepu16_epi32(g16), _mm512_cvtepu8_epi32(w16), &top, &bottom);
        const __m128i t[4] = {_mm512_extracti32x4_epi32(top, 0), _mm512_extracti32x4_epi32(top, 1),
                              _mm512_extracti32x4_epi32(top, 2), _mm512_extracti32x4_epi32(top, 3)};
        const __m128i u[4] = {_mm512_extracti32x4_epi32(bottom, 0), _mm512_extracti32x4_epi32(bottom, 1),
                              _mm512_extracti32x4_epi32(bottom, 2), _mm512_extracti32x4_epi32(bottom, 3)};
        for (int q = 0; q < n; ++q) {
          u16* row0 = d + 2 * (py + q) * v.Wv;
          _mm_mask_storeu_epi16(row0, m_out, t[q]);
          _mm_mask_storeu_epi16(row0 + v.Wv, m_out, u[q]);
        }
      }
    } else {
      for (int64_t py = 0; py < ph; ++py) {
        const int64_t o = (r * ph + py) * pw;
        u16* row0 = d + 2 * py * v.Wv;
        for (int64_t j = 0; j < pw; j += 16) {
          const int64_t cnt = std::min<int64_t>(16, pw - j);
          const __mmask16 n16 = low16(cnt);
          __m512i top, bottom;
          spread_step16(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(n16, gy + o + j)),
                        _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n16, window + o + j)), &top, &bottom);
          const __mmask32 m = low32(whole_rows ? v.Wv - 2 * j : 2 * cnt);
          _mm512_mask_storeu_epi16(row0 + 2 * j, m, top);
          _mm512_mask_storeu_epi16(row0 + v.Wv + 2 * j, m, bottom);
        }
      }
    }
  }
}

// gy_rows (conv2d_direct_impl.h) with the spread above.
[[gnu::noinline]] void gy_rows16(const Args<u16>& a, int64_t i, int64_t c0, int64_t rows, u16* dst, int64_t ld) {
  const Conv2dShape& s = *a.s;
  if (!a.gy_window) return spread_rows(s, *a.v, a.gy + i * a.d->y_img + c0 * a.d->P, rows, dst, ld);
  const int64_t pooled = (s.h_out / 2) * (s.w_out / 2), o = (i * s.c_out + c0) * pooled;
  spread_pooled16(s, *a.v, a.gy + o, a.gy_window + o, rows, dst, ld);
}

// ---------------------------------------------------------------------------------
// Weight gradient: conv2d_direct_impl.h's weight_images (images in chunks whose x
// and gy' stay in L1, every RC x RK tile walking a chunk, float32 vector sums waiting
// in scratch between chunks) with this policy. Rows are Pw = Pv rounded up to 32
// values, so x is read up to 32 values past a plane (weight_images reads the images
// that would leave the batch, and padded ones, from copies with zeroed slack).
struct Bf16Weight {
  using E = u16;
  using A = float;
  static constexpr int RC = 3, RK = 5;  // as the float32 tile: 15 accumulators
  static constexpr int kStep = int(kValues), kLanes = 16;
  static WeightLayout layout(const Args<u16>& a) { return weight_layout(a, kStep, kLanes, RC, RK); }
  static void rows(const Args<u16>& a, int64_t i, int64_t c0, int64_t n, u16* dst, int64_t ld) {
    gy_rows16(a, i, c0, n, dst, ld);
  }
  static void copy_image(const Args<u16>& a, int64_t i, u16* xc) { pad_image(*a.s, *a.v, a.x + i * a.d->x_img, xc); }
  // bc += one gy' row: vdpbf16ps with bfloat16 ones.
  static void bias(float* bc, const u16* row, int64_t Pw) {
    const __m512i ones = _mm512_set1_epi16(short(0x3f80));
    __m512 sum = _mm512_loadu_ps(bc);
    for (int64_t p = 0; p < Pw; p += kValues)
      sum = _mm512_dpbf16_ps(sum, as_pairs(_mm512_loadu_si512(row + p)), as_pairs(ones));
    _mm512_storeu_ps(bc, sum);
  }
  static float lane_sum(const float* v) { return _mm512_reduce_add_ps(_mm512_loadu_ps(v)); }

  // One RC x RK tile over a chunk: 32 positions of gy' and of x are 16 pairs each.
  [[gnu::noinline]] static void tile(const WeightLayout& l, int64_t imgs, const u16* const* xs,
                                     const u16* const* gys, const int64_t* toff, float* acc_mem) {
    __m512 acc[RC][RK];
#pragma GCC unroll 8
    for (int r = 0; r < RC; ++r)
#pragma GCC unroll 8
      for (int q = 0; q < RK; ++q) acc[r][q] = _mm512_loadu_ps(acc_mem + (r * RK + q) * kLanes);
    for (int64_t m = 0; m < imgs; ++m) {
      const u16* gyr = gys[m];
      const u16* xr[RK];
#pragma GCC unroll 8
      for (int q = 0; q < RK; ++q) xr[q] = xs[m] + toff[q];
      for (int64_t p = 0; p < l.Pw; p += kValues) {
        __m512i av[RC];
#pragma GCC unroll 8
        for (int r = 0; r < RC; ++r) av[r] = _mm512_loadu_si512(gyr + r * l.Pw + p);
#pragma GCC unroll 8
        for (int q = 0; q < RK; ++q) {
          __m512i bv = _mm512_loadu_si512(xr[q] + p);
          asm("" : "+v"(bv));  // one load per tap, not one folded into each of RC products
#pragma GCC unroll 8
          for (int r = 0; r < RC; ++r) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], as_pairs(av[r]), as_pairs(bv));
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < RC; ++r)
#pragma GCC unroll 8
      for (int q = 0; q < RK; ++q) _mm512_storeu_ps(acc_mem + (r * RK + q) * kLanes, acc[r][q]);
  }
};

// The weight gradient on compact positions, as the forward's (compact_forward): rows
// of gy' and of x w_out wide, so conv2's sums skip the third of each row that only
// multiplied zeros of gy'. Image i of x is copied as kw shifted copies of each
// channel, rows compacted:
//   xk[ci][kx][iy*w_out + q] = x[ci][iy][q + kx*dil_w],  q < w_out
// so tap (ci, ky, kx) at position p = oy*w_out + ox reads xk[ci][kx] at
// ky*dil_h*w_out + p, and the tile (Bf16Weight's, unchanged) runs on a Direct
// geometry of these copies (compact_geometry): planes of kw*Hv*w_out values, rows of
// w_out, no padding (the copy replaces the pad). 32 values a step, each a vpermt2w
// from 64 values of x: 32 positions cross at most `cross` row ends. conv2's weight
// gradient went from 130-131 to 111-112 us at batch 100 on one thread. Chunks keep
// weight_layout's size by x's own images (the copies make them 2.3x the L1 target
// for conv2): sized by the copies, the chunks were 4 images and the gradient 125 us.
bool compact_weight(const Conv2dShape& s, const Direct& v) {
  if (s.w_out <= 0 || v.padded || 4 * (v.Wv - s.w_out) < v.Wv) return false;
  const int64_t cross = (s.w_out + 30) / s.w_out;
  return cross * (v.Wv - s.w_out) + 31 <= 63 && s.c_in * s.kw * v.Hv * s.w_out * 2 <= (128 << 10);
}

Direct compact_geometry(const Conv2dShape& s, const Conv2dDims& d, const Direct& v) {
  Direct c;
  c.Hv = v.Hv;
  c.Wv = s.w_out;
  c.plane = s.kw * v.Hv * s.w_out;  // a channel's kw copies
  c.Pv = s.h_out * s.w_out;
  c.padded = true;  // every image goes through copy_image
  c.off.resize(size_t(d.K));
  for (int64_t ci = 0, k = 0; ci < d.cig; ++ci)
    for (int64_t ky = 0; ky < s.kh; ++ky)
      for (int64_t kx = 0; kx < s.kw; ++kx, ++k)
        c.off[size_t(k)] = ci * c.plane + kx * v.Hv * s.w_out + ky * s.dil_h * s.w_out;
  return c;
}

// Each 32-value step of a copy: its first value's place in a channel's rows of x,
// and the vpermt2w lanes picking its 32 values from the 64 there. Made once per
// shape and thread.
struct ShiftGather {
  int64_t Hv = -1, Wv = -1, wo = -1;
  std::vector<int64_t> start;
  std::vector<int16_t> lanes;
};

const ShiftGather& shift_gather(const Conv2dShape& s) {
  thread_local ShiftGather g;
  if (g.Hv == s.h && g.Wv == s.w && g.wo == s.w_out) return g;
  g.Hv = s.h, g.Wv = s.w, g.wo = s.w_out;
  const int64_t positions = s.h * s.w_out, steps = cdiv(positions, 32);
  g.start.assign(size_t(steps), 0);
  g.lanes.assign(size_t(32 * steps), 0);
  for (int64_t m = 0; m < steps; ++m) {
    const int64_t p0 = 32 * m, s0 = p0 / s.w_out * s.w + p0 % s.w_out;
    g.start[size_t(m)] = s0;
    for (int q = 0; q < 32; ++q) {
      const int64_t p = std::min(p0 + q, positions - 1);  // lanes past the copy are not stored
      g.lanes[size_t(32 * m + q)] = int16_t(p / s.w_out * s.w + p % s.w_out - s0);
    }
  }
  return g;
}

struct Bf16WeightCompact : Bf16Weight {
  // Image i as the shifted compact copies (a.v is compact_geometry's), then a
  // vector of slack for the tile's last step (zeroed by weight_images).
  static void copy_image(const Args<u16>& a, int64_t i, u16* xc) {
    const Conv2dShape& s = *a.s;
    const ShiftGather& g = shift_gather(s);
    const int64_t plane = s.h * s.w, kw = s.kw, dw = s.dil_w, block = s.h * s.w_out;
    const int64_t values = (s.n - i) * a.d->x_img, steps = int64_t(g.start.size()), channels = s.c_in;
    const u16* x = a.x + i * a.d->x_img;
    for (int64_t m = 0; m < steps; ++m) {
      const __m512i idx = _mm512_loadu_si512(g.lanes.data() + 32 * m);
      const int64_t s0 = g.start[size_t(m)];
      const __mmask32 tail = low32(block - 32 * m);  // the last step stops at its copy's end
      u16* out = xc + 32 * m;
      for (int64_t ci = 0; ci < channels; ++ci)
        for (int64_t kx = 0; kx < kw; ++kx, out += block) {
          const int64_t at = ci * plane + kx * dw + s0;
          __m512i lo, hi;
          load64(x + at, values - at, &lo, &hi);
          _mm512_mask_storeu_epi16(out, tail, _mm512_permutex2var_epi16(lo, idx, hi));
        }
    }
  }
};

void weight_images16(const Args<u16>& a, int64_t lo, int64_t hi, float* ws, float* pw, float* pb, int64_t u0,
                     int64_t u1) {
  if (!compact_weight(*a.s, *a.v)) return weight_images<Bf16Weight>(a, lo, hi, ws, pw, pb, u0, u1);
  const Direct c = compact_geometry(*a.s, *a.d, *a.v);
  Args<u16> ac = a;
  ac.v = &c;
  weight_images<Bf16WeightCompact>(ac, lo, hi, ws, pw, pb, u0, u1);
}

int64_t weight_scratch16(const Args<u16>& a) {
  if (!compact_weight(*a.s, *a.v)) return weight_scratch<Bf16Weight>(a);
  const Direct c = compact_geometry(*a.s, *a.d, *a.v);
  Args<u16> ac = a;
  ac.v = &c;
  return weight_scratch<Bf16WeightCompact>(ac);
}

// ---------------------------------------------------------------------------------
// Forward and input gradient: outer-product tiles of ROWS rows x 32 positions (two
// registers of 16 float32 sums per row) over a depth of pairs; one broadcast pair of
// the weight per row and step. ROWS is 12 or 6: the rows are padded with zero
// weights to a multiple of 6, so two tiles serve every shape (each instantiation is
// library size).
constexpr int64_t kPanel = 32;  // output positions per tile
constexpr int64_t kRowStep = 6;

inline __m512bh broadcast_pair(uint32_t pair) { return (__m512bh)_mm512_set1_epi32(int(pair)); }

inline uint32_t pair_bits(u16 lo, u16 hi) { return uint32_t(lo) | uint32_t(hi) << 16; }

// The forward's taps in pairs: the taps (kx, kx + dil_w) of one channel and kernel
// row, an odd last one alone. Pair j reads 32 values of x from off[j] + p and the
// permute `idx` makes them the 16 pairs (x[q], x[q + dil_w]) of positions q = p ..
// p + 15; a lone tap's mask zeroes the partner lanes (its weight is zero there, but
// an Inf in x times that zero would be a NaN).
struct TapPairs {
  std::vector<int64_t> off, k0, k1;  // k1 = -1: a lone tap
  std::vector<uint32_t> mask;
  int64_t delta = 1;
};

[[gnu::noinline]] TapPairs tap_pairs(const Conv2dShape& s, const Conv2dDims& d, const Direct& v) {
  TapPairs t;
  const bool pairs = s.dil_w <= 16;  // the partner must sit in the same 32 values
  t.delta = s.dil_w;
  for (int64_t ci = 0; ci < d.cig; ++ci)
    for (int64_t ky = 0; ky < s.kh; ++ky)
      for (int64_t kx = 0; kx < s.kw; kx += pairs ? 2 : 1) {
        const int64_t k = (ci * s.kh + ky) * s.kw + kx;
        const bool lone = !pairs || kx + 1 >= s.kw;
        t.off.push_back(v.off[size_t(k)]);
        t.k0.push_back(k);
        t.k1.push_back(lone ? -1 : k + 1);
        t.mask.push_back(lone ? 0x55555555u : 0xffffffffu);
      }
  return t;
}

// C rows [ROWS][32] (row stride c_rs) = init (or 0) + sum over pairs j of the
// broadcast weight pair a[i + j*a_cs] times x's pairs at x + off[j]. kPaired: x
// holds the pairs already (pair_rows16's u32 values), so 16 are loaded as they are;
// otherwise 32 bfloat16 values are loaded and permuted into their pairs.
template <int ROWS, bool kPaired>
[[gnu::noinline]] void forward_tile16(int64_t pairs, const uint32_t* a, int64_t a_cs, const void* x,
                                      const int64_t* off, const uint32_t* mask, __m512i idx, const float* init,
                                      float* c, int64_t c_rs) {
  __m512 acc[ROWS][2];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = init ? _mm512_set1_ps(init[i]) : _mm512_setzero_ps();
  for (int64_t j = 0; j < pairs; ++j) {
    __m512bh b0, b1;
    if constexpr (kPaired) {
      const uint32_t* xj = static_cast<const uint32_t*>(x) + off[j];
      b0 = (__m512bh)_mm512_loadu_si512(xj);
      b1 = (__m512bh)_mm512_loadu_si512(xj + 16);
    } else {
      const u16* xj = static_cast<const u16*>(x) + off[j];
      const __mmask32 m = mask[j];
      b0 = (__m512bh)_mm512_maskz_permutexvar_epi16(m, idx, _mm512_loadu_si512(xj));
      b1 = (__m512bh)_mm512_maskz_permutexvar_epi16(m, idx, _mm512_loadu_si512(xj + 16));
    }
    const uint32_t* aj = a + j * a_cs;
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const __m512bh ai = broadcast_pair(aj[i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    _mm512_storeu_ps(c + i * c_rs, acc[i][0]);
    _mm512_storeu_ps(c + i * c_rs + 16, acc[i][1]);
  }
}

// Rows [c + coff[i]][32] += sum over pairs j of a[i + j*a_cs] times the 16 pairs
// per register of z + boff[j] (already interleaved).
template <int ROWS>
[[gnu::noinline]] void scatter_tile16(int64_t pairs, const uint32_t* a, int64_t a_cs, const uint32_t* z,
                                      const int64_t* boff, float* c, const int64_t* coff) {
  __m512 acc[ROWS][2];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t j = 0; j < pairs; ++j) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(z + boff[j]);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(z + boff[j] + 16);
    const uint32_t* aj = a + j * a_cs;
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const __m512bh ai = broadcast_pair(aj[i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    float* ci = c + coff[i];
    _mm512_storeu_ps(ci, _mm512_add_ps(_mm512_loadu_ps(ci), acc[i][0]));
    _mm512_storeu_ps(ci + 16, _mm512_add_ps(_mm512_loadu_ps(ci + 16), acc[i][1]));
  }
}

// Compact positions. The output grid sits on the input's rows, Wv wide, of which
// only the first w_out hold outputs: for the seed network's conv2 (12-wide rows, 8
// outputs) a third of every tile's work was on columns the pooling never reads.
// When at least a quarter of the grid is such columns, each image is first copied
// as its tap pairs with the rows compacted to w_out: for every channel ci and pair
// t of the kernel row (taps 2t and 2t + 1), the block
//   z[ci][t][iy*w_out + q] = (x[ci][iy][q + 2t*dil_w], x[ci][iy][q + (2t + 1)*dil_w])
// (a lone last tap's partner 0), so tap pair (ci, ky, t) at output position
// p = oy*w_out + ox reads z[ci][t] at ky*dil_h*w_out + p: consecutive values, loaded
// by the tile with no permute. Per image that is ceil(kw/2) copies of the image as
// 32-bit pairs (6.9 KB for conv2). conv2's forward went from 101-102 to 85-86 us at
// batch 100 on one thread. conv1 (24 outputs in 28-wide rows) stays on the grid:
// its copy cost about what the seventh it saved.
//
// A block is written 16 pairs at a time, each vector gathered by one vpermt2w from
// 64 values of x: vector m of a block covers positions 16m .. 16m + 15, which cross
// at most `cross` row ends, so their values lie within cross*(Wv - w_out) + 15 + dil_w
// of the first; that reach must fit in the 64.
int64_t pair_reach(const Conv2dShape& s, const Direct& v) {
  const int64_t cross = (s.w_out + 14) / s.w_out;
  return cross * (v.Wv - s.w_out) + 15 + s.dil_w;
}

bool compact_forward(const Conv2dShape& s, const Direct& v) {
  const int64_t zbytes = s.c_in * cdiv(s.kw, 2) * v.Hv * s.w_out * 4;
  return s.w_out > 0 && s.dil_w <= 16 && 4 * (v.Wv - s.w_out) >= v.Wv && pair_reach(s, v) <= 63 &&
         zbytes <= (256 << 10);
}

// Vector m of a block: its first value's place in a channel's rows (row*Wv + column)
// and the vpermt2w lanes that pick its 16 pairs from the 64 values there.
void pair_gather(const Conv2dShape& s, const Direct& v, int64_t vectors, int64_t* start, int16_t* lanes) {
  const int64_t wo = s.w_out, positions = v.Hv * wo;
  for (int64_t m = 0; m < vectors; ++m) {
    const int64_t p0 = 16 * m, s0 = p0 / wo * v.Wv + p0 % wo;
    start[m] = s0;
    for (int q = 0; q < 16; ++q) {
      const int64_t p = std::min(p0 + q, positions - 1);  // lanes past the block are not stored
      const int64_t at = p / wo * v.Wv + p % wo - s0;
      lanes[32 * m + 2 * q] = int16_t(at);
      lanes[32 * m + 2 * q + 1] = int16_t(at + s.dil_w);
    }
  }
}

// One image's `channels` planes (an image of `values` values) as the pair blocks
// above, into z. Vector by vector (its gather lanes held in a register) through
// every block; loads are masked only near the image's end, stores only for a
// block's last vector, which must not reach into the next block (written before it).
[[gnu::noinline]] void pair_rows16(const Conv2dShape& s, const Direct& v, const u16* x, int64_t channels,
                                   int64_t values, int64_t vectors, const int64_t* start, const int16_t* lanes,
                                   uint32_t* z) {
  // Locals, not fields: the vector stores may alias anything, and the fields would
  // be reloaded after each.
  const int64_t T = cdiv(s.kw, 2), kw = s.kw, block = v.Hv * s.w_out, plane = v.plane, dw = s.dil_w;
  for (int64_t m = 0; m < vectors; ++m) {
    const __m512i idx = _mm512_loadu_si512(lanes + 32 * m);
    const int64_t s0 = start[m];
    const __mmask16 tail = low16(block - 16 * m);  // the last vector stops at its block's end
    uint32_t* zm = z + 16 * m;
    for (int64_t ci = 0; ci < channels; ++ci)
      for (int64_t t = 0; t < T; ++t, zm += block) {
        const __mmask32 keep = 2 * t + 1 >= kw ? 0x55555555u : 0xffffffffu;  // a lone tap: partner lanes 0
        const int64_t at = ci * plane + 2 * t * dw + s0;
        __m512i lo, hi;
        load64(x + at, values - at, &lo, &hi);
        _mm512_mask_storeu_epi32(zm, tail, _mm512_maskz_permutex2var_epi16(keep, lo, idx, hi));
      }
  }
}

// Forward scratch (floats): the output grid [Mp][Pr] (rows of rs values: Wv, or
// w_out when compact), a group's pooled values and window bytes, the packed weight
// pairs [G][pairs][Mp], the bias [Mp], the copied image with its slack (bfloat16
// values, two a float), and when compact the image's pair rows with slack.
struct ForwardLayout16 {
  bool compact;
  int64_t Mp, Pn, Pr, rs, T, zplane, vectors, pairs, image, reach;
  int64_t grid, pooled, window, weights, bias, xcopy, z, start, lanes;  // float offsets
  int64_t total;
};

[[gnu::noinline]] ForwardLayout16 forward_layout16(const Args<u16>& a) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  ForwardLayout16 l;
  l.compact = compact_forward(s, v);
  l.Mp = round_up(d.cog, kRowStep);
  l.Pn = l.compact ? s.h_out * s.w_out : v.Pv;
  l.Pr = round_up(l.Pn, kPanel);
  l.rs = l.compact ? s.w_out : v.Wv;
  l.T = cdiv(s.kw, 2);
  l.zplane = v.Hv * s.w_out;
  l.vectors = l.compact ? cdiv(l.zplane, 16) : 0;
  l.pairs = d.cig * s.kh * (s.dil_w <= 16 ? cdiv(s.kw, 2) : s.kw);
  l.image = s.c_in * v.plane;
  // One past the furthest value read from an image's start (the pair rows, when
  // compact, are read only within their rows): the last pair's 32 values at its
  // last panel's second register.
  l.reach = l.compact || v.off.empty() ? 0 : (d.G - 1) * d.cig * v.plane + v.off.back() + l.Pr + 16;
  l.grid = 0;
  // The pooled values and window bytes of a group, with 16 lanes of slack.
  const int64_t pooled = d.cog * (s.h_out / 2) * (s.w_out / 2) + 16;
  l.pooled = l.grid + l.Mp * l.Pr;
  l.window = l.pooled + round_up(cdiv(pooled, 2), 16);
  l.weights = l.window + round_up(cdiv(pooled, 4), 16);
  l.bias = l.weights + round_up(d.G * l.pairs * l.Mp, 16);
  l.xcopy = l.bias + round_up(l.Mp, 16);
  l.z = l.xcopy + round_up(cdiv(std::max(l.image, l.reach), 2) + 16, 16);
  // When compact, the pair blocks: the last block's last pair rows end (kh - 1)*dil_h
  // + h_out = Hv rows after its start, and the last panel reads Pr - Pn pairs past
  // them. Then the gather table: each vector's start (int64) and 32 lanes (int16).
  l.start = l.z + (l.compact ? round_up(s.c_in * l.T * l.zplane + l.Pr - l.Pn, 16) : 0);
  l.lanes = l.start + 2 * l.vectors;
  l.total = l.lanes + 16 * l.vectors;
  return l;
}

int64_t forward_scratch16(const Args<u16>& a) { return forward_layout16(a).total; }

void forward_images16(const Args<u16>& a, int64_t lo, int64_t hi, float* ws) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  const ForwardLayout16 l = forward_layout16(a);
  TapPairs t = tap_pairs(s, d, v);
  float* grid = ws + l.grid;
  uint32_t* wp = reinterpret_cast<uint32_t*>(ws + l.weights);
  float* bias = ws + l.bias;
  u16* xcopy = reinterpret_cast<u16*>(ws + l.xcopy);
  u16* ybuf = reinterpret_cast<u16*>(ws + l.pooled);
  uint8_t* wbuf = reinterpret_cast<uint8_t*>(ws + l.window);
  uint32_t* z = reinterpret_cast<uint32_t*>(ws + l.z);
  int64_t* start = reinterpret_cast<int64_t*>(ws + l.start);
  int16_t* lanes16 = reinterpret_cast<int16_t*>(ws + l.lanes);
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t j = 0; j < l.pairs; ++j)
      for (int64_t i = 0; i < l.Mp; ++i) {
        const u16* wr = a.w + (g * d.cog + i) * d.K;
        wp[(g * l.pairs + j) * l.Mp + i] =
            i >= d.cog ? 0u : pair_bits(wr[t.k0[size_t(j)]], t.k1[size_t(j)] < 0 ? u16(0) : wr[t.k1[size_t(j)]]);
      }
  alignas(64) int16_t lanes[32];
  for (int q = 0; q < 16; ++q) lanes[2 * q] = int16_t(q), lanes[2 * q + 1] = int16_t(q + t.delta % 32);
  const __m512i idx = _mm512_load_si512(lanes);
  if (l.compact) {
    // Pair j = (ci, ky, pair of kx) of a group reads its channel's pair rows.
    for (size_t j = 0; j < t.off.size(); ++j) {
      const int64_t ci = t.k0[j] / (s.kh * s.kw), ky = t.k0[j] / s.kw % s.kh, kx = t.k0[j] % s.kw;
      t.off[j] = (ci * l.T + kx / 2) * l.zplane + ky * s.dil_h * s.w_out;
    }
    zero_n(z + s.c_in * l.T * l.zplane, l.Pr - l.Pn);
    pair_gather(s, v, l.vectors, start, lanes16);
  } else if (l.reach > l.image) {
    zero_n(xcopy + l.image, l.reach - l.image);
  }
  const int64_t ph = s.h_out / 2, pw = s.w_out / 2;
  for (int64_t i = lo; i < hi; ++i) {
    const u16* xi = a.x + i * d.x_img;
    if (v.padded) {
      pad_image(s, v, xi, xcopy);
      xi = xcopy;
    } else if (l.reach > (s.n - i) * l.image) {  // would read past the batch's last image
      copy_n(xcopy, xi, l.image);
      xi = xcopy;
    }
    if (l.compact)  // reads stop at the copy's end, or the batch's
      pair_rows16(s, v, xi, s.c_in, xi == xcopy ? l.image : (s.n - i) * l.image, l.vectors, start, lanes16, z);
    for (int64_t g = 0; g < d.G; ++g) {
      const float* init = nullptr;
      if (a.bias) {
        for (int64_t r = 0; r < l.Mp; ++r) bias[r] = r < d.cog ? bfloat16_bits_to_float(a.bias[g * d.cog + r]) : 0.f;
        init = bias;
      }
      const uint32_t* wg = wp + g * l.pairs * l.Mp;
      for (int64_t p0 = 0; p0 < l.Pr; p0 += kPanel)
        for (int64_t r0 = 0; r0 < l.Mp; r0 += 2 * kRowStep) {
          const float* in = init ? init + r0 : nullptr;
          float* c = grid + r0 * l.Pr + p0;
          const bool wide = l.Mp - r0 >= 2 * kRowStep;
          if (l.compact) {
            const uint32_t* zg = z + g * d.cig * l.T * l.zplane + p0;
            if (wide)
              forward_tile16<2 * kRowStep, true>(l.pairs, wg + r0, l.Mp, zg, t.off.data(), nullptr, idx, in, c, l.Pr);
            else
              forward_tile16<kRowStep, true>(l.pairs, wg + r0, l.Mp, zg, t.off.data(), nullptr, idx, in, c, l.Pr);
          } else {
            const u16* xg = xi + g * d.cig * v.plane + p0;
            if (wide)
              forward_tile16<2 * kRowStep, false>(l.pairs, wg + r0, l.Mp, xg, t.off.data(), t.mask.data(), idx, in, c,
                                                  l.Pr);
            else
              forward_tile16<kRowStep, false>(l.pairs, wg + r0, l.Mp, xg, t.off.data(), t.mask.data(), idx, in, c,
                                              l.Pr);
          }
        }
      if (a.relu_pool) {
        const int64_t o = (i * s.c_out + g * d.cog) * ph * pw;
        // Pooled into scratch with slack, then copied: the group's values and
        // window bytes are contiguous in y and window.
        const int64_t count = d.cog * ph * pw;
        pool_planes16(grid, d.cog, l.Pr, l.rs, s.h_out, s.w_out, ybuf, a.window ? wbuf : nullptr);
        copy_n(a.out + o, ybuf, count);
        if (a.window) copy_n(a.window + o, wbuf, count);
      } else {
        u16* yg = a.out + i * d.y_img + g * d.cog * d.P;
        for (int64_t co = 0; co < d.cog; ++co)
          if (l.compact)  // the plane's rows are consecutive, as in y
            store_row16(grid + co * l.Pr, yg + co * d.P, d.P);
          else
            for (int64_t oy = 0; oy < s.h_out; ++oy)
              store_row16(grid + co * l.Pr + oy * v.Wv, yg + co * d.P + oy * s.w_out, s.w_out);
      }
    }
  }
}

// Input gradient. gx[ci][ky*Wv + p] (in units of the dilations) collects, over
// output channels co and kernel columns kx, W[co][ci][ky][kx] * gy'[co][p - kx]: so
// a tile's rows are (ky, ci) (ky outermost: consecutive rows land in different
// channels, and one row's read-modify-write never waits on the store of the row
// before it) and its depth runs over (channel pair, kx), five times deeper than rows
// of single taps, so each row's sums are added into the grid a fifth as often. The
// B rows are z[cp][q] = (gy'[2cp][q], gy'[2cp + 1][q]), read shifted left by kx
// (zeros before the row and past Pv), over positions p < Pv + (kw - 1)*dil_w. Rows
// are padded to a multiple of 6 with zero weights whose offset points past the
// planes, into slack. Sums go to a float32 grid, rounded to bfloat16 once per image.
struct InputLayout16 {
  int64_t R, Rp, D, CP, Pe, lead, zs;     // rows, padded rows, depth, pairs, positions, z's lead and row stride
  int64_t weights, grid, grid_elems, rows, z;  // float offsets
  int64_t total;
};

InputLayout16 input_layout16(const Args<u16>& a) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  InputLayout16 l;
  l.R = s.kh * d.cig;
  l.Rp = round_up(l.R, kRowStep);
  l.CP = cdiv(d.cog, 2);
  l.D = l.CP * s.kw;
  l.Pe = round_up(v.Pv + (s.kw - 1) * s.dil_w, kPanel);
  l.lead = round_up((s.kw - 1) * s.dil_w, 16);
  l.zs = l.lead + l.Pe;
  l.weights = 0;
  l.grid = round_up(d.G * l.D * l.Rp, 16);
  l.grid_elems = s.c_in * v.plane + l.Pe + kPanel;
  l.rows = l.grid + round_up(l.grid_elems, 16);
  l.z = l.rows + round_up(l.CP * l.Pe, 16);  // gy' rows: 2 CP rows of Pe bfloat16 values
  l.total = l.z + l.CP * l.zs;
  return l;
}

int64_t backward_input_scratch16(const Args<u16>& a) { return input_layout16(a).total; }

void backward_input_images16(const Args<u16>& a, int64_t lo, int64_t hi, float* ws) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  const InputLayout16 l = input_layout16(a);
  uint32_t* wtp = reinterpret_cast<uint32_t*>(ws + l.weights);  // [G][D][Rp]
  float* grid = ws + l.grid;
  u16* rows = reinterpret_cast<u16*>(ws + l.rows);
  uint32_t* z = reinterpret_cast<uint32_t*>(ws + l.z);
  const int64_t taps = s.kh * s.kw;
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t cp = 0; cp < l.CP; ++cp)
      for (int64_t kx = 0; kx < s.kw; ++kx)
        for (int64_t r = 0; r < l.Rp; ++r) {
          const int64_t c0 = g * d.cog + 2 * cp, ky = r / d.cig, ci = r % d.cig;
          const int64_t k = ci * taps + ky * s.kw + kx;  // the tap's index in a weight row
          const u16 lo16 = r < l.R ? a.w[c0 * d.K + k] : u16(0);
          const u16 hi16 = r < l.R && 2 * cp + 1 < d.cog ? a.w[(c0 + 1) * d.K + k] : u16(0);
          wtp[(g * l.D + cp * s.kw + kx) * l.Rp + r] = pair_bits(lo16, hi16);
        }
  std::vector<int64_t> boff(size_t(l.D)), soff(size_t(l.Rp));
  for (int64_t cp = 0; cp < l.CP; ++cp)
    for (int64_t kx = 0; kx < s.kw; ++kx) boff[size_t(cp * s.kw + kx)] = cp * l.zs + l.lead - kx * s.dil_w;
  for (int64_t cp = 0; cp < l.CP; ++cp) zero_n(z + cp * l.zs, l.lead);
  // Lanes of the pair interleave: r0[q], r1[q] for q in the low (then high) 16.
  alignas(64) int16_t lanes_lo[32], lanes_hi[32];
  for (int q = 0; q < 16; ++q) {
    lanes_lo[2 * q] = int16_t(q), lanes_lo[2 * q + 1] = int16_t(32 + q);
    lanes_hi[2 * q] = int16_t(16 + q), lanes_hi[2 * q + 1] = int16_t(48 + q);
  }
  const __m512i idx_lo = _mm512_load_si512(lanes_lo), idx_hi = _mm512_load_si512(lanes_hi);
  for (int64_t i = lo; i < hi; ++i) {
    zero_n(grid, l.grid_elems);
    for (int64_t g = 0; g < d.G; ++g) {
      gy_rows16(a, i, g * d.cog, d.cog, rows, l.Pe);
      if (d.cog % 2) zero_n(rows + d.cog * l.Pe, l.Pe);
      for (int64_t cp = 0; cp < l.CP; ++cp) {
        const u16* r0 = rows + 2 * cp * l.Pe;
        const u16* r1 = r0 + l.Pe;
        uint32_t* zr = z + cp * l.zs + l.lead;
        for (int64_t p = 0; p < l.Pe; p += kValues) {
          const __m512i u0 = _mm512_loadu_si512(r0 + p), u1 = _mm512_loadu_si512(r1 + p);
          _mm512_storeu_si512(zr + p, _mm512_permutex2var_epi16(u0, idx_lo, u1));
          _mm512_storeu_si512(zr + p + 16, _mm512_permutex2var_epi16(u0, idx_hi, u1));
        }
      }
      float* gxg = grid + g * d.cig * v.plane;
      const int64_t slack = (s.c_in - g * d.cig) * v.plane;  // padding rows add their zeros here
      for (int64_t r = 0; r < l.Rp; ++r)
        soff[size_t(r)] = r < l.R ? r % d.cig * v.plane + r / d.cig * s.dil_h * v.Wv : slack;
      const uint32_t* wg = wtp + g * l.D * l.Rp;
      for (int64_t p0 = 0; p0 < l.Pe; p0 += kPanel)
        for (int64_t r0 = 0; r0 < l.Rp; r0 += 2 * kRowStep) {
          if (l.Rp - r0 >= 2 * kRowStep)
            scatter_tile16<2 * kRowStep>(l.D, wg + r0, l.Rp, z + p0, boff.data(), gxg + p0, soff.data() + r0);
          else
            scatter_tile16<kRowStep>(l.D, wg + r0, l.Rp, z + p0, boff.data(), gxg + p0, soff.data() + r0);
        }
    }
    if (!v.padded) {  // the grid's planes are the image's, back to back: one call
      store_row16(grid, a.out + i * d.x_img, d.x_img);
      continue;
    }
    for (int64_t ci = 0; ci < s.c_in; ++ci)
      for (int64_t iy = 0; iy < s.h; ++iy)
        store_row16(grid + ci * v.plane + (iy + s.pad_h) * v.Wv + s.pad_w, a.out + i * d.x_img + (ci * s.h + iy) * s.w,
                    s.w);
  }
}

constexpr DirectBf16Kernels kBf16{"avx512_bf16",          forward_images16,       backward_input_images16,
                                  weight_images16,        forward_scratch16,      backward_input_scratch16,
                                  weight_scratch16,       weight_units<Bf16Weight>};

}  // namespace
}  // namespace ember::cpu::conv2d_detail
EMBER_ISA_END

namespace ember::cpu::conv2d_detail {
const DirectBf16Kernels* direct_kernels_bf16() { return &kBf16; }
}  // namespace ember::cpu::conv2d_detail

#else

namespace ember::cpu::conv2d_detail {
const DirectBf16Kernels* direct_kernels_bf16() { return nullptr; }
}  // namespace ember::cpu::conv2d_detail

#endif
