// The float32 row adds of sum's column schedule (reduce.cpp's column_block), per
// instruction set: part[j] += rows[0][j], then rows[1][j], ... in that order, so the
// bits are the baseline loop's (except which operand's payload NaN + NaN keeps). The
// reductions are compiled for the baseline (SSE2: 4 lanes), where summing dim 0 of
// [4096, 4096] float32 loaded, added and stored part once per row and per 4 values
// and was bound by that loop, not by memory (one thread 26-33 GB/s against 41 for
// the same values summed along dim 1). These keep each 64 values of part in
// registers across a batch of rows. Not part of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace column_sum_detail {

// Rows a batch holds at most.
inline constexpr int kMaxRows = 8;

struct ColumnSumKernels {
  const char* name;
  // part[j] += rows[0][j] + ... + rows[nrows - 1][j] for j in [0, n), added one row at a
  // time (left to right), 1 <= nrows <= kMaxRows.
  void (*add_rows_f32)(const float* const* rows, int nrows, float* part, int64_t n);
};

// nullptr when this build cannot emit that instruction set.
const ColumnSumKernels* column_sum_kernels_avx512();

}  // namespace column_sum_detail

// The active instruction set's table, or nullptr where reduce.cpp's baseline loop
// serves (isa.h).
const column_sum_detail::ColumnSumKernels* column_sum_kernels();

}  // namespace ember::cpu
