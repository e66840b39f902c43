// ember-bench --report DIR: the run's records as a page people read rather than
// parse. DIR/report.md has one table per suite (Ember, peer, floor and the two
// ratios) and embeds DIR/<suite>.svg, a bar chart the bench draws itself: per
// case, Ember, the peer and the floor side by side, each bar scaled to the
// largest of the three so cases of different units share one chart, the peer's
// bar labelled with the peer's name (a case may have one record per peer). The
// caption names the machine, the CPU kernels chosen and the load during the run,
// because figures from a shared machine mean little without them.
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace ember::bench {

struct RunContext {
  std::string machine;      // CPU model and core count
  std::string kernels;      // build_info(): the CPU kernels chosen at run time
  std::string date;         // UTC, ISO 8601
  int threads = 0;
  double load_start = 0, load_end = 0;  // 1-minute load averages
};

// The CPU model, from /proc/cpuinfo ("unknown CPU" elsewhere), and the online cores.
std::string machine_name();
double load_average();

// One chart of `records` (of one suite) as an SVG document.
std::string suite_svg(const std::string& suite, const std::vector<Record>& records, const RunContext& ctx);

// Writes DIR/report.md and DIR/<suite>.svg for every suite in `records`,
// creating DIR. Returns false with `err` set when a file cannot be written.
bool write_report(const std::string& dir, const std::vector<Record>& records, const RunContext& ctx, std::string* err);

}  // namespace ember::bench
