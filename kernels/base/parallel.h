// Thread control shared by the CPU kernels. Ember uses OpenMP; set_num_threads
// changes how many threads every later kernel uses, on every thread of the
// process (docs/embedding.md, "Threads").
#pragma once

#include "kernels/base/export.h"

#include <cstdint>

EMBER_API_BEGIN

namespace ember {

// Process-wide: a call from any thread sets the team size of every kernel that
// starts afterwards, on any thread (n < 1 means 1). Not an OpenMP per-thread
// setting; a kernel already running keeps its team.
void set_num_threads(int n);
// The team size kernels use: the last set_num_threads, or before any call,
// OpenMP's default for the calling thread (OMP_NUM_THREADS, else one per core).
int get_num_threads();

// Below this many elements of work a kernel runs on one thread: waking the team
// costs more than the loop.
inline constexpr int64_t kParallelGrain = 32768;

// body(i) for every i in [0, n): on the thread team when `worth_a_team` (the
// caller's work >= kParallelGrain), else in a plain loop on this thread. A plain
// loop, not an OpenMP `if` clause: a region whose `if` is false still enters the
// OpenMP runtime, which cost about 1.6 us per call, more than a batch-1 layer norm.
template <class F>
void parallel_rows(int64_t n, bool worth_a_team, F&& body) {
  if (worth_a_team && get_num_threads() > 1) {
#pragma omp parallel for num_threads(get_num_threads()) schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    for (int64_t i = 0; i < n; ++i) body(i);
  }
}

}  // namespace ember

EMBER_API_END
