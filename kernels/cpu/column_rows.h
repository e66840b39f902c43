// The float32 row loops of the column schedule (reduce_columns.h), and the extremes'
// and var's on float16 and bfloat16 rows, per instruction set: a batch of rows, one
// reduced position after another, folded into the running results of n adjacent
// outputs, which stay in registers across the batch. The reductions are compiled for the baseline (SSE2: 4 lanes), where summing dim 0 of
// [4096, 4096] float32 loaded, added and stored the partial sums once per row and
// per 4 values and was bound by that loop, not by memory (one thread 26-33 GB/s
// against 41 for the same values summed along dim 1); var's column loop ran in 2
// double lanes and max's (a select with a 64-bit position) stayed scalar. The sums'
// and var's lanes follow the baseline loop's operations in the same order, so the
// bits are the baseline's (but for which operand's payload NaN + NaN keeps); the
// extremes reach the baseline's results (the same values and positions) by other
// instructions. Not part of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace column_rows_detail {

// Rows a batch holds at most.
inline constexpr int kMaxRows = 8;

// Rows the half types' loops fold in at once (a span). var: up to 8 sub-batches of
// kMaxRows rows share one float32 shift, and the span merges into the double mean
// and m2 once (merging every 8 rows, the merge's conversions and its state traffic,
// two doubles a column in L2, cost as much as the rows' own arithmetic). The
// extremes: positions (8 bytes a column) are stored once a span.
inline constexpr int kHalfSpanRows = 64;
// Rows of a column's first span whose float32 mean is var's shift there: min(16, R)
// rows spread evenly over the span (rows i * R / m), which bounds how much the
// span's mean can differ from the shift (reduce_columns.h's moments_rows_half).
inline constexpr int kHalfShiftRows = 16;

struct ColumnRowKernels {
  const char* name;
  // part[j] += rows[0][j], then rows[1][j], ... for j in [0, n), 1 <= nrows <= kMaxRows.
  void (*add_rows_f32)(const float* const* rows, int nrows, float* part, int64_t n);
  // For each j, row k (position pos0 + k) replaces best[j] and pos[j] when it beats
  // it: strictly beyond (max: greater), or NaN where best[j] is not (the first NaN
  // stays).
  void (*extreme_rows_f32)(const float* const* rows, int nrows, int64_t pos0, bool max, float* best, int64_t* pos,
                           int64_t n);
  // The batch's rows folded into each column's running mean and m2 (which hold
  // count0 values before), as reduce_columns.h's moments_rows_baseline says, in the same
  // operations.
  void (*moments_rows_f32)(const float* const* rows, int nrows, int64_t count0, double* mean, double* m2,
                           int64_t n);
  // The same two on rows of float16 (f16) or bfloat16 (bf16) bits, each value widened
  // to float32 as it is loaded, in spans of up to kHalfSpanRows rows: the extremes
  // are the float32 loop's results on the widened rows, the moments
  // reduce_columns.h's moments_rows_half's (float32 sums). Each may be nullptr in a
  // table that has only the float32 loops.
  void (*extreme_rows_f16)(const uint16_t* const* rows, int nrows, int64_t pos0, bool max, float* best, int64_t* pos,
                           int64_t n);
  void (*extreme_rows_bf16)(const uint16_t* const* rows, int nrows, int64_t pos0, bool max, float* best,
                            int64_t* pos, int64_t n);
  void (*moments_rows_f16)(const uint16_t* const* rows, int nrows, int64_t count0, double* mean, double* m2,
                           int64_t n);
  void (*moments_rows_bf16)(const uint16_t* const* rows, int nrows, int64_t count0, double* mean, double* m2,
                            int64_t n);
};

// The per-batch weights of moments_rows_f32: a batch of R rows after count0 values
// has the mean offset e = s / R (s times inv_r), and merges with weight w = R / N and
// c = count0 R / N (N = count0 + R).
struct BatchWeights {
  double inv_r, w, c;
};
inline BatchWeights batch_weights(int64_t count0, int nrows) {
  const double r = static_cast<double>(nrows), total = static_cast<double>(count0) + r;
  const double w = r / total;
  return {1.0 / r, w, static_cast<double>(count0) * w};
}

// nullptr when this build cannot emit that instruction set.
const ColumnRowKernels* column_row_kernels_avx512();

}  // namespace column_rows_detail

// The active instruction set's table, or nullptr where reduce_columns.h's baseline
// loops serve (isa.h).
const column_rows_detail::ColumnRowKernels* column_row_kernels();

}  // namespace ember::cpu
