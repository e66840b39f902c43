// The infer suite: the seed network (nn::Network, eval mode, NoGradGuard) on real
// FashionMNIST test images: the median latency of a batch of 1 over many calls and
// the median time of a batch of 1000, next to two peers running the same weights:
// PyTorch under torch.no_grad() in eval mode (bench/peers/torch_seed_net.py) and
// ONNX Runtime (onnxruntime-node, bench/peers/ort_bench.js, intra-op threads =
// --threads) on the network exported by PyTorch to ONNX. All three alternate in
// rounds after warm-up; each keeps its best median. The floor is the forward
// pass's multiply-adds at the measured FMA peak. Also the peak RSS of the suite,
// measured as in the train suite (suite_train.cpp), and Ember's batch-1 forward
// broken down by op (print_breakdown).
//
// Same model on every side: Ember's freshly initialized weights are written to a
// temporary safetensors file that both peers load; before anything is timed,
// PyTorch exports the ONNX model from them and checks its logits for the first
// 1000 test images against Ember's, and every peer run's output sums are checked
// against Ember's, as the onnx suite does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/ort_peer.h"
#include "bench/torch_peer.h"
#include "ember.h"
#include "nn/data/fashion_mnist.h"
#include "nn/nn.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCalls1 = 2000, kCalls1000 = 20;
// Ember and its peers alternate so that a burst of load elsewhere falls on all;
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

std::pair<double, double> output_sums(const Tensor& y) {
  double sum = 0, abs_sum = 0;
  for (float v : y.contiguous().to_vector<float>()) sum += v, abs_sum += std::abs(v);
  return {sum, abs_sum};
}

// A fresh folder for the files the peers read (weights, ONNX model, input batch),
// removed when the suite ends; an empty path when none can be made.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "ember-bench-infer-XXXXXX").string();
    if (mkdtemp(templ.data())) path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

// Where a batch-1 forward's time goes: each op of Network::forward timed alone on
// its real input (median of kCalls1 calls), beside the whole forward. What the ops
// do not account for is the network's own overhead (module calls, the walk over
// its children).
void print_breakdown(nn::Network& net, const Tensor& x1, double whole_s) {
  const Tensor a1 = net.conv1->forward_relu_pool2x2(x1);
  const Tensor a2 = net.conv2->forward_relu_pool2x2(a1);
  const Tensor flat = a2.flatten(1);
  const Tensor r1 = net.fc1->forward_relu(flat), r2 = net.fc2->forward_relu(r1);
  struct Step {
    const char* name;
    std::function<Tensor()> run;
  };
  const Step steps[] = {
      {"conv1+relu+pool", [&] { return net.conv1->forward_relu_pool2x2(x1); }},
      {"conv2+relu+pool", [&] { return net.conv2->forward_relu_pool2x2(a1); }},
      {"flatten", [&] { return a2.flatten(1); }},
      {"fc1+relu", [&] { return net.fc1->forward_relu(flat); }},
      {"fc2+relu", [&] { return net.fc2->forward_relu(r1); }},
      {"out", [&] { return (*net.out)(r2); }},
  };
  std::string line;
  double sum = 0;
  for (const Step& s : steps) {
    const double t = median_seconds([&] { Tensor y = s.run(); }, kCalls1 / 10, kCalls1);
    sum += t;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %s %.2f", s.name, t * 1e6);
    line += buf;
  }
  std::printf("infer: ember batch-1 forward by op (us, median each):%s; sum %.2f, whole forward %.2f\n", line.c_str(),
              sum * 1e6, whole_s * 1e6);
}

// The best (lowest) of the rounds' medians so far.
void keep_best(std::optional<double>& best, double v) { best = best ? std::min(*best, v) : v; }

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
  const auto [ember_sum1, ember_abs1] = output_sums(net(x1));
  const auto [ember_sum1000, ember_abs1000] = output_sums(check);

  // The peers load Ember's weights from here.
  std::string why;
  const bool have_torch = torch_peer_available(&why);
  const ScratchDir scratch;
  const std::string weights = (scratch.path / "weights.safetensors").string();
  std::string torch_missing = why, ort_missing = ort_peer_missing();
  if (have_torch && scratch.path.empty()) torch_missing = "cannot create a temporary folder for the weights";
  if (torch_missing.empty()) {
    serialize::save_safetensors(net.state_dict(), weights);
    serialize::save_npy((scratch.path / "ember_logits.npy").string(), check);
    std::printf("infer: peer pytorch on ember's weights, %s\n", torch_peer_environment(opt.threads).c_str());
  } else {
    std::printf("infer: peer pytorch: none (%s)\n", torch_missing.c_str());
  }

  // ONNX Runtime runs the model PyTorch exports from the same weights, once the
  // exported model's logits match Ember's.
  std::string ort_model, ort_input;
  if (ort_missing.empty() && !torch_missing.empty()) ort_missing = "PyTorch exports its model: " + torch_missing;
  if (ort_missing.empty()) {
    const auto exported = run_torch_peer({"export", "--weights", weights, "--ember-logits",
                                          (scratch.path / "ember_logits.npy").string(), "--out",
                                          scratch.path.string()},
                                         opt.threads, &why);
    if (!exported || !exported->contains("export")) {
      ort_missing = "exporting the model failed: " + (exported ? std::string("no export result") : why);
    } else {
      const nlohmann::json& e = (*exported)["export"];
      const double diff = e["max_abs_diff_vs_ember"].get<double>();
      if (!(diff <= 1e-4)) {
        report.fail("infer: PyTorch's logits on ember's weights differ from ember's by " + std::to_string(diff));
        ort_missing = "the exported model does not compute ember's logits";
      } else {
        ort_model = e["model"].get<std::string>();
        ort_input = e["input"].get<std::string>();
        std::printf("infer: peer onnxruntime-node (%s), CPU provider, intra-op %d threads, inter-op 1, all graph "
                    "optimizations, on the model torch %s exported (opset %d) from ember's weights: its logits "
                    "for 1000 test images within %.1e of ember's\n",
                    ort_peer_node().c_str(), opt.threads, (*exported)["torch"].get<std::string>().c_str(),
                    e["opset"].get<int>(), diff);
      }
    }
  }
  if (!ort_missing.empty()) std::printf("infer: peer onnxruntime: none (%s)\n", ort_missing.c_str());
  std::fflush(stdout);

  double t1 = 0, t1000 = 0;
  std::optional<double> p1, p1000, prss, o1, o1000;
  std::optional<nlohmann::json> ort_last;
  bool torch_failed = false, ort_failed = false;
  for (int round = 0; round < kRounds; ++round) {
    const double e1 = median_seconds([&] { Tensor y = net(x1); }, kCalls1 / 10, kCalls1);
    const double e1000 = median_seconds([&] { Tensor y = net(x1000); }, 3, kCalls1000);
    t1 = round == 0 ? e1 : std::min(t1, e1);
    t1000 = round == 0 ? e1000 : std::min(t1000, e1000);
    std::printf("  round %d ember       batch 1 median %7.1f us, batch 1000 median %7.2f ms (%6.0f images/s)  (load %.2f)\n",
                round + 1, e1 * 1e6, e1000 * 1e3, 1 / e1000 * 1000, load1());
    std::fflush(stdout);

    if (torch_missing.empty() && !torch_failed) {
      const std::optional<nlohmann::json> peer =
          run_torch_peer({"infer", "--calls1", std::to_string(kCalls1), "--calls1000", std::to_string(kCalls1000),
                          "--weights", weights},
                         opt.threads, &why);
      if (!peer || !peer->contains("infer")) {
        std::printf("  pytorch peer failed: %s\n", peer ? "no infer result" : why.c_str());
        torch_failed = true;
      } else {
        const nlohmann::json& c = (*peer)["infer"];
        nlohmann::json sums = {{"output_sum", c["batch1000_output_sum"]},
                               {"output_abs_sum", c["batch1000_output_abs_sum"]}};
        if (!ort_sums_agree(ember_sum1000, ember_abs1000, sums, &why))
          report.fail("infer: pytorch batch 1000: " + why);
        const double q1 = c["batch1_median_us"].get<double>(), q1000 = c["batch1000_median_ms"].get<double>();
        const double rss = c["peak_rss_mib"].get<double>();
        std::printf("  round %d pytorch     batch 1 median %7.1f us, batch 1000 median %7.2f ms (%6.0f images/s)  "
                    "(load %.2f; torch %s, %s, eval, %d threads, peak RSS %.0f MiB)\n",
                    round + 1, q1, q1000, 1e6 / q1000, load1(), (*peer)["torch"].get<std::string>().c_str(),
                    c["guard"].get<std::string>().c_str(), (*peer)["threads"].get<int>(), rss);
        std::fflush(stdout);
        keep_best(p1, q1);
        keep_best(p1000, q1000);
        keep_best(prss, rss);
      }
    }

    if (ort_missing.empty() && !ort_failed) {
      const auto r1 = run_ort_peer(ort_model, ort_input, 1, opt.threads, kCalls1 / 10, kCalls1, &why);
      const auto r1000 = r1 ? run_ort_peer(ort_model, ort_input, 1000, opt.threads, 3, kCalls1000, &why) : r1;
      if (!r1000) {
        std::printf("  onnxruntime peer failed: %s\n", why.c_str());
        ort_failed = true;
      } else {
        if (!ort_sums_agree(ember_sum1, ember_abs1, *r1, &why)) report.fail("infer: onnxruntime batch 1: " + why);
        if (!ort_sums_agree(ember_sum1000, ember_abs1000, *r1000, &why))
          report.fail("infer: onnxruntime batch 1000: " + why);
        const double q1 = (*r1)["median_us"].get<double>(), q1000 = (*r1000)["median_us"].get<double>() * 1e-3;
        std::printf("  round %d onnxruntime batch 1 median %7.1f us, batch 1000 median %7.2f ms (%6.0f images/s)  "
                    "(load %.2f; onnxruntime %s, batch 1 p90 %.1f us, public async run %.1f us)\n",
                    round + 1, q1, q1000, 1e6 / q1000, load1(), (*r1)["ort"].get<std::string>().c_str(),
                    (*r1)["p90_us"].get<double>(), (*r1)["api_median_us"].get<double>());
        std::fflush(stdout);
        keep_best(o1, q1);
        keep_best(o1000, q1000);
        ort_last = r1;
      }
    }
  }
  print_breakdown(net, x1, t1);
  const double ember_rss = peak_rss_mib();
  std::printf("infer: ember peak RSS %.0f MiB%s\n", ember_rss, peak_reset ? "" : " (whole process)");
  const std::string torch_name =
      !torch_missing.empty() ? "pytorch (absent)" : torch_failed ? "pytorch (failed)" : "pytorch";
  if (torch_failed) p1 = p1000 = prss = std::nullopt;
  const std::string ort_name = ort_peer_name(ort_last, !ort_missing.empty(), ort_failed);
  if (ort_failed) o1 = o1000 = std::nullopt;

  // One record per peer: the same Ember figure beside each.
  const double peak = measured_fma_peak_gflops(opt.threads) * 1e9;
  auto add = [&](const char* name, const char* unit, double ember, const std::string& peer_name,
                 std::optional<double> p, std::optional<double> floor) {
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
  const double floor1 = kForwardFlopsPerImage / peak * 1e6, floor1000 = 1000 * kForwardFlopsPerImage / peak * 1e3;
  add("batch 1 median latency", "us (lower is better)", t1 * 1e6, torch_name, p1, floor1);
  add("batch 1 median latency", "us (lower is better)", t1 * 1e6, ort_name, o1, floor1);
  add("batch 1000 median", "ms/batch (lower is better)", t1000 * 1e3, torch_name, p1000, floor1000);
  add("batch 1000 median", "ms/batch (lower is better)", t1000 * 1e3, ort_name, o1000, floor1000);
  add(peak_reset ? "peak RSS" : "peak RSS (process)", "MiB (lower is better)", ember_rss, torch_name, prss, std::nullopt);
}

}  // namespace

EMBER_BENCH_SUITE(infer, infer_suite);

}  // namespace ember::bench
