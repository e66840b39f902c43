// The benchmark harness: suites register themselves by name, time their cases with
// measure(), and report one Record per case; main prints the records as a table
// and writes them as JSON. A new suite is one .cpp file ending in EMBER_BENCH_SUITE.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ember::bench {

// What the command line asked for.
struct Options {
  int threads = 2;
  std::string device = "cpu";
};

// One measured case. `floor` is the machine's ceiling for the case in the same
// unit, measured in the same run (peak GFLOP/s, copy bandwidth in GB/s); `peer`
// is the same case run by another library, absent when there is none.
struct Record {
  std::string suite;
  std::string case_name;
  std::string unit;
  double ember = 0;
  std::string peer_name;  // empty when there is no peer
  std::optional<double> peer;
  std::optional<double> floor;
};

// Collects the records, printing each as a table row when it arrives (the header
// before the first) so that a long run shows progress. fail() is called by suites
// whose correctness check fails; main then exits non-zero after writing everything.
class Report {
 public:
  void add(Record r);
  void fail(const std::string& why);
  static void print_header();
  const std::vector<Record>& records() const { return records_; }
  bool failed() const { return failed_; }

 private:
  std::vector<Record> records_;
  bool failed_ = false;
};

using SuiteFn = void (*)(const Options&, Report&);

struct Suite {
  std::string name;
  SuiteFn run;
};

// All registered suites, sorted by name.
std::vector<Suite> suites();

struct Registrar {
  Registrar(const char* name, SuiteFn run);
};

#define EMBER_BENCH_SUITE(name, fn) \
  static const ::ember::bench::Registrar ember_bench_suite_##name(#name, fn)

// Timing of one case: the best and the median call after a warm-up.
struct Timing {
  double best_s = 0;
  double median_s = 0;
  int reps = 0;
};

// Calls f until warmup_s seconds have passed (waking the thread team, filling the
// caches, letting another library's spinning threads go to sleep), then times
// single calls until at least min_reps calls and min_s seconds are done.
Timing measure(const std::function<void()>& f, double warmup_s = 0.25, double min_s = 0.5,
               int min_reps = 5);

// Times several functions (Ember and its peer) in `rounds` alternating rounds and
// keeps each one's best round, so that a burst of load from elsewhere on the
// machine cannot favour one side of a comparison.
std::vector<Timing> measure_alternating(const std::vector<std::function<void()>>& fs,
                                        int rounds = 3);

}  // namespace ember::bench
