// The scan of a float32 max/min with its position (reduce_runs.h's block_extreme),
// per instruction set. The reductions are compiled for the baseline (SSE2: 4 lanes),
// where a block's extreme is found first and its position by a second look; this
// runs 16 lanes on AVX-512 and keeps each lane's position beside its value, so the
// block is read once and no branch inside the scan depends on the data (one NaN
// test and one fold per 64K-value block remain): a second look that ended in a
// mispredicted branch threw away the loads already on their way from memory, and
// max over dim 1 of [4096, 4096] read 0.51-0.62 of the copy floor. Not part of the
// public API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace extreme_detail {

// Values one extreme_pos_f32 call takes at most (its positions are 32-bit lanes).
inline constexpr int64_t kMaxScan = int64_t(1) << 30;

struct ExtremeKernels {
  const char* name;
  // The first largest (max) or smallest value of x[0, n) and its position; the first
  // NaN and its position when x holds one. 1 <= n <= kMaxScan.
  void (*extreme_pos_f32)(const float* x, int64_t n, bool max, float* best, int64_t* pos);
};

// nullptr when this build cannot emit that instruction set.
const ExtremeKernels* extreme_kernels_avx512();

}  // namespace extreme_detail

// The active instruction set's table, or nullptr where the baseline loops of
// reduce_runs.h serve (isa.h).
const extreme_detail::ExtremeKernels* extreme_kernels();

}  // namespace ember::cpu
