// The column-schedule row loops of column_rows.h with AVX-512: the results of 64
// (sums; the half types' moments and extremes), or 16 (float32 extremes; float32
// moments, as two vectors of 8 doubles) adjacent outputs stay in registers while
// every row of the batch (float32) or span (the half types, up to 64 rows) is folded
// in, then go back once; a masked last vector instead of a scalar tail. The extremes
// and moments also read float16 and bfloat16 rows, widened to float32 in registers
// as they are loaded. var's multiplies and adds stay separate
// (no FMA: the baseline's roundings); the extremes' one FMA, v * 0 + seen, only
// detects a NaN or an infinity.
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/column_rows.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
namespace ember::cpu::column_rows_detail {
namespace {

inline __mmask16 first16(int64_t k) { return k >= 16 ? __mmask16(0xffff) : __mmask16((1u << k) - 1); }

// How far ahead in each row the loops ask for data: 384 floats (24 cache lines).
// The batch reads 8 rows 16 KiB or more apart, and the hardware's prefetchers alone
// kept too few of their lines in flight: with a prefetch this far ahead of each row,
// a harness of these loops on both threads of [4096, 4096] read 100-107 GB/s for the
// sum over dim 0 (78-81 without), 67-72 for the max with positions (55-57) and
// 53-56 for var (44-47); 128 floats ahead gained less, 768 lost some.
// A prefetch never faults, so reading past a row's end is harmless. 16-bit rows are
// fetched kAhead16 bytes ahead (192 values, 6 lines): at the float32 distance, 1536
// bytes, bfloat16 var over dim 0 read 27 GB/s against 34-38, and 128, 256, 512 and
// 3072 bytes read no better than 384. (Fetching each line once instead of twice
// changed nothing measurable; into L2 only, float32's max lost a fifth.)
constexpr int64_t kAhead = 384;
constexpr int64_t kAhead16 = 384;
template <class S>
inline void ahead(const S* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p) + (sizeof(S) == 2 ? kAhead16 : kAhead * 4), _MM_HINT_T0);
}

// The element types a row may hold: float32, or the bits of a 16-bit float, which
// loads widen to float32 (exactly): bfloat16 is a float32's top half, float16 goes
// through vcvtph2ps.
struct F32 {
  using S = float;
};
struct BF16 {
  using S = uint16_t;
};
struct F16 {
  using S = uint16_t;
};

// Loads of a whole vector, or of the lanes of mask m (zero elsewhere) in a row's
// last, partial one: on this CPU a masked load costs more than a plain one (var over
// dim 0 read 43 GB/s with masked loads throughout, 55 with plain ones in full chunks).
template <bool kFull, class E = F32>
inline __m512 load16(const typename E::S* p, __mmask16 m) {
  if constexpr (std::is_same_v<E, F32>) {
    return kFull ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  } else {
    const __m256i h = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)) : _mm256_maskz_loadu_epi16(m, p);
    if constexpr (std::is_same_v<E, F16>) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}
template <bool kFull, class E = F32>
inline __m256 load8(const typename E::S* p, __mmask8 m) {
  if constexpr (std::is_same_v<E, F32>) {
    return kFull ? _mm256_loadu_ps(p) : _mm256_maskz_loadu_ps(m, p);
  } else {
    const __m128i h = kFull ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)) : _mm_maskz_loadu_epi16(m, p);
    if constexpr (std::is_same_v<E, F16>) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}
template <bool kFull>
inline __m512d load8d(const double* p, __mmask8 m) {
  return kFull ? _mm512_loadu_pd(p) : _mm512_maskz_loadu_pd(m, p);
}
template <bool kFull>
inline void store8d(double* p, __mmask8 m, __m512d v) {
  if (kFull) _mm512_storeu_pd(p, v);
  else _mm512_mask_storeu_pd(p, m, v);
}
inline __mmask8 first8(int64_t k) { return k >= 8 ? __mmask8(0xff) : __mmask8((1u << k) - 1); }

// Each lane adds its rows in order: the same roundings as the baseline's
// part[j] += row[j], one row after another. (Where two NaNs meet, this keeps part's;
// the baseline keeps whichever operand the compiler put first.)
void add_rows_f32(const float* const* rows, int nrows, float* part, int64_t n) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512 a = _mm512_loadu_ps(part + j), b = _mm512_loadu_ps(part + j + 16);
    __m512 c = _mm512_loadu_ps(part + j + 32), d = _mm512_loadu_ps(part + j + 48);
    for (int r = 0; r < nrows; ++r) {
      const float* s = rows[r] + j;
      ahead(s);
      ahead(s + 16);
      ahead(s + 32);
      ahead(s + 48);
      a = _mm512_add_ps(a, _mm512_loadu_ps(s));
      b = _mm512_add_ps(b, _mm512_loadu_ps(s + 16));
      c = _mm512_add_ps(c, _mm512_loadu_ps(s + 32));
      d = _mm512_add_ps(d, _mm512_loadu_ps(s + 48));
    }
    _mm512_storeu_ps(part + j, a);
    _mm512_storeu_ps(part + j + 16, b);
    _mm512_storeu_ps(part + j + 32, c);
    _mm512_storeu_ps(part + j + 48, d);
  }
  for (; j + 16 <= n; j += 16) {
    __m512 a = _mm512_loadu_ps(part + j);
    for (int r = 0; r < nrows; ++r) {
      ahead(rows[r] + j);
      a = _mm512_add_ps(a, _mm512_loadu_ps(rows[r] + j));
    }
    _mm512_storeu_ps(part + j, a);
  }
  if (j < n) {
    const __mmask16 m = first16(n - j);
    __m512 a = _mm512_maskz_loadu_ps(m, part + j);
    for (int r = 0; r < nrows; ++r) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, rows[r] + j));
    _mm512_mask_storeu_ps(part + j, m, a);
  }
}

// 16 columns at a time, exactly: their best values in one vector, their positions
// in two (8 int64 lanes each, the low and high halves of the win mask), NaN tracked
// by compare. The fallback of extreme_rows for the columns whose rows hold a NaN or
// an infinity.
template <bool kMax, class E>
void extreme_rows_exact(const typename E::S* const* rows, int nrows, int64_t pos0, float* best, int64_t* pos,
                        int64_t j, __mmask16 m) {
  constexpr int kBeyond = kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
  __m512 b = _mm512_maskz_loadu_ps(m, best + j);
  __m512i lo = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(m), pos + j);
  __m512i hi = _mm512_maskz_loadu_epi64(static_cast<__mmask8>(m >> 8), pos + j + 8);
  for (int r = 0; r < nrows; ++r) {
    ahead(rows[r] + j);
    const __m512 v = load16<false, E>(rows[r] + j, m);
    const __mmask16 best_nan = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    const __mmask16 win = static_cast<__mmask16>(
        (_mm512_cmp_ps_mask(v, b, kBeyond) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) & ~best_nan & m);
    const __m512i at = _mm512_set1_epi64(pos0 + r);
    b = _mm512_mask_mov_ps(b, win, v);
    lo = _mm512_mask_mov_epi64(lo, static_cast<__mmask8>(win), at);
    hi = _mm512_mask_mov_epi64(hi, static_cast<__mmask8>(win >> 8), at);
  }
  _mm512_mask_storeu_ps(best + j, m, b);
  _mm512_mask_storeu_epi64(pos + j, static_cast<__mmask8>(m), lo);
  _mm512_mask_storeu_epi64(pos + j + 8, static_cast<__mmask8>(m >> 8), hi);
}

// 16 G columns at a time (G vectors), four instructions a row and vector: compare,
// take the value, take the row's index (int32, within the batch), and v * 0 +
// nan_seen, which turns NaN if v is a NaN or an infinity. The compare is ordered, so
// a NaN already held stays (no value is beyond it) and a NaN in a row never enters:
// such vectors of columns (rare) are done again by extreme_rows_exact from the state
// they had. The extreme_rows_exact form ran at half the speed: its NaN masks and two
// 64-bit blends a row made it bound by instructions, not memory (both threads of
// [4096, 4096] max over dim 0 read 25-29 GB/s against 60-75 for the sum in the same
// harness; this form 49-56). float32 goes 16 columns at a time in batches of 8 rows
// (two chains of 16 columns were no faster); the 16-bit types 64 at a time down
// spans of up to 64 rows, so that the positions, 8 bytes a column, are stored once
// a span instead of once every 8 rows.
template <int G, bool kMax, bool kFull, class E>
void extreme_group(const typename E::S* const* rows, int nrows, int64_t pos0, float* best, int64_t* pos, int64_t j0,
                   __mmask16 last) {
  constexpr int kBeyond = kMax ? _CMP_GT_OQ : _CMP_LT_OQ;
  constexpr int kPerLine = sizeof(typename E::S) == 2 ? 2 : 1;  // vectors a 64-byte line holds
  const __m512 zero = _mm512_setzero_ps();
  __m512 b[G], nan_seen[G];
  __m512i row[G];
  __mmask16 m[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    m[g] = g + 1 == G ? last : __mmask16(0xffff);
    b[g] = load16<kFull>(best + j0 + 16 * g, m[g]);
    row[g] = _mm512_set1_epi32(-1);  // the batch's row that won, or -1
    nan_seen[g] = zero;
  }
  for (int r = 0; r < nrows; ++r) {
    const __m512i at = _mm512_set1_epi32(r);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const typename E::S* p = rows[r] + j0 + 16 * g;
      if (g % kPerLine == 0) ahead(p);
      const __m512 v = load16<kFull, E>(p, m[g]);
      const __mmask16 win = _mm512_cmp_ps_mask(v, b[g], kBeyond);
      nan_seen[g] = _mm512_fmadd_ps(v, zero, nan_seen[g]);
      b[g] = _mm512_mask_blend_ps(win, b[g], v);
      row[g] = _mm512_mask_blend_epi32(win, row[g], at);
    }
  }
  const __m512i start = _mm512_set1_epi64(pos0);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const int64_t j = j0 + 16 * g;
    if (_mm512_cmp_ps_mask(nan_seen[g], nan_seen[g], _CMP_UNORD_Q) != 0) {
      extreme_rows_exact<kMax, E>(rows, nrows, pos0, best, pos, j, m[g]);
      continue;
    }
    const __mmask16 won = _mm512_mask_cmpge_epi32_mask(m[g], row[g], _mm512_setzero_si512());
    const __m512i lo = _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(row[g])));
    const __m512i hi = _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(row[g], 1)));
    if (kFull) _mm512_storeu_ps(best + j, b[g]);
    else _mm512_mask_storeu_ps(best + j, m[g], b[g]);
    _mm512_mask_storeu_epi64(pos + j, static_cast<__mmask8>(won), lo);
    _mm512_mask_storeu_epi64(pos + j + 8, static_cast<__mmask8>(won >> 8), hi);
  }
}

template <bool kMax, class E>
void extreme_rows(const typename E::S* const* rows, int nrows, int64_t pos0, float* best, int64_t* pos, int64_t n) {
  int64_t j = 0;
  if constexpr (!std::is_same_v<E, F32>)
    for (; j + 64 <= n; j += 64) extreme_group<4, kMax, true, E>(rows, nrows, pos0, best, pos, j, 0xffff);
  for (; j + 16 <= n; j += 16) extreme_group<1, kMax, true, E>(rows, nrows, pos0, best, pos, j, 0xffff);
  if (j < n) extreme_group<1, kMax, false, E>(rows, nrows, pos0, best, pos, j, first16(n - j));
}

template <class E>
void extreme_rows_of(const typename E::S* const* rows, int nrows, int64_t pos0, bool max, float* best, int64_t* pos,
                     int64_t n) {
  if (max) extreme_rows<true, E>(rows, nrows, pos0, best, pos, n);
  else extreme_rows<false, E>(rows, nrows, pos0, best, pos, n);
}

// a + b and a * b, each rounded: GCC writes the plain intrinsics as vector
// arithmetic and would contract a multiply and an add into an FMA (one rounding, the
// baseline has two); the embedded-rounding forms are never contracted.
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
inline __m512d add(__m512d a, __m512d b) { return _mm512_add_round_pd(a, b, kNearest); }
inline __m512d mul(__m512d a, __m512d b) { return _mm512_mul_round_pd(a, b, kNearest); }

// 16 columns at a time, as two vectors of 8 doubles each: reduce_columns.h's
// moments_rows_baseline in the same operations (the shift, s and q in registers for
// the batch, then the merge into mean and m2).
template <bool kFull, class E>
void moments_chunk(const typename E::S* const* rows, int nrows, int64_t count0, const BatchWeights& bw, double* mean,
                   double* m2, int64_t j, __mmask8 ml, __mmask8 mh) {
  const __m512d zero = _mm512_setzero_pd();
  const __m512d k0 = count0 == 0 ? _mm512_cvtps_pd(load8<kFull, E>(rows[0] + j, ml)) : load8d<kFull>(mean + j, ml);
  const __m512d k1 =
      count0 == 0 ? _mm512_cvtps_pd(load8<kFull, E>(rows[0] + j + 8, mh)) : load8d<kFull>(mean + j + 8, mh);
  __m512d s0 = zero, s1 = zero, q0 = zero, q1 = zero;
  for (int r = 0; r < nrows; ++r) {
    ahead(rows[r] + j);
    const __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(load8<kFull, E>(rows[r] + j, ml)), k0);
    const __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(load8<kFull, E>(rows[r] + j + 8, mh)), k1);
    s0 = _mm512_add_pd(s0, d0);
    s1 = _mm512_add_pd(s1, d1);
    q0 = add(q0, mul(d0, d0));
    q1 = add(q1, mul(d1, d1));
  }
  const __m512d inv_r = _mm512_set1_pd(bw.inv_r), w = _mm512_set1_pd(bw.w), c = _mm512_set1_pd(bw.c);
  const __m512d e0 = mul(s0, inv_r), e1 = mul(s1, inv_r);
  store8d<kFull>(mean + j, ml, add(k0, mul(e0, w)));
  store8d<kFull>(mean + j + 8, mh, add(k1, mul(e1, w)));
  // max(0, own) keeps a NaN: vmaxpd returns its second operand when either is NaN.
  const __m512d own0 = _mm512_max_pd(zero, _mm512_sub_pd(q0, mul(s0, e0)));
  const __m512d own1 = _mm512_max_pd(zero, _mm512_sub_pd(q1, mul(s1, e1)));
  store8d<kFull>(m2 + j, ml, add(load8d<kFull>(m2 + j, ml), add(own0, mul(mul(e0, e0), c))));
  store8d<kFull>(m2 + j + 8, mh, add(load8d<kFull>(m2 + j + 8, mh), add(own1, mul(mul(e1, e1), c))));
}

template <class E>
void moments_rows_of(const typename E::S* const* rows, int nrows, int64_t count0, double* mean, double* m2,
                     int64_t n) {
  const BatchWeights bw = batch_weights(count0, nrows);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) moments_chunk<true, E>(rows, nrows, count0, bw, mean, m2, j, 0xff, 0xff);
  if (j < n)
    moments_chunk<false, E>(rows, nrows, count0, bw, mean, m2, j, first8(n - j), first8(n - j > 8 ? n - j - 8 : 0));
}

inline __m512 add(__m512 a, __m512 b) { return _mm512_add_round_ps(a, b, kNearest); }
inline __m512 sub(__m512 a, __m512 b) { return _mm512_sub_round_ps(a, b, kNearest); }
inline __m512 mul(__m512 a, __m512 b) { return _mm512_mul_round_ps(a, b, kNearest); }
inline __m512d sub(__m512d a, __m512d b) { return _mm512_sub_round_pd(a, b, kNearest); }

// moments_chunk for the (rare) half columns with a NaN, an infinity or an overflow:
// out of line, so that the hot loop below does not carry a copy of it.
template <class E>
[[gnu::noinline]] void moments_chunk_double(const uint16_t* const* rows, int nrows, int64_t count0,
                                            const BatchWeights& bw, double* mean, double* m2, int64_t j, __mmask16 m) {
  moments_chunk<false, E>(rows, nrows, count0, bw, mean, m2, j, static_cast<__mmask8>(m), static_cast<__mmask8>(m >> 8));
}

// A row's 16 G columns j0... of float16 or bfloat16 as float32, in v[0..G). With
// kSplit (bfloat16, G = 4, whole vectors), two 64-byte loads of 32 values each are
// split by one instruction a vector: x << 16 widens the even columns, x & 0xffff0000
// the odd ones, so v holds columns 0, 2, ..., 30; 1, 3, ..., 31; 32, 34, ...; 33,
// 35, .... (A zero-extend and a shift per 16 values, the other form, go through
// the shuffle port: a harness of the span loop read 35 GB/s that way against 50.)
template <int G, bool kFull, class E, bool kSplit>
inline void load_row(const uint16_t* p, const __mmask16* m, __m512* v) {
  ahead(p);
  if constexpr (G == 4) ahead(p + 32);
  if constexpr (kSplit) {
    static_assert(G == 4 && kFull && std::is_same_v<E, BF16>);
    const __m512i odd = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m512i x = _mm512_loadu_si512(p + 32 * h);
      v[2 * h] = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
      v[2 * h + 1] = _mm512_castsi512_ps(_mm512_and_si512(x, odd));
    }
  } else {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) v[g] = load16<kFull, E>(p + 16 * g, m[g]);
  }
}

// (a, b) <- lanes ia and ib of the 32 lanes a, b: a pair of vectors permuted.
inline void permute_pair(__m512& a, __m512& b, __m512i ia, __m512i ib) {
  const __m512 x = _mm512_permutex2var_ps(a, ia, b), y = _mm512_permutex2var_ps(a, ib, b);
  a = x;
  b = y;
}
// The columns of a kSplit pair (even, odd) back in order, or out of it.
inline void interleave(__m512& even, __m512& odd) {
  permute_pair(even, odd, _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0),
               _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8));
}
inline void deinterleave(__m512& first, __m512& second) {
  permute_pair(first, second, _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0),
               _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1));
}

// 16 G columns of a span of float16 or bfloat16 rows (up to kHalfSpanRows) at a
// time, G vectors so that G chains of adds are in flight: reduce_columns.h's
// moments_rows_half in the same operations. The shift, d, the sub-batches' s8 and
// q8 and the span's s and q are float32, 16 lanes to a vector, where moments_chunk
// widens every value to double; the one merge is in double. Columns whose q is not
// finite (a NaN or an infinity in the span, or a bfloat16 deviation past 1.8e19,
// whose square overflows float32) are merged by moments_chunk_double instead, from
// the state they had. With kSplit the lanes hold columns out of order (load_row)
// until the merge puts them back.
template <int G, bool kFull, class E, bool kSplit>
void moments_span_half(const uint16_t* const* rows, int nrows, int64_t count0, const BatchWeights& bw, double* mean,
                       double* m2, int64_t j0, __mmask16 last) {
  constexpr int kSub = kMaxRows;
  __m512d held[G][2];
  __m512 k[G], s[G], q[G], v[G];
  __mmask16 m[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    m[g] = g + 1 == G ? last : __mmask16(0xffff);
    s[g] = q[g] = _mm512_setzero_ps();
  }
  if (count0 == 0) {  // the float32 mean of min(16, R) rows spread over the span
    const int first = nrows < kHalfShiftRows ? nrows : kHalfShiftRows;
    load_row<G, kFull, E, kSplit>(rows[0] + j0, m, k);
    for (int i = 1; i < first; ++i) {
      load_row<G, kFull, E, kSplit>(rows[i * nrows / first] + j0, m, v);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) k[g] = add(k[g], v[g]);
    }
    const __m512 count = _mm512_set1_ps(static_cast<float>(first));
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) k[g] = _mm512_div_round_ps(k[g], count, kNearest);
  } else {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const int64_t j = j0 + 16 * g;
      held[g][0] = load8d<kFull>(mean + j, static_cast<__mmask8>(m[g]));
      held[g][1] = load8d<kFull>(mean + j + 8, static_cast<__mmask8>(m[g] >> 8));
      k[g] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(held[g][0])), _mm512_cvtpd_ps(held[g][1]), 1);
    }
    if constexpr (kSplit) {
      deinterleave(k[0], k[1]);
      deinterleave(k[2], k[3]);
    }
  }
  for (int r0 = 0; r0 < nrows; r0 += kSub) {
    const int r1 = nrows - r0 < kSub ? nrows : r0 + kSub;
    __m512 s8[G], q8[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) s8[g] = q8[g] = _mm512_setzero_ps();
    for (int r = r0; r < r1; ++r) {
      load_row<G, kFull, E, kSplit>(rows[r] + j0, m, v);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const __m512 d = sub(v[g], k[g]);
        s8[g] = add(s8[g], d);
        q8[g] = add(q8[g], mul(d, d));
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      s[g] = add(s[g], s8[g]);
      q[g] = add(q[g], q8[g]);
    }
  }
  if constexpr (kSplit) {
    for (int g = 0; g < G; g += 2) {
      interleave(k[g], k[g + 1]);
      interleave(s[g], s[g + 1]);
      interleave(q[g], q[g + 1]);
    }
  }
  const __m512d inv_r = _mm512_set1_pd(bw.inv_r), w = _mm512_set1_pd(bw.w), c = _mm512_set1_pd(bw.c);
  const __m512d zero = _mm512_setzero_pd();
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const int64_t j = j0 + 16 * g;
    const __mmask16 odd = _mm512_mask_cmp_ps_mask(m[g], q[g], inf, _CMP_NLT_UQ);  // q is >= 0, or NaN
    __m512d new_mean[2], new_m2[2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const auto part = [&](__m512 x) {
        return _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(x, 1) : _mm512_castps512_ps256(x));
      };
      const __m512d kd = part(k[g]), sd = part(s[g]), qd = part(q[g]);
      const __m512d before = count0 == 0 ? kd : held[g][h];
      const __m512d e = mul(sd, inv_r);
      const __m512d delta = add(sub(kd, before), e);
      new_mean[h] = add(before, mul(delta, w));
      const __m512d own = _mm512_max_pd(zero, sub(qd, mul(sd, e)));
      new_m2[h] = add(load8d<kFull>(m2 + j + 8 * h, static_cast<__mmask8>(m[g] >> (8 * h))),
                      add(own, mul(mul(delta, delta), c)));
    }
    if (odd) moments_chunk_double<E>(rows, nrows, count0, bw, mean, m2, j, m[g]);
    const __mmask16 keep = static_cast<__mmask16>(m[g] & ~odd);
    _mm512_mask_storeu_pd(mean + j, static_cast<__mmask8>(keep), new_mean[0]);
    _mm512_mask_storeu_pd(mean + j + 8, static_cast<__mmask8>(keep >> 8), new_mean[1]);
    _mm512_mask_storeu_pd(m2 + j, static_cast<__mmask8>(keep), new_m2[0]);
    _mm512_mask_storeu_pd(m2 + j + 8, static_cast<__mmask8>(keep >> 8), new_m2[1]);
  }
}

// A span of rows: 64 columns at a time (one strip of 128 bytes a row, down all the
// span's rows, before the next), then 16 at a time with masked loads.
template <class E>
void moments_rows_half(const uint16_t* const* rows, int nrows, int64_t count0, double* mean, double* m2, int64_t n) {
  const BatchWeights bw = batch_weights(count0, nrows);
  constexpr bool kSplit = std::is_same_v<E, BF16>;
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) moments_span_half<4, true, E, kSplit>(rows, nrows, count0, bw, mean, m2, j, 0xffff);
  for (; j < n; j += 16) moments_span_half<1, false, E, false>(rows, nrows, count0, bw, mean, m2, j, first16(n - j));
}

constexpr ColumnRowKernels kSet = {"avx512",
                                   add_rows_f32,
                                   extreme_rows_of<F32>,
                                   moments_rows_of<F32>,
                                   extreme_rows_of<F16>,
                                   extreme_rows_of<BF16>,
                                   moments_rows_half<F16>,
                                   moments_rows_half<BF16>};

}  // namespace
}  // namespace ember::cpu::column_rows_detail
EMBER_ISA_END

namespace ember::cpu::column_rows_detail {
const ColumnRowKernels* column_row_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::column_rows_detail

#else

namespace ember::cpu::column_rows_detail {
const ColumnRowKernels* column_row_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::column_rows_detail

#endif
