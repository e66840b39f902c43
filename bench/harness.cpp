// The harness machinery: the suite registry, the timing loop, and the table rows.
#include "bench/harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ember::bench {
namespace {

// A function-local static, so registrars in other files may run first.
std::vector<Suite>& registry() {
  static std::vector<Suite> r;
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt(const std::optional<double>& v, const char* spec) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, spec, *v);
  return buf;
}

}  // namespace

Registrar::Registrar(const char* name, SuiteFn run) { registry().push_back({name, run}); }

std::vector<Suite> suites() {
  std::vector<Suite> s = registry();
  std::sort(s.begin(), s.end(), [](const Suite& x, const Suite& y) { return x.name < y.name; });
  return s;
}

void Report::print_header() {
  std::printf("%-12s %-24s %-26s %10s %-16s %10s %10s %11s %11s\n", "suite", "case", "unit",
              "ember", "peer_name", "peer", "floor", "ember/peer", "ember/floor");
}

void Report::add(Record r) {
  if (records_.empty()) print_header();
  std::optional<double> vs_peer, vs_floor;
  if (r.peer && *r.peer > 0) vs_peer = r.ember / *r.peer;
  if (r.floor && *r.floor > 0) vs_floor = r.ember / *r.floor;
  std::printf("%-12s %-24s %-26s %10.3g %-16s %10s %10s %11s %11s\n", r.suite.c_str(),
              r.case_name.c_str(), r.unit.c_str(), r.ember,
              r.peer_name.empty() ? "-" : r.peer_name.c_str(), fmt(r.peer, "%.1f").c_str(),
              fmt(r.floor, "%.1f").c_str(), fmt(vs_peer, "%.2f").c_str(),
              fmt(vs_floor, "%.2f").c_str());
  std::fflush(stdout);
  records_.push_back(std::move(r));
}

void Report::fail(const std::string& why) {
  std::printf("FAILED: %s\n", why.c_str());
  std::fflush(stdout);
  failed_ = true;
}

Timing measure(const std::function<void()>& f, double warmup_s, double min_s, int min_reps) {
  const auto w0 = std::chrono::steady_clock::now();
  do f();
  while (seconds_since(w0) < warmup_s);

  std::vector<double> t;
  const auto t0 = std::chrono::steady_clock::now();
  while (int(t.size()) < min_reps || seconds_since(t0) < min_s) {
    const auto c0 = std::chrono::steady_clock::now();
    f();
    t.push_back(seconds_since(c0));
  }
  std::sort(t.begin(), t.end());
  return Timing{t.front(), t[t.size() / 2], int(t.size())};
}

std::vector<Timing> measure_alternating(const std::vector<std::function<void()>>& fs,
                                        int rounds) {
  std::vector<Timing> best(fs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      const Timing t = measure(fs[i], 0.15, 0.25);
      if (r == 0 || t.best_s < best[i].best_s) best[i].best_s = t.best_s;
      if (r == 0 || t.median_s < best[i].median_s) best[i].median_s = t.median_s;
      best[i].reps += t.reps;
    }
  }
  return best;
}

}  // namespace ember::bench
