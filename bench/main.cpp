// ember-bench: runs the registered benchmark suites, prints each case next to its
// peer and its measured floor, and optionally writes the records as JSON.
//   ember-bench --suite gemm --json out.json --threads 2
//   ember-bench --list
//   ember-bench --device cuda --json gpu.json     (every cuda_* suite)
// The CUDA suites are named cuda_*; they are built only with the CUDA backend and
// run only with --device cuda (a cuda_* name given alone implies it).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/report.h"
#include "tensor/build_info.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm.h"
#include "ember_config.h"
#if EMBER_HAVE_CUDA
#include "bench/cuda_floors.h"
#include "bench/cuda_harness.h"
#endif

namespace {

using ember::bench::Record;

// ordered_json keeps the documented field order in the file.
nlohmann::ordered_json to_json(const std::vector<Record>& records) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Record& r : records) {
    nlohmann::ordered_json j;
    j["suite"] = r.suite;
    j["case"] = r.case_name;
    j["unit"] = r.unit;
    j["ember"] = r.ember;
    j["peer_name"] =
        r.peer_name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.peer_name);
    j["peer"] = r.peer ? nlohmann::ordered_json(*r.peer) : nlohmann::ordered_json();
    j["floor"] = r.floor ? nlohmann::ordered_json(*r.floor) : nlohmann::ordered_json();
    out.push_back(std::move(j));
  }
  return out;
}

constexpr const char* kDeviceHelp = R"(Devices:
  --device cpu (the default) runs the CPU suites; --suite is required ('all' runs
  every CPU suite).
  --device cuda runs the CUDA suites, whose names start with cuda_: cuda_memory
  (copy floor, elementwise, conversion, sums), cuda_softmax, cuda_gemm (native vs
  cuBLAS), cuda_gemm-ladder (the GEMM ladder's CUDA rungs), cuda_conv (native vs
  cuDNN), cuda_train (one epoch, CUDA vs CPU). Without --suite (or with 'all') it
  runs all of them, on the current device (set CUDA_VISIBLE_DEVICES to choose).
  Naming a cuda_* suite implies --device cuda; with --device cuda, a name without
  the prefix means its cuda_ twin (--suite gemm-ladder runs cuda_gemm-ladder).
  CUDA floors (measured at the start of the run): a 256 MiB device-to-device copy
  (GB/s, read + write), a float32 FMA loop (TFLOP/s) and cuBLAS at 8192^3 per dtype.
  An ember-bench built without CUDA, or a machine with no usable GPU, makes
  --device cuda exit with status 1 and a one-line reason.
)";

bool is_cuda_suite(const std::string& name) { return name.rfind("cuda_", 0) == 0; }

// Writes next to the destination, flushes to disk, then renames over it, so that a
// reader sees the old file or the whole new one, never half of one.
bool write_atomically(const std::string& path, const std::string& text, std::string* err) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    *err = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
                     std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int saved = errno;
  if (std::fclose(f) != 0 || !wrote) {
    *err = "cannot write " + tmp + ": " + std::strerror(wrote ? errno : saved);
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *err = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

// The current time, UTC, as 2026-12-01T22:30:00Z.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember-bench: Ember's benchmark suites, each case beside a peer library and "
               "the machine's measured floor"};
  std::string suite_name, json_path, report_dir;
  ember::bench::Options opt;
  bool list = false;
  app.add_option("--suite", suite_name, "suite to run, or 'all'");
  app.add_option("--json", json_path, "also write the records to FILE as JSON (after each suite)");
  app.add_option("--report", report_dir, "also write DIR/report.md and one SVG chart per suite");
  app.add_option("--threads", opt.threads, "CPU threads for Ember, the peers and the floors")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI::Option* device_opt =
      app.add_option("--device", opt.device, "device to benchmark: cpu, or cuda for the cuda_* suites")
          ->capture_default_str()
          ->check(CLI::IsMember({"cpu", "cuda"}));
  app.footer(kDeviceHelp);
  app.add_flag("--list", list, "list the suites and exit");
  CLI11_PARSE(app, argc, argv);

  const std::vector<ember::bench::Suite> all = ember::bench::suites();
  if (list) {
    for (const auto& s : all) std::printf("%s\n", s.name.c_str());
    return 0;
  }
  // A cuda_* suite named alone runs on CUDA; --device cuda alone runs them all.
  if (device_opt->count() == 0 && is_cuda_suite(suite_name)) opt.device = "cuda";
  const bool cuda = opt.device == "cuda";
  if (cuda && suite_name.empty()) suite_name = "all";
  // With --device cuda, a CPU suite's name stands for its CUDA twin cuda_NAME where
  // there is one (`--device cuda --suite gemm-ladder` runs cuda_gemm-ladder).
  if (cuda && suite_name != "all" && !is_cuda_suite(suite_name)) {
    for (const auto& s : all)
      if (s.name == "cuda_" + suite_name) suite_name = s.name;
  }
  if (cuda) {
#if EMBER_HAVE_CUDA
    std::string why;
    if (!ember::bench::cuda_device_ready(&why)) {
      std::fprintf(stderr, "ember-bench: --device cuda: no CUDA device to run on: %s\n", why.c_str());
      return 1;
    }
#else
    std::fprintf(stderr,
                 "ember-bench: --device cuda: this ember-bench was built without the CUDA backend "
                 "(Meson found no nvcc; configure with the toolkit's bin/ on PATH)\n");
    return 1;
#endif
  }
  std::vector<ember::bench::Suite> chosen;
  for (const auto& s : all) {
    const bool match = suite_name == "all" ? is_cuda_suite(s.name) == cuda : s.name == suite_name;
    if (match) chosen.push_back(s);
  }
  if (chosen.empty()) {
    const std::string why =
        suite_name.empty() ? "--suite is required" : "no suite '" + suite_name + "'";
    std::fprintf(stderr, "ember-bench: %s; the suites are:", why.c_str());
    for (const auto& s : all) std::fprintf(stderr, " %s", s.name.c_str());
    std::fprintf(stderr, " (or all)\n");
    return 2;
  }
  if (is_cuda_suite(chosen.front().name) != cuda) {
    std::fprintf(stderr, "ember-bench: suite '%s' runs on %s, not with --device %s\n",
                 chosen.front().name.c_str(), cuda ? "the CPU" : "CUDA", opt.device.c_str());
    return 2;
  }

  ember::set_num_threads(opt.threads);
  // The wait policy moves multi-threaded figures by up to a third (a passive
  // OpenMP thread sleeps between parallel regions and is woken through the
  // kernel), and it is fixed when OpenMP starts: say which one this run has.
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("ember-bench: device %s, %d threads, OMP_WAIT_POLICY=%s\n", opt.device.c_str(), opt.threads,
              wait_policy ? wait_policy : "unset (OpenMP's threads spin a while between regions)");
  if (opt.device == "cpu") {
    std::printf("floors: fma peak %.1f GFLOP/s f32, %.1f GFLOP/s f64 (%s); copy %.1f GB/s\n",
                ember::bench::measured_fma_peak_gflops(opt.threads),
                ember::bench::measured_fma_peak_gflops(opt.threads, true),
                ember::bench::fma_peak_isa(),
                ember::bench::measured_copy_bandwidth_gbs(opt.threads));
  }
#if EMBER_HAVE_CUDA
  if (cuda) {
    try {
      ember::bench::print_cuda_environment();
      std::printf("cuda floors: copy %.0f GB/s (256 MiB device to device, read + write), float32 FMA peak %.1f TFLOP/s\n",
                  ember::bench::measured_cuda_copy_gbs(), ember::bench::measured_cuda_fma_peak_tflops());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ember-bench: measuring the CUDA floors failed: %s\n", e.what());
      return 1;
    }
  }
#endif
  std::fflush(stdout);

  ember::bench::RunContext context{ember::bench::machine_name(), ember::build_info(), utc_now(), opt.threads,
                                   ember::bench::load_average(), 0};
  ember::bench::Report report;
  for (const auto& s : chosen) {
    // A suite that throws (a CUDA error, a missing file) is recorded as a failure
    // and the run goes on to the next suite.
    try {
      s.run(opt, report);
    } catch (const std::exception& e) {
      report.fail("suite " + s.name + ": " + e.what());
    }
    // The records so far, after every suite: a run killed at a time limit (as
    // scripts/gpu-check's may be) keeps what the finished suites measured.
    if (!json_path.empty()) {
      std::string err;
      if (!write_atomically(json_path, to_json(report.records()).dump(2) + "\n", &err))
        std::fprintf(stderr, "ember-bench: %s\n", err.c_str());
    }
  }

  context.load_end = ember::bench::load_average();
  if (!report_dir.empty()) {
    std::string err;
    if (!ember::bench::write_report(report_dir, report.records(), context, &err)) {
      std::fprintf(stderr, "ember-bench: %s\n", err.c_str());
      return 1;
    }
    std::printf("wrote %s/report.md and its charts\n", report_dir.c_str());
  }
  if (!json_path.empty()) {
    std::string err;
    if (!write_atomically(json_path, to_json(report.records()).dump(2) + "\n", &err)) {
      std::fprintf(stderr, "ember-bench: %s\n", err.c_str());
      return 1;
    }
    std::printf("wrote %zu records to %s\n", report.records().size(), json_path.c_str());
  }
  return report.failed() ? 1 : 0;
}
