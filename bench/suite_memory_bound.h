// Shared by the memory-bound suites (elementwise, reduce, softmax): time an op on
// Ember tensors and report GB/s (bytes the op must move at least, over time)
// against the copy bandwidth measured in the same run.
#pragma once

#include <functional>
#include <string>

#include "bench/floors.h"
#include "bench/harness.h"

namespace ember::bench {

inline void report_bandwidth(Report& report, const Options& opt, const char* suite, const std::string& name,
                             double bytes, const std::function<void()>& op) {
  const Timing t = measure(op);
  Record r;
  r.suite = suite;
  r.case_name = name;
  r.unit = "GB/s";
  r.ember = bytes / t.best_s / 1e9;
  r.floor = measured_copy_bandwidth_gbs(opt.threads);
  report.add(std::move(r));
}

}  // namespace ember::bench
