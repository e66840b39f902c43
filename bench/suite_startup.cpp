// The startup suite: cold start of an embedding application, measured from the
// outside as the wall time of whole processes (fork, exec, dynamic loading, static
// initialisers, main, exit). ember-startup-probe loads the seed network's weights
// and runs one batch-1 inference; `--load-only` returns at main, which isolates
// loading libember.so. The floor is the same measurement of /bin/true: a process
// that does nothing. Median of 20 starts each, the three alternating.
// EMBER_STARTUP_PROBE names another build's probe: scripts/check-library-only
// builds one against the library-only, CPU-only libember.so, which is what an
// application that embeds Ember for CPU inference loads (the CUDA build's library
// pulls in cuBLAS, cuBLASLt, cuDNN and NCCL at load time).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/harness.h"

extern char** environ;

namespace ember::bench {
namespace {

constexpr int kStarts = 20;

// Wall time of one run of argv, in milliseconds; negative if it failed.
double run_ms(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(const Options&, Report& report) {
  const char* chosen = std::getenv("EMBER_STARTUP_PROBE");
  const std::string probe = chosen && *chosen ? chosen : std::string(EMBER_BENCH_BUILD_DIR) + "/ember-startup-probe";
  std::printf("startup: probe %s\n", probe.c_str());
  const std::string weights = std::string(EMBER_BENCH_SOURCE_DIR) + "/../tests/nn/data/safetensors_seed_net.safetensors";
  const std::vector<std::vector<std::string>> commands = {{probe, weights}, {probe, "--load-only"}, {"/bin/true"}};
  std::vector<std::vector<double>> times(commands.size());
  for (const auto& c : commands) run_ms(c);  // warm the page cache
  for (int i = 0; i < kStarts; ++i)
    for (size_t c = 0; c < commands.size(); ++c) {
      const double ms = run_ms(commands[c]);
      if (ms < 0) {
        report.fail(commands[c][0] + " failed");
        return;
      }
      times[c].push_back(ms);
    }
  const double floor = median(times[2]);
  report.add({"startup", "seed network: start, load weights, first batch-1 inference", "ms", median(times[0]), "", {},
              floor});
  report.add({"startup", "load libember.so and reach main", "ms", median(times[1]), "", {}, floor});
}

}  // namespace

EMBER_BENCH_SUITE(startup, run);

}  // namespace ember::bench
