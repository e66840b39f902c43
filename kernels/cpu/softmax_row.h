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

// What row_f32 may use around its rows.
struct RowOptions {
  float* stage = nullptr;  // 2 * n floats of scratch (required)
  // Streaming (non-temporal) stores write y without first reading its lines from
  // memory (8 bytes of traffic per element instead of 12): for outputs larger than
  // the caches.
  bool stream = false;
  // Prefetched while the last row's exp runs: the caller's next input row, if any,
  // n values of after_size bytes each (4 for float32, 2 for a half type).
  const void* after = nullptr;
  int64_t after_size = 4;
};

// y = softmax (or log_softmax) of each of `rows` consecutive rows of n values; y
// may be x. A row is read from memory once (its max) and then worked on in cache;
// exp is compute-bound and the loads and stores are not, so the work is
// software-pipelined: while row r's exp runs, row r + 1 (or opt.after) is
// prefetched and row r - 1 is stored.
using RowFn = void (*)(const float* x, float* y, int64_t rows, int64_t n, bool log, const RowOptions& opt);
// The same for `rows` consecutive rows of n values each (n < 2048); y may be x.
using RowsFn = void (*)(const float* x, float* y, int64_t rows, int64_t n, bool log);
// Softmax over d of x[d * inner + i] for every i in [0, w), w <= kColsMax: y has
// the same layout.
using ColsFn = void (*)(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, bool log);

// The widest column stripe cols_f32 takes (its per-column max and sum are on the stack).
inline constexpr int64_t kColsMax = 256;

// What a half-row loop may use: `stage` holds n + 16 floats (required); `stream` as
// in RowOptions.
struct HalfRowOptions {
  float* stage = nullptr;
  bool stream = false;
};

// Rows of a 16-bit float type (float16 or bfloat16 bits) read and written as such,
// computed in float32. nullptr in a table without them (the caller then widens
// rows into float32 for row_f32).
using HalfRowFn = void (*)(const uint16_t* x, uint16_t* y, int64_t rows, int64_t n, bool log,
                           const HalfRowOptions& opt);

// cols_f32 over `blocks` stripes of w columns whose first values lie `stride`
// floats apart (block b at x + b * stride and y + b * stride), reading x from memory
// once and writing y once (`stream`: with streaming stores, where the rows of y are
// 64-byte aligned), its exp values kept in `scratch` meanwhile: cols_once_floats(dim,
// w) floats, 64-byte aligned, whatever the number of blocks. A block's outputs are
// written while the next block is read, so a thread should pass all of its blocks
// in one call. nullptr in a table without it.
using ColsOnceFn = void (*)(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, int64_t blocks,
                            int64_t stride, bool log, bool stream, float* scratch);

// Rows per chunk of cols_once's first pass (32 KiB of x, to stay in L1) and the
// scratch it needs: its exp values, each chunk's shift, and 1 KiB in which to place
// them relative to x (softmax_cols_once).
inline int64_t cols_once_chunk(int64_t w) { return 8192 / (16 * ((w + 15) / 16)); }
inline int64_t cols_once_floats(int64_t dim, int64_t w) {
  const int64_t row = 16 * ((w + 15) / 16), chunk = cols_once_chunk(w);
  return dim * row + (dim + chunk - 1) / chunk * row + 256;
}

struct SoftmaxRowKernels {
  const char* name;
  RowFn row_f32;
  RowsFn rows_f32;
  ColsFn cols_f32;
  HalfRowFn row_f16 = nullptr, row_bf16 = nullptr;
  ColsOnceFn cols_once = nullptr;
};

// nullptr when this build cannot emit that instruction set.
const SoftmaxRowKernels* softmax_row_kernels_avx512();
const SoftmaxRowKernels* softmax_row_kernels_avx2();
const SoftmaxRowKernels* softmax_row_kernels_generic();

}  // namespace ember::cpu::softmax_detail
