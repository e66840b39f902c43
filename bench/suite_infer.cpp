// The infer suite: the seed network (nn::Network, eval mode, NoGradGuard) on real
// FashionMNIST test images: the median latency of a batch of 1 over many calls and
// the median time of a batch of 1000, next to PyTorch under torch.no_grad() in eval
// mode (bench/peers/torch_seed_net.py), after warm-up on both sides, in alternating
// rounds. The floor is the forward pass's multiply-adds at the measured FMA peak.
// Also the peak RSS of the suite, measured as in the train suite (suite_train.cpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/torch_peer.h"
#include "ember.h"
#include "nn/data/fashion_mnist.h"
#include "nn/nn.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCalls1 = 2000, kCalls1000 = 20;
// Ember and PyTorch alternate so that a burst of load elsewhere falls on both;
// each keeps its best (lowest) median.
constexpr int kRounds = 2;

double load1() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

// Multiply-adds per image of the forward pass: conv1, conv2, fc1, fc2, out.
constexpr double kForwardFlopsPerImage =
    2 * (6.0 * 24 * 24 * 25 + 12.0 * 8 * 8 * 150 + 192.0 * 120 + 120.0 * 60 + 60.0 * 10);

// Median seconds of `calls` calls of f after `warmup` calls.
template <class F>
double median_seconds(F&& f, int warmup, int calls) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  t.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void infer_suite(const Options& opt, Report& report) {
  if (opt.device != "cpu") {
    std::printf("infer: no %s run yet, skipped\n", opt.device.c_str());
    return;
  }
  set_num_threads(opt.threads);
  const data::FashionMNIST test_set(data::FashionMNIST::kDefaultRoot, false);
  cpu_empty_cache();
  const bool peak_reset = reset_peak_rss();
  manual_seed(0);
  auto net_ptr = std::make_shared<nn::Network>();  // shared_ptr-owned, as Module expects
  nn::Network& net = *net_ptr;
  net.eval();
  NoGradGuard no_grad;
  const Tensor x1 = test_set.images().narrow(0, 0, 1).contiguous();
  const Tensor x1000 = test_set.images().narrow(0, 0, 1000).contiguous();

  // A forward that returns nothing finite is no benchmark.
  const Tensor check = net(x1000);
  if (check.shape() != std::vector<int64_t>{1000, 10} || !std::isfinite(check.abs().sum().item<double>()))
    report.fail("infer: the forward pass does not give finite [1000, 10] logits");

  std::string why;
  const bool have_peer = torch_peer_available(&why);
  if (have_peer)
    std::printf("infer: peer pytorch, %s\n", torch_peer_environment(opt.threads).c_str());
  else
    std::printf("infer: peer: none (%s)\n", why.c_str());
  std::fflush(stdout);

  double t1 = 0, t1000 = 0;
  std::optional<double> p1, p1000, prss;
  bool peer_failed = false;
  for (int round = 0; round < kRounds; ++round) {
    const double e1 = median_seconds([&] { Tensor y = net(x1); }, kCalls1 / 10, kCalls1);
    const double e1000 = median_seconds([&] { Tensor y = net(x1000); }, 3, kCalls1000);
    t1 = round == 0 ? e1 : std::min(t1, e1);
    t1000 = round == 0 ? e1000 : std::min(t1000, e1000);
    std::printf("  round %d ember   batch 1 median %7.1f us, batch 1000 median %7.2f ms (%6.0f images/s)  (load %.2f)\n",
                round + 1, e1 * 1e6, e1000 * 1e3, 1 / e1000 * 1000, load1());
    std::fflush(stdout);
    if (!have_peer || peer_failed) continue;
    const std::optional<nlohmann::json> peer = run_torch_peer(
        {"infer", "--calls1", std::to_string(kCalls1), "--calls1000", std::to_string(kCalls1000)}, opt.threads, &why);
    if (!peer || !peer->contains("infer")) {
      std::printf("  pytorch peer failed: %s\n", peer ? "no infer result" : why.c_str());
      peer_failed = true;
      continue;
    }
    const nlohmann::json& c = (*peer)["infer"];
    const double q1 = c["batch1_median_us"].get<double>(), q1000 = c["batch1000_median_ms"].get<double>();
    const double rss = c["peak_rss_mib"].get<double>();
    std::printf("  round %d pytorch batch 1 median %7.1f us, batch 1000 median %7.2f ms (%6.0f images/s)  (load %.2f; "
                "torch %s, %s, eval, %d threads, peak RSS %.0f MiB)\n",
                round + 1, q1, q1000, 1e6 / q1000, load1(), (*peer)["torch"].get<std::string>().c_str(),
                c["guard"].get<std::string>().c_str(), (*peer)["threads"].get<int>(), rss);
    std::fflush(stdout);
    p1 = p1 ? std::min(*p1, q1) : q1;
    p1000 = p1000 ? std::min(*p1000, q1000) : q1000;
    prss = prss ? std::min(*prss, rss) : rss;
  }
  const double ember_rss = peak_rss_mib();
  std::printf("infer: ember peak RSS %.0f MiB%s\n", ember_rss, peak_reset ? "" : " (whole process)");
  const std::string peer_name = !have_peer ? "pytorch (absent)" : peer_failed ? "pytorch (failed)" : "pytorch";
  if (peer_failed) p1 = p1000 = prss = std::nullopt;

  const double peak = measured_fma_peak_gflops(opt.threads) * 1e9;
  auto add = [&](const char* name, const char* unit, double ember, std::optional<double> p, std::optional<double> floor) {
    Record r;
    r.suite = "infer";
    r.case_name = name;
    r.unit = unit;
    r.ember = ember;
    r.peer_name = peer_name;
    r.peer = p;
    r.floor = floor;
    report.add(std::move(r));
  };
  add("batch 1 median latency", "us (lower is better)", t1 * 1e6, p1, kForwardFlopsPerImage / peak * 1e6);
  add("batch 1000 median", "ms/batch (lower is better)", t1000 * 1e3, p1000, 1000 * kForwardFlopsPerImage / peak * 1e3);
  add(peak_reset ? "peak RSS" : "peak RSS (process)", "MiB", ember_rss, prss, std::nullopt);
}

}  // namespace

EMBER_BENCH_SUITE(infer, infer_suite);

}  // namespace ember::bench
