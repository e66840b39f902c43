// What the dist suites (allreduce, ddp) share: they run under `mpirun -np 2
// ember-bench --suite allreduce`, every rank doing the same fixed number of
// collectives (time-based loops would let the ranks disagree and hang), and only
// rank 0 reporting.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "bench/harness.h"
#include "dist/process_group.h"

namespace ember::bench {

// Starts the default group if needed. False (after saying why) when this process
// is alone: these suites need 2 ranks.
inline bool dist_bench_ready(const char* suite) {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
  if (dist::get_world_size() < 2) {
    std::printf("%s: skipped: run it under `mpirun -np 2 ember-bench --suite %s` (world size is 1)\n", suite, suite);
    return false;
  }
  return true;
}

// Ranks other than 0 leave once the suite is done, so that only rank 0 prints the
// table and writes the JSON file (MPI is finalized at exit).
[[noreturn]] inline void dist_bench_leave_if_not_rank0(const Report& report) {
  std::fflush(stdout);
  std::exit(report.failed() ? 1 : 0);
}

}  // namespace ember::bench
