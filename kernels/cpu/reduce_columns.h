// The column schedule's running results (reduce.cpp's run_columns): a reduction whose
// innermost kept dim is contiguous and whose reduced dims are all strided (summing or
// taking the max over the batch dim, say) visits whole row segments of up to
// kColumnBlock adjacent outputs, one reduced position after another, so memory is
// read in order. Walking each output's column alone instead touches a new line for
// every value: var and max over dim 0 of [4096, 4096] float32 read 0.6-0.7 GB/s that
// way. Each state holds n outputs' partial results; a later slice of the reduced
// range merges into an earlier one. reduce.cpp takes the sums and the extremes of
// every dtype and var of the floating ones; the half types' var and extremes and the
// 1-byte dtypes' extremes read their rows as float32 (see column_t). Internal to
// reduce.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/base/strided.h"
#include "kernels/cpu/column_rows.h"
#include "kernels/cpu/reduce_runs.h"

// Compiled at -O2 (with loops still vectorized where an epilogue is needed): the sums
// are instantiated for every dtype, and -O3's unrolling and loop versioning made this
// file's objects about twice the size, past the library's 5 MB budget
// (scripts/check-library-only). float32's hot loops are column_rows_avx512.cpp's.
#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O2", "vect-cost-model=cheap")
#endif
namespace ember::cpu::reduce_detail {

// Outputs one block covers: 16 KiB of float32 (all of a row of [N, 4096], so a slice
// streams long contiguous runs; 1024-wide blocks read 4 KiB pieces 16 KiB apart and
// ran at a third of the speed).
inline constexpr int64_t kColumnBlock = 4096;

// A state's arrays live in memory its caller provides (a thread's Scratch, so that a
// stream of calls allocates and page-faults once; a vector per state and call was
// trimmed back to the system and faulted in again every time, which halved sum over
// dim 0): carve() takes n zeroed values of U from mem and moves mem past them, 64-byte
// aligned; carved() is the room that takes.
template <class U>
constexpr size_t carved(int64_t n) {
  return (static_cast<size_t>(n) * sizeof(U) + 63) / 64 * 64;
}
template <class U>
U* carve(char*& mem, int64_t n) {
  U* p = reinterpret_cast<U*>(mem);
  std::fill(p, p + n, U{});
  mem += carved<U>(n);
  return p;
}

// f(row, r) for the reduced positions r in [r0, r1) in order, row pointing at the
// block's values at r: an odometer over the reduced dims, one division per dim at
// the start.
template <class T, class F>
void for_each_row(const ReduceGeometry& g, const T* base, int64_t r0, int64_t r1, F&& f) {
  if (r0 >= r1) return;  // an empty reduced dim has size 0: nothing to divide by
  int64_t idx[kMaxDims] = {};
  int64_t rem = r0;
  for (int d = g.red_ndim - 1; d >= 0; --d) {
    idx[d] = rem % g.red_sizes[d];
    rem /= g.red_sizes[d];
  }
  for (int64_t r = r0; r < r1; ++r) {
    int64_t off = 0;
    for (int d = 0; d < g.red_ndim; ++d) off += idx[d] * g.red_strides[d];
    f(base + off, r);
    for (int d = g.red_ndim - 1; d >= 0; --d) {
      if (++idx[d] < g.red_sizes[d]) break;
      idx[d] = 0;
    }
  }
}

// The type var and the extremes run a dtype's rows in: float32 for the half types
// and the 1-byte ones (int8, uint8, bool), which it holds exactly, so that their
// batches go through the float32 loops (column_rows.h's AVX-512 table widens half
// rows in registers as it loads them; otherwise blocks of rows are widened first),
// where walking each output's column alone read 0.3-0.8 GB/s; the dtype itself
// otherwise (int32 would round in float32).
template <class T>
using column_t = std::conditional_t<is_half_v<T> || sizeof(T) == 1, float, T>;

// dst[j] = src[j] widened to W, j in [0, n).
template <class W, class T>
void widen_row(const T* src, W* dst, int64_t n) {
  if constexpr (is_half_v<T>) load_to_float(src, dst, n);  // the vector conversions
  else std::copy(src, src + n, dst);
}

// Columns a widened batch holds: 8 rows of 512 float32 values are 16 KiB, which stay
// in L1 between the widening and the loop that reads them (whole 4096-wide rows, 128
// KiB, went through L2 and ran slower). The half types' var and extremes widen spans
// of up to 64 rows, 128 columns at a time (32 KiB).
inline constexpr int64_t kWidenCols = 512;
inline constexpr int64_t kWidenSpanCols = 128;

// Calls f(rows, c0, m) over a batch's columns [c0, c0 + m), rows[r][0] being column
// c0, with the rows as W (column_t<T>): rows of type W whole, narrower ones widened
// kCols columns at a time into room (kRows * kCols values), the rows' next columns
// prefetched meanwhile (AVX-512's loops read half rows themselves).
template <int kRows, int64_t kCols, class W, class T, class F>
void for_widened(const T* const* rows, int nrows, int64_t n, W* room, F&& f) {
  if constexpr (std::is_same_v<T, W>) {
    f(rows, 0, n);
  } else {
    const W* wide[kRows];
    for (int64_t c0 = 0; c0 < n; c0 += kCols) {
      const int64_t m = std::min(kCols, n - c0);
      for (int r = 0; r < nrows; ++r) {
        // The row's next columns are fetched meanwhile: the hardware's prefetchers
        // keep too few lines of 8 strided rows in flight (column_rows_avx512.cpp).
        const int64_t ahead = std::min(kCols, n - c0 - m);
        const char* next = reinterpret_cast<const char*>(rows[r] + c0 + m);
        for (int64_t b = 0; b < ahead * static_cast<int64_t>(sizeof(T)); b += 64) __builtin_prefetch(next + b);
        widen_row(rows[r] + c0, room + r * kCols, m);
        wide[r] = room + r * kCols;
      }
      f(wide, c0, m);
    }
  }
}

// A batch of float16 or bfloat16 rows as their bits, for column_rows.h's 16-bit loops.
template <class T>
const uint16_t* const* half_bits(const T* const* rows, int nrows, const uint16_t** out) {
  static_assert(is_half_v<T> && sizeof(T) == sizeof(uint16_t));
  for (int r = 0; r < nrows; ++r) out[r] = reinterpret_cast<const uint16_t*>(rows[r]);
  return out;
}

// Collects rows of consecutive positions into batches of up to kRows (kMaxRows for
// the loops of column_rows.h and var's baseline loop, kHalfSpanRows for the half
// types' var) and hands each batch to flush(rows, nrows, first position) when it is
// full or when the caller says it must end (`last`).
template <class T, int kRows = column_rows_detail::kMaxRows>
struct RowBatch {
  const T* rows[kRows];
  int nrows = 0;
  int64_t first = 0;

  template <class Flush>
  void add(const T* row, int64_t r, bool last, Flush&& flush) {
    if (nrows == 0) first = r;
    rows[nrows++] = row;
    if (nrows == kRows || last) {
      flush(rows, nrows, first);
      nrows = 0;
    }
  }
};

// Sums (sum, mean): rows are added into `part` in the compute type (float for float32
// and the half types, so the add vectorizes) and flushed into the double (or int64)
// sums every kFlush rows, which bounds the rounding error. float32 on a table of
// column_rows.h adds rows in batches that end at each flush, part held in registers:
// the same bits as the loop (but for which NaN's payload NaN + NaN keeps).
template <class T>
struct ColumnSums {
  int64_t n_ = 0;
  sum_acc_t<T>* acc = nullptr;

  ColumnSums() = default;
  static size_t bytes(int64_t n) { return carved<sum_acc_t<T>>(n); }
  ColumnSums(int64_t n, char* mem, bool) : n_(n), acc(carve<sum_acc_t<T>>(mem, n)) {}
  int64_t size() const { return n_; }

  void add(const ReduceGeometry& g, const T* base, int64_t r0, int64_t r1) {
    constexpr int64_t kFlush = 64;
    const int64_t n = size();
    acc_t<T> part[kColumnBlock] = {};
    const auto flush = [&] {
      for (int64_t j = 0; j < n; ++j) {
        acc[j] += part[j];
        part[j] = 0;
      }
    };
    const column_rows_detail::ColumnRowKernels* k = nullptr;
    if constexpr (std::is_same_v<T, float>) k = column_row_kernels();
    RowBatch<T> batch;
    for_each_row(g, base, r0, r1, [&](const T* src, int64_t r) {
      const bool at_flush = (r - r0 + 1) % kFlush == 0;
      if constexpr (std::is_integral_v<T>) {
        for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<int64_t>(src[j]);
        return;
      } else if constexpr (is_half_v<T>) {
        add_to_float(src, part, n);  // widened and added in one vector pass
      } else if constexpr (std::is_same_v<T, float>) {
        if (k) {
          batch.add(src, r, at_flush || r + 1 == r1,
                    [&](const float* const* rows, int nrows, int64_t) { k->add_rows_f32(rows, nrows, part, n); });
        } else {
          for (int64_t j = 0; j < n; ++j) part[j] += src[j];
        }
      } else {
        for (int64_t j = 0; j < n; ++j) part[j] += static_cast<acc_t<T>>(src[j]);
      }
      if (at_flush) flush();
    });
    if constexpr (!std::is_integral_v<T>) flush();
  }
  // Columns [j0, j1) of a later slice merged in (reduce.cpp merges ranges in parallel,
  // each on its own copy of the first slice's state).
  void merge(const ColumnSums& later, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) acc[j] += later.acc[j];
  }
  template <class A>
  void fill(int64_t j, A& a) const {
    a.sum = acc[j];
  }
};

// var: each batch of up to kMaxRows rows is folded into every column's running mean
// and m2 in double by moments_rows_baseline (the half types' spans of up to
// kHalfSpanRows rows in float32 sums by moments_rows_half, below; column_rows.h's AVX-512 loops do the same operations in
// the same order, so the bits are the same); slices merge pairwise
// (Moments::merge). NaN or an infinity makes the column's moments NaN, as in
// PyTorch. Each product and sum rounds on its own: no FMA contraction, which GCC and
// clang do under -march=native.
#if defined(__clang__)
#define EMBER_MOMENTS_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define EMBER_MOMENTS_NO_CONTRACT
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
// A batch of rows folded into n columns' running mean and m2, in double, each
// product and sum rounded on its own (no FMA). For each column: the shift K is the
// running mean, or the batch's first value when the column has none yet (count0 ==
// 0), so that the deviations d = x - K are small; s and q sum d and d * d over the
// batch; e = s * inv_r; then
//   mean = K + e * w,  m2 += (q - s * e, clamped at 0) + (e * e) * c,
// Chan et al.'s merge of the batch's moments (m2 of the batch = q - s e, which
// rounding may leave a hair below 0; NaN stays NaN) with the running ones. One
// subtract, two adds and a multiply a value where Welford's per-value update takes
// seven operations: the AVX-512 loop reads 62-65 GB/s this way against 53-56. An
// infinity gives inf - inf = NaN, as in PyTorch. Columns go 64 at a time, so that
// each line's loop runs across columns and vectorizes; each column's operations are
// in the order above either way.
//
// float64 values can overflow it: [1e308, -1e308] gives d = -inf, and deviations
// past 1e154 square to inf, then q - s e = inf - inf = NaN where the variance is inf.
// So a float64 column whose batch or running mean reaches 2^500 in magnitude (or
// holds a NaN or an infinity) is done again from the state it had, by Welford's
// update row by row on values scaled by 2^-520: no product can overflow there, an m2
// past the largest double becomes inf when scaled back, and the mean stays finite
// (float32 values never come near).
template <class T>
void moments_rows_baseline(const T* const* rows, int nrows, int64_t count0, double* mean, double* m2, int64_t n) {
  EMBER_MOMENTS_NO_CONTRACT
  constexpr int64_t kCols = 64;
  const column_rows_detail::BatchWeights bw = column_rows_detail::batch_weights(count0, nrows);
  for (int64_t j0 = 0; j0 < n; j0 += kCols) {
    const int64_t m = std::min(kCols, n - j0);
    bool huge[kCols] = {}, any_huge = false;
    double kept_mean[kCols], kept_m2[kCols];
    if constexpr (std::is_same_v<T, double>) {
      constexpr double kHuge = 0x1p500;
      if (count0 > 0)
        for (int64_t j = 0; j < m; ++j) huge[j] = !(std::fabs(mean[j0 + j]) < kHuge);
      for (int r = 0; r < nrows; ++r)  // row by row, so that the loop runs across columns
        for (int64_t j = 0; j < m; ++j) huge[j] |= !(std::fabs(rows[r][j0 + j]) < kHuge);
      for (int64_t j = 0; j < m; ++j) any_huge |= huge[j];
      if (any_huge)
        for (int64_t j = 0; j < m; ++j) {
          kept_mean[j] = mean[j0 + j];
          kept_m2[j] = m2[j0 + j];
        }
    }
    double shift[kCols], s[kCols] = {}, q[kCols] = {};
    for (int64_t j = 0; j < m; ++j) shift[j] = count0 == 0 ? static_cast<double>(rows[0][j0 + j]) : mean[j0 + j];
    for (int r = 0; r < nrows; ++r) {
      const T* x = rows[r] + j0;
      for (int64_t j = 0; j < m; ++j) {
        const double d = static_cast<double>(x[j]) - shift[j];
        s[j] = s[j] + d;
        const double dd = d * d;
        q[j] = q[j] + dd;
      }
    }
    for (int64_t j = 0; j < m; ++j) {
      const double e = s[j] * bw.inv_r;
      const double step = e * bw.w;
      mean[j0 + j] = shift[j] + step;
      const double se = s[j] * e;
      double own = q[j] - se;
      own = own < 0 ? 0 : own;
      const double ee = e * e;
      const double cross = ee * bw.c;
      const double add = own + cross;
      m2[j0 + j] = m2[j0 + j] + add;
    }
    if (!any_huge) continue;
    constexpr double kDown = 0x1p-520, kUp = 0x1p520;
    for (int64_t j = 0; j < m; ++j) {
      if (!huge[j]) continue;
      // A column's first batch (count0 == 0) starts from nothing, whatever the state holds.
      double mu = count0 == 0 ? 0.0 : kept_mean[j] * kDown, sq = count0 == 0 ? 0.0 : kept_m2[j];
      for (int r = 0; r < nrows; ++r) {
        const double x = static_cast<double>(rows[r][j0 + j]) * kDown;
        const double d = x - mu;
        mu += d * (1.0 / static_cast<double>(count0 + r + 1));
        sq += std::fabs(d * (x - mu)) * kUp * kUp;
      }
      mean[j0 + j] = mu * kUp;
      m2[j0 + j] = sq;
    }
  }
}

// The half types' span (float16 or bfloat16 rows widened to float32, exactly; up to
// kHalfSpanRows rows): the shift K, d, s and q in float32, then one merge in double,
// where moments_rows_baseline widens every value to double. For each column:
// - K is the running mean rounded to float32, or on a column's first span the float32
//   mean of m = min(16, R) rows spread over it (rows i * R / m: their sum, then divided
//   by m). q = own m2 + R (span mean - K)^2, and q's rounding errors scale with q,
//   which q - s * e then cancels down to own. A first row as K lets an outlier there
//   make q up to R times own; the first 8 rows, a cluster there up to R / 8 times
//   (measured on such data: 1.9e-5 and 4.4e-6 relative error in m2); m rows spread
//   over the span bound it at R / m = 4 and keep away from the first rows, which
//   sorted or trending data makes unlike the rest. (A later span's K is the running
//   mean of the 64 or more rows before it: a span mean far from it adds about as much
//   to the merged m2 as to q, so q's error stays small beside m2.)
// - d = x - K; each sub-batch of up to 8 rows sums d and d * d into s8 and q8 from 0,
//   which are then added to the span's s and q (two levels: 8 + 8 terms a chain, not 64).
// - The merge takes the span mean K + e (e = s / R) against the held mean M:
//     delta = (K - M) + e,  mean = M + delta * w,  m2 += (q - s * e, clamped at 0) + (delta * delta) * c,
//   (K - M is 0 on a first span, where M is taken to be K).
// A half column's variance is stored as float16 or bfloat16 (relative precision 2^-11
// or 2^-8); the float32 sums' error on m2 is measured in docs/kernels-cpu.md
// ("Reductions") and held by tests/kernels/test_reduce_runs.cpp. (PyTorch's CPU kernel
// keeps the half types' var in double, its CUDA kernel in float32.) A column whose q
// is not finite (a NaN or an infinity in its span, or a bfloat16 deviation past
// 1.8e19, whose square overflows float32) is merged by moments_rows_baseline instead,
// from the state it had. column_rows.h's AVX-512 loops do the same operations in the
// same order.
inline void moments_rows_half(const float* const* rows, int nrows, int64_t count0, double* mean, double* m2,
                              int64_t n) {
  EMBER_MOMENTS_NO_CONTRACT
  constexpr int64_t kCols = 64;
  constexpr int kSub = column_rows_detail::kMaxRows;
  const column_rows_detail::BatchWeights bw = column_rows_detail::batch_weights(count0, nrows);
  const int first = std::min(nrows, column_rows_detail::kHalfShiftRows);  // a first span's shift averages rows i * R / first
  for (int64_t j0 = 0; j0 < n; j0 += kCols) {
    const int64_t m = std::min(kCols, n - j0);
    float shift[kCols], s[kCols] = {}, q[kCols] = {};
    double held[kCols], new_mean[kCols], new_m2[kCols];
    for (int64_t j = 0; j < m; ++j) {
      if (count0 == 0) {
        float t = rows[0][j0 + j];
        for (int i = 1; i < first; ++i) t = t + rows[i * nrows / first][j0 + j];
        shift[j] = t / static_cast<float>(first);
      } else {
        shift[j] = static_cast<float>(mean[j0 + j]);
      }
      held[j] = count0 == 0 ? static_cast<double>(shift[j]) : mean[j0 + j];
    }
    for (int r0 = 0; r0 < nrows; r0 += kSub) {
      float s8[kCols] = {}, q8[kCols] = {};
      for (int r = r0; r < std::min(nrows, r0 + kSub); ++r) {
        const float* x = rows[r] + j0;
        for (int64_t j = 0; j < m; ++j) {
          const float d = x[j] - shift[j];
          s8[j] = s8[j] + d;
          const float dd = d * d;
          q8[j] = q8[j] + dd;
        }
      }
      for (int64_t j = 0; j < m; ++j) {
        s[j] = s[j] + s8[j];
        q[j] = q[j] + q8[j];
      }
    }
    bool odd[kCols], any_odd = false;
    for (int64_t j = 0; j < m; ++j) {
      odd[j] = !(q[j] < std::numeric_limits<float>::infinity());
      any_odd |= odd[j];
      const double k = shift[j], sd = s[j], qd = q[j];
      const double e = sd * bw.inv_r;
      const double delta = (k - held[j]) + e;
      const double step = delta * bw.w;
      new_mean[j] = held[j] + step;
      const double se = sd * e;
      double own = qd - se;
      own = own < 0 ? 0 : own;
      const double dd = delta * delta;
      const double cross = dd * bw.c;
      const double add = own + cross;
      new_m2[j] = m2[j0 + j] + add;
    }
    if (any_odd) {
      const float* block[column_rows_detail::kHalfSpanRows];
      for (int r = 0; r < nrows; ++r) block[r] = rows[r] + j0;
      moments_rows_baseline(block, nrows, count0, mean + j0, m2 + j0, m);
    }
    for (int64_t j = 0; j < m; ++j)
      if (!odd[j]) {
        mean[j0 + j] = new_mean[j];
        m2[j0 + j] = new_m2[j];
      }
  }
}

// The floating dtypes; the half types' spans read as float32 (by the 16-bit loops
// of column_rows.h, or widened in blocks by for_widened).
template <class T>
struct ColumnMoments {
  static_assert(is_floating_v<T>);
  using W = column_t<T>;
  static constexpr bool kWidens = !std::is_same_v<T, W>;
  // Rows folded in at once, and the columns of a widened block.
  static constexpr int kRows = is_half_v<T> ? column_rows_detail::kHalfSpanRows : column_rows_detail::kMaxRows;
  static constexpr int64_t kCols = is_half_v<T> ? kWidenSpanCols : kWidenCols;
  int64_t n_ = 0;
  int64_t count = 0;
  double* mean = nullptr;
  double* m2 = nullptr;
  W* room = nullptr;  // the widened batch (half types)

  ColumnMoments() = default;
  static size_t bytes(int64_t n) { return 2 * carved<double>(n) + (kWidens ? carved<W>(kRows * kCols) : 0); }
  ColumnMoments(int64_t n, char* mem, bool) : n_(n), mean(carve<double>(mem, n)), m2(carve<double>(mem, n)) {
    if constexpr (kWidens) room = reinterpret_cast<W*>(mem);  // written before it is read
  }
  int64_t size() const { return n_; }

  void add(const ReduceGeometry& g, const T* base, int64_t r0, int64_t r1) {
    const int64_t n = size();
    double* mu = mean;
    double* sq = m2;
    const column_rows_detail::ColumnRowKernels* k = nullptr;
    if constexpr (std::is_same_v<W, float>) k = column_row_kernels();
    RowBatch<T, kRows> batch;
    for_each_row(g, base, r0, r1, [&](const T* src, int64_t r) {
      batch.add(src, r, r + 1 == r1, [&](const T* const* in_rows, int nrows, int64_t) {
        if constexpr (is_half_v<T>) {
          const auto f = !k ? nullptr : std::is_same_v<T, Half> ? k->moments_rows_f16 : k->moments_rows_bf16;
          if (f) {  // widened in registers
            const uint16_t* bits[kRows];
            f(half_bits(in_rows, nrows, bits), nrows, count, mu, sq, n);
            count += nrows;
            return;
          }
        }
        for_widened<kRows, kCols>(in_rows, nrows, n, room, [&](const W* const* rows, int64_t c0, int64_t m) {
          if constexpr (is_half_v<T>) {
            moments_rows_half(rows, nrows, count, mu + c0, sq + c0, m);
          } else {
            if constexpr (std::is_same_v<W, float>) {
              if (k) return k->moments_rows_f32(rows, nrows, count, mu + c0, sq + c0, m);
            }
            moments_rows_baseline(rows, nrows, count, mu + c0, sq + c0, m);
          }
        });
        count += nrows;
      });
    });
  }
  void merge(const ColumnMoments& later, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      Moments a{count, mean[j], m2[j]};
      a.merge(Moments{later.count, later.mean[j], later.m2[j]});
      mean[j] = a.mean;
      m2[j] = a.m2;
    }
    count += later.count;
  }
  template <class A>
  void fill(int64_t j, A& a) const {
    a.moments = Moments{count, mean[j], m2[j]};
  }
};

#if !defined(__clang__)
#pragma GCC pop_options
#endif
#undef EMBER_MOMENTS_NO_CONTRACT

// max/min with positions: each column keeps its first extreme and that position
// (beats(): ties keep the earlier, the first NaN wins and stays); a slice starts
// from its first row.
// Every dtype: half and 1-byte rows are read as float32 (exact, so every value and
// order is kept), by the 16-bit loops of column_rows.h or widened in blocks
// (for_widened). int32 and int64 compare in their own type (int32 would round in
// float32), with selects rather than branches.
template <class T>
struct ColumnExtremes {
  using A = column_t<T>;
  static constexpr bool kWidens = !std::is_same_v<T, A>;
  int64_t n_ = 0;
  bool max = true;  // max or min: a flag, not a template argument (one copy of the schedule)
  bool started = false;
  A* best = nullptr;
  int64_t* pos = nullptr;
  A* room = nullptr;  // the widened batch

  ColumnExtremes() = default;
  // Rows folded in at once (the 16-bit loops of column_rows.h take spans of up to
  // kHalfSpanRows; the float32 one, which the 1-byte dtypes widen to, batches of
  // kMaxRows), and the columns of a widened block.
  static constexpr int kRows = is_half_v<T> ? column_rows_detail::kHalfSpanRows : column_rows_detail::kMaxRows;
  static constexpr int64_t kCols = is_half_v<T> ? kWidenSpanCols : kWidenCols;
  static size_t bytes(int64_t n) {
    return carved<A>(n) + carved<int64_t>(n) + (kWidens ? carved<A>(kRows * kCols) : 0);
  }
  ColumnExtremes(int64_t n, char* mem, bool want_max)
      : n_(n), max(want_max), best(carve<A>(mem, n)), pos(carve<int64_t>(mem, n)) {
    if constexpr (kWidens) room = reinterpret_cast<A*>(mem);  // written before it is read
  }
  bool wins(A v, A b) const { return max ? beats<true>(v, b) : beats<false>(v, b); }
  int64_t size() const { return n_; }

  void add(const ReduceGeometry& g, const T* base, int64_t r0, int64_t r1) {
    const int64_t n = size();
    A* b = best;
    int64_t* p = pos;
    const column_rows_detail::ColumnRowKernels* k = nullptr;
    if constexpr (std::is_same_v<A, float>) k = column_row_kernels();
    RowBatch<T, kRows> batch;
    for_each_row(g, base, r0, r1, [&](const T* src, int64_t r) {
      if (!started) {  // the first row is the running extreme
        widen_row(src, b, n);
        std::fill(p, p + n, r);
        started = true;
        return;
      }
      batch.add(src, r, r + 1 == r1, [&](const T* const* in_rows, int nrows, int64_t first) {
        if constexpr (is_half_v<T>) {
          const auto f = !k ? nullptr : std::is_same_v<T, Half> ? k->extreme_rows_f16 : k->extreme_rows_bf16;
          if (f) {  // widened in registers
            const uint16_t* bits[kRows];
            return f(half_bits(in_rows, nrows, bits), nrows, first, max, b, p, n);
          }
        }
        for_widened<kRows, kCols>(in_rows, nrows, n, room, [&](const A* const* rows, int64_t c0, int64_t m) {
          A* bc = b + c0;
          int64_t* pc = p + c0;
          if constexpr (std::is_same_v<A, float>) {
            if (k) return k->extreme_rows_f32(rows, nrows, first, max, bc, pc, m);
          }
          for (int i = 0; i < nrows; ++i) {  // selects, not branches, so that the loop vectorizes
            const A* x = rows[i];
            const int64_t at = first + i;
            if (max) {
              for (int64_t j = 0; j < m; ++j) {
                const bool w = beats<true>(x[j], bc[j]);
                bc[j] = w ? x[j] : bc[j];
                pc[j] = w ? at : pc[j];
              }
            } else {
              for (int64_t j = 0; j < m; ++j) {
                const bool w = beats<false>(x[j], bc[j]);
                bc[j] = w ? x[j] : bc[j];
                pc[j] = w ? at : pc[j];
              }
            }
          }
        });
      });
    });
  }
  void merge(const ColumnExtremes& later, int64_t j0, int64_t j1) {
    if (!later.started) return;
    for (int64_t j = j0; j < j1; ++j)
      if (!started || wins(later.best[j], best[j])) {
        best[j] = later.best[j];
        pos[j] = later.pos[j];
      }
    started = true;
  }
  template <class Acc>
  void fill(int64_t j, Acc& a) const {
    a.best = {static_cast<acc_t<T>>(best[j]), pos[j]};
  }
};

}  // namespace ember::cpu::reduce_detail
#if !defined(__clang__)
#pragma GCC pop_options
#endif
