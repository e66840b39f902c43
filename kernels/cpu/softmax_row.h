// The instruction-set-specific half of the CPU softmax: the float32 loops, one copy
// per instruction set (softmax_row_<isa>.cpp compiles softmax_row_impl.h for its
// set); softmax.cpp picks one at run time. Three shapes of work, each its own loop
// so that exp always runs over a contiguous vector-length stretch:
//   row   one long row (the last dim, inner == 1);
//   rows  many rows shorter than a few vectors (a batch of 10 logits);
//   cols  a softmax down the columns of a (dim, inner) block, inner > 1.
// Not part of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu::softmax_detail {

// y[0, n) = softmax (or log_softmax) of x[0, n); y may be x.
using RowFn = void (*)(const float* x, float* y, int64_t n, bool log);
// The same for `rows` consecutive rows of n values each (n < 2048); y may be x.
using RowsFn = void (*)(const float* x, float* y, int64_t rows, int64_t n, bool log);
// Softmax over d of x[d * inner + i] for every i in [0, w), w <= kColsMax: y has
// the same layout.
using ColsFn = void (*)(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, bool log);

// The widest column stripe cols_f32 takes (its per-column max and sum are on the stack).
inline constexpr int64_t kColsMax = 256;

struct SoftmaxRowKernels {
  const char* name;
  RowFn row_f32;
  RowsFn rows_f32;
  ColsFn cols_f32;
};

// nullptr when this build cannot emit that instruction set.
const SoftmaxRowKernels* softmax_row_kernels_avx512();
const SoftmaxRowKernels* softmax_row_kernels_avx2();
const SoftmaxRowKernels* softmax_row_kernels_generic();

}  // namespace ember::cpu::softmax_detail
