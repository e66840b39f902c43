// The two scans of a float32 max/min with its position (reduce_runs.h's
// block_extreme), per instruction set: the block's extreme and whether it holds a
// NaN, then the first position of a value. The reductions are compiled for the
// baseline (SSE2: 4 lanes); these run 16 lanes on AVX-512. Not part of the public
// API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace extreme_detail {

struct ExtremeKernels {
  const char* name;
  // The largest (max) or smallest of x[0, n) that is not NaN (x[0] when there is
  // none), and whether any x[i] is NaN. n >= 1.
  void (*extreme_f32)(const float* x, int64_t n, bool max, float* best, bool* nan);
  // The first i with x[i] == v (v not NaN), or n.
  int64_t (*first_equal_f32)(const float* x, int64_t n, float v);
};

// nullptr when this build cannot emit that instruction set.
const ExtremeKernels* extreme_kernels_avx512();

}  // namespace extreme_detail

// The active instruction set's table, or nullptr where the baseline loops of
// reduce_runs.h serve (isa.h).
const extreme_detail::ExtremeKernels* extreme_kernels();

}  // namespace ember::cpu
