// The gemm-ladder suite: every rung of the CPU GEMM ladder (kernels/ladder/
// gemm_ladder.h, from the naive triple loop to the production kernel) on square
// float32 products at n = 256 and 512, in GFLOP/s against the measured FMA peak.
// The rungs are single-threaded, so they are timed on one thread against the
// one-thread peak; the production kernel is then timed again on --threads threads.
// A rung is timed only up to its largest_timed_n (the naive loop takes about a
// second a call at 512). Before it is timed, each case is checked against float64
// dot products at 256 sampled elements.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/floors.h"
#include "bench/sampled_error.h"
#include "bench/harness.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ladder/gemm_ladder.h"

namespace ember::bench {
namespace {

using ladder::CpuRung;
using ladder::kCpuRungs;

struct Row {
  std::string rung;
  int threads;
  std::map<int, double> gflops;  // by n
};

// Checks then times one rung at size n on `threads` threads; returns GFLOP/s.
double run_case(const CpuRung& rung, int n, int threads, const std::vector<float>& a,
                const std::vector<float>& b, Report& report) {
  std::vector<float> c(size_t(n) * n);
  const std::string name = std::string(rung.name) + " n=" + std::to_string(n);
  rung.fn(n, n, n, a.data(), b.data(), c.data());
  const double err = sampled_rel_err<float>(n, a.data(), b.data(), c.data(), false, 5);
  const double tol = 6e-8 * n;  // as the gemm suite: far above rounding, far below a bug
  if (!(err <= tol)) {
    std::printf("  check %-28s rel. error vs float64 %.2e  <-- too large\n", name.c_str(), err);
    report.fail("gemm-ladder " + name + ": result differs from float64 dot products");
  }
  // Slow rungs get few repetitions: the suite should finish in seconds.
  const Timing t = measure([&] { rung.fn(n, n, n, a.data(), b.data(), c.data()); }, 0.05, 0.2, 3);
  const double gflops = 2.0 * n * double(n) * n / t.best_s * 1e-9;
  Record r;
  r.suite = "gemm-ladder";
  r.case_name = name;
  r.unit = threads == 1 ? "GFLOP/s, 1 thread" : "GFLOP/s, " + std::to_string(threads) + " threads";
  r.ember = gflops;
  r.floor = measured_fma_peak_gflops(threads);
  report.add(std::move(r));
  return gflops;
}

void gemm_ladder_suite(const Options& opt, Report& report) {
  const CpuRung& production = kCpuRungs[std::size(kCpuRungs) - 1];
  std::printf("gemm-ladder: rungs 1-%zu compiled for %s (target_clones); production = "
              "cpu::gemm with micro-kernel %s\n",
              std::size(kCpuRungs) - 1, ladder::cpu_rungs_isa(), cpu::gemm_kernel_name());
  std::printf("gemm-ladder: floor = FMA peak, %.1f GFLOP/s on 1 thread, %.1f on %d (%s)\n",
              measured_fma_peak_gflops(1), measured_fma_peak_gflops(opt.threads), opt.threads,
              fma_peak_isa());
  const std::vector<int> sizes = {256, 512};
  std::map<int, std::pair<std::vector<float>, std::vector<float>>> inputs;
  for (int n : sizes) {
    std::mt19937 g{uint32_t(n)};
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    auto& [a, b] = inputs[n];
    a.resize(size_t(n) * n);
    b.resize(size_t(n) * n);
    for (float& v : a) v = d(g);
    for (float& v : b) v = d(g);
  }

  std::vector<Row> rows;
  ember::set_num_threads(1);
  for (const CpuRung& rung : kCpuRungs) {
    Row row{rung.name, 1, {}};
    for (int n : sizes)
      if (n <= rung.largest_timed_n)
        row.gflops[n] = run_case(rung, n, 1, inputs[n].first, inputs[n].second, report);
    rows.push_back(std::move(row));
  }
  ember::set_num_threads(opt.threads);
  if (opt.threads > 1) {
    Row row{production.name, opt.threads, {}};
    for (int n : sizes)
      row.gflops[n] = run_case(production, n, opt.threads, inputs[n].first, inputs[n].second, report);
    rows.push_back(std::move(row));
  }

  // The ladder as a learner reads it: each rung's rate and its share of the peak.
  std::printf("\ngemm-ladder summary: GFLOP/s (%% of the FMA peak on that many threads)\n");
  std::printf("  %-24s %-8s", "rung", "threads");
  for (int n : sizes) std::printf("  %-18s", ("n=" + std::to_string(n)).c_str());
  std::printf("\n");
  for (const Row& row : rows) {
    const double peak = measured_fma_peak_gflops(row.threads);
    std::printf("  %-24s %-8d", row.rung.c_str(), row.threads);
    for (int n : sizes) {
      const auto it = row.gflops.find(n);
      char cell[32] = "- (not timed)";
      if (it != row.gflops.end())
        std::snprintf(cell, sizeof cell, "%7.1f (%5.1f%%)", it->second, 100.0 * it->second / peak);
      std::printf("  %-18s", cell);
    }
    std::printf("\n");
  }
  std::printf("\n");
}

}  // namespace

// Registered by hand: the suite's name has a hyphen, which EMBER_BENCH_SUITE's
// identifier pasting cannot take.
static const Registrar gemm_ladder_registrar("gemm-ladder", gemm_ladder_suite);

}  // namespace ember::bench
