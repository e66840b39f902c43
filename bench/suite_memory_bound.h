// Shared by the memory-bound suites (elementwise, reduce, softmax): time an op on
// Ember tensors and report GB/s (bytes the op must move at least, over time)
// against the copy bandwidth. The op and the copy are timed in alternating rounds,
// each keeping its best, so that the ratio compares the two in the same minutes:
// on a machine shared with other tenants a floor measured once, at the start,
// left each case's ratio to the load of the moment it ran (one case read 0.88
// and 0.49 of such a floor in two runs a minute apart).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"

namespace ember::bench {

inline void report_bandwidth(Report& report, const Options& opt, const char* suite, const std::string& name,
                             double bytes, const std::function<void()>& op) {
  double copy_bytes = 0;
  const std::vector<Timing> t =
      measure_alternating({op, [&] { copy_bytes = copy_once(opt.threads); }}, 3);
  Record r;
  r.suite = suite;
  r.case_name = name;
  r.unit = "GB/s";
  r.ember = bytes / t[0].best_s / 1e9;
  r.floor = copy_bytes / t[1].best_s / 1e9;
  report.add(std::move(r));
}

}  // namespace ember::bench
