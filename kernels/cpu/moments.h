// The two looks of var's block moments (reduce_runs.h's block_moments) over a
// float32 block, per instruction set: the block's sum, then its sum of squared
// deviations from a given centre; and the double-lane sum of sum's short rows. The reductions are compiled for the baseline
// (SSE2: 4 lanes, no FMA), where var over 16M float32 values ran at 0.54 of the
// copy floor, bound by arithmetic; these run 16 lanes with FMA on AVX-512. Not part
// of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace moments_detail {

struct MomentsKernels {
  const char* name;
  // The sum of x[0, n): float32 lanes, added together in double.
  double (*sum_f32)(const float* x, int64_t n);
  // The sum of (x[i] - c)^2 over [0, n): float32 lanes, added together in double.
  // While it runs on the block (in L1 after sum_f32's look), it prefetches the n
  // values after it, so memory keeps streaming (a prefetch never faults).
  double (*sq_dev_f32)(const float* x, int64_t n, float c);
  // The sum of x[0, n) with every value widened to double first (all but exact):
  // sum's rows under 2048 values (reduce_runs.h's sum_contiguous), such as a 14x14
  // plane of a global average pool, where the baseline's 2-lane conversions were
  // the reduction's whole cost.
  double (*sum_f32_wide)(const float* x, int64_t n);
};

// nullptr when this build cannot emit that instruction set.
const MomentsKernels* moments_kernels_avx512();

}  // namespace moments_detail

// The active instruction set's table, or nullptr where the baseline loops of
// reduce_runs.h serve (isa.h).
const moments_detail::MomentsKernels* moments_kernels();

}  // namespace ember::cpu
