// The onnx suite: models exported from PyTorch (tests/onnx/models/: the seed CNN,
// the MLP, the transformer, a 64-channel conv block) and quantized copies of them,
// through ember::onnx::Model::run, next to ONNX Runtime
// (bench/peers/ort_bench.js in a node child process, intra-op threads = --threads)
// in the same run, in alternating rounds: the median latency of batch 1 and the
// median time of batch 1000. Both sides get the same batch (the committed input
// rows repeated) and their output checksums must agree. Then, at batch 1, where
// Ember's time goes: each step of the model's plan timed alone, summed per op type.
// The floor is the model's multiply-adds at the measured FMA peak (int8 models:
// at 4x that peak, VNNI's rate).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/ort_peer.h"
#include "ember.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "onnx/onnx.h"
#include "onnx/plan.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kModels = std::string(EMBER_BENCH_SOURCE_DIR) + "/../tests/onnx/models/";
constexpr int kRounds = 3;

struct ModelCase {
  const char* name;
  double flops_per_row;  // multiply-adds x 2 of one row of the batch
  const char* input = nullptr;  // whose committed input it runs (default: its own)
  // int8 products: the floor takes 4x the float32 FMA peak (one VNNI vpdpbusd
  // does 64 byte products where one FMA does 16 float ones).
  bool int8 = false;
};

// Seed CNN: conv1, conv2, fc1, fc2, out. MLP: three layers. Transformer, per
// sequence of 16 tokens: per layer QKV projection, scores, scores x V, output
// projection and the two feed-forward layers; then the head.
const ModelCase kCases[] = {
    {"seed_net", 2 * (6.0 * 24 * 24 * 25 + 12.0 * 8 * 8 * 150 + 192.0 * 120 + 120.0 * 60 + 60.0 * 10)},
    {"mlp", 2 * (784.0 * 256 + 256.0 * 128 + 128.0 * 10)},
    {"transformer", 2 * (2 * (16.0 * 64 * 192 + 2 * 16.0 * 16 * 64 + 16.0 * 64 * 64 + 2 * 16.0 * 64 * 128) + 16.0 * 64 * 10)},
    // The MLP as ONNX Runtime's dynamic quantization writes it (models/make_quantized.sh).
    {"mlp_int8", 2 * (784.0 * 256 + 256.0 * 128 + 128.0 * 10), "mlp", true},
    // Two 64-channel 3x3 convolutions at 14x14 (a real network's middle layers) and
    // the head.
    {"conv_block", 2 * (2 * 64.0 * 64 * 9 * 14 * 14 + 64.0 * 10)},
    // The seed CNN and the conv block likewise: their convolutions become ConvInteger.
    {"seed_net_int8", 2 * (6.0 * 24 * 24 * 25 + 12.0 * 8 * 8 * 150 + 192.0 * 120 + 120.0 * 60 + 60.0 * 10), "seed_net",
     true},
    {"conv_block_int8", 2 * (2 * 64.0 * 64 * 9 * 14 * 14 + 64.0 * 10), "conv_block", true},
};
struct BatchCase {
  int64_t batch;
  int warmup, calls;
};
const BatchCase kBatches[] = {{1, 200, 2000}, {1000, 3, 20}};

double load1() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

template <class F>
std::vector<double> sorted_seconds(F&& f, int warmup, int calls) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t(static_cast<size_t>(calls));
  for (auto& s : t) {
    const auto t0 = Clock::now();
    f();
    s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::sort(t.begin(), t.end());
  return t;
}
double median(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }

// The committed input's rows repeated up to `batch` rows (ort_bench.js does the same).
Tensor tile_rows(const Tensor& x, int64_t batch) {
  const Tensor src = x.contiguous();
  Shape shape = src.shape();
  shape[0] = batch;
  Tensor out = empty(shape, TensorOptions(src.dtype()));
  const size_t row = src.nbytes() / static_cast<size_t>(src.size(0));
  for (int64_t i = 0; i < batch; ++i)
    std::memcpy(static_cast<char*>(out.data_ptr()) + i * row,
                static_cast<const char*>(src.data_ptr()) + (i % src.size(0)) * row, row);
  return out;
}

std::pair<double, double> sums(const Tensor& y) {
  double s = 0, a = 0;
  for (float v : y.contiguous().to_vector<float>()) s += v, a += std::abs(v);
  return {s, a};
}

// Where the time of one batch-1 call goes: the plan's steps run as Plan::run runs
// them, each timed alone; per op type the sum of its steps' medians, and what
// run() spends outside the steps. Shape-only steps run in the first call only
// and their values are reused after, as Plan::run reuses them (its ShapeMemo). Whole run() calls alternate with the stepped
// ones, so that both medians come from the same stretch of machine load.
void print_breakdown(const std::string& name, const onnx::Model& model, const Tensor& x) {
  std::ifstream f(kModels + name + ".onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto plan = onnx::build_plan(bytes, kCPU, kModels, kModels + name + ".onnx", true);
  constexpr int kWarmup = 100, kCalls = 1000;
  std::vector<std::vector<double>> per_step(plan->steps.size());
  std::vector<double> whole;
  std::vector<Tensor> shape_values(plan->num_slots);  // outputs of the shape-only steps
  NoGradGuard no_grad;
  for (int call = 0; call < kWarmup + kCalls; ++call) {
    const auto r0 = Clock::now();
    model.run({x});
    if (call >= kWarmup) whole.push_back(std::chrono::duration<double>(Clock::now() - r0).count());
    std::vector<Tensor> slots(plan->num_slots), args;
    slots[plan->input_slots[0]] = x;
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      const onnx::Step& step = plan->steps[i];
      if (step.shape_only && call > 0) {
        for (int64_t o : step.outputs)
          if (o >= 0) slots[static_cast<size_t>(o)] = shape_values[static_cast<size_t>(o)];
        for (uint32_t s : step.release) slots[s] = Tensor();
        continue;
      }
      args.clear();
      for (const onnx::ValueRef& r : step.inputs)
        args.push_back(r.kind == onnx::ValueRef::Kind::Slot       ? slots[r.index]
                       : r.kind == onnx::ValueRef::Kind::Constant ? plan->constants[r.index]
                                                                  : Tensor());
      const auto t0 = Clock::now();
      std::vector<Tensor> outs = step.fn(args);
      if (call >= kWarmup) per_step[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      for (size_t j = 0; j < step.outputs.size() && j < outs.size(); ++j)
        if (step.outputs[j] >= 0) {
          if (step.shape_only) shape_values[static_cast<size_t>(step.outputs[j])] = outs[j];
          slots[static_cast<size_t>(step.outputs[j])] = std::move(outs[j]);
        }
      for (uint32_t s : step.release) slots[s] = Tensor();
    }
  }
  std::sort(whole.begin(), whole.end());
  const double run_median_s = median(whole);
  std::map<std::string, std::pair<int, double>> by_op;  // op type -> steps, seconds
  double total = 0;
  size_t shape_only = 0;
  for (size_t i = 0; i < per_step.size(); ++i) {
    if (plan->steps[i].shape_only) {
      ++shape_only;
      continue;
    }
    std::sort(per_step[i].begin(), per_step[i].end());
    std::string op = plan->steps[i].op_type;  // "Conv+Relu+MaxPool" for a fused step
    for (const auto& f : plan->steps[i].fused) op += "+" + f.op_type;
    auto& slot = by_op[op];
    slot.first += 1;
    slot.second += median(per_step[i]);
    total += median(per_step[i]);
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& p, const auto& q) { return p.second.second > q.second.second; });
  std::printf("  where ember's batch-1 time goes (%s, %zu steps of which %zu shape-only, run once per input shape; "
              "medians of %d calls each; run() median %.1f us):\n",
              name.c_str(), plan->steps.size(), shape_only, kCalls, run_median_s * 1e6);
  for (const auto& [op, v] : rows)
    std::printf("    %-20s %3d steps %8.1f us %5.1f%%\n", op.c_str(), v.first, v.second * 1e6,
                100 * v.second / run_median_s);
  std::printf("    %-20s %9s %8.1f us %5.1f%%\n", "outside the steps", "", (run_median_s - total) * 1e6,
              100 * (run_median_s - total) / run_median_s);
}

void onnx_suite(const Options& opt, Report& report) {
  if (opt.device != "cpu") {
    std::printf("onnx: no %s run yet, skipped\n", opt.device.c_str());
    return;
  }
  set_num_threads(opt.threads);
  std::printf("onnx: ember kernels: gemm %s, isa %s (convolution, pooling, softmax and elementwise tables), "
              "%d threads\n",
              cpu::gemm_kernel_name(), cpu::isa_name(cpu::active_isa()), opt.threads);
  const std::string missing = ort_peer_missing();
  if (missing.empty())
    std::printf("onnx: peer onnxruntime-node (%s), CPU provider, intra-op %d threads, inter-op 1, sequential, "
                "all graph optimizations\n", ort_peer_node().c_str(), opt.threads);
  else
    std::printf("onnx: peer: none (%s)\n", missing.c_str());
  const double peak = measured_fma_peak_gflops(opt.threads) * 1e9;

  for (const ModelCase& mc : kCases) {
    const std::string path = kModels + mc.name + ".onnx",
                      input = kModels + (mc.input ? mc.input : mc.name) + "_input_0.pb";
    const Tensor x0 = onnx::load_tensor(input);
    onnx::Model model;
    std::string ember_error;
    try {
      model = onnx::load(path);
      model.run({x0});
    } catch (const Error& e) {
      ember_error = e.what();
      std::printf("onnx: %s: ember cannot run it, no records: %s\n", mc.name, e.what());
    }
    Tensor x1;
    for (const BatchCase& bc : kBatches) {
      const Tensor x = tile_rows(x0, bc.batch);
      std::optional<double> ember_s;
      // ONNX Runtime's best median, infinite until one is measured (a plain double:
      // GCC 12 reports an optional<double> here as maybe used uninitialized).
      double ort_s = std::numeric_limits<double>::infinity();
      std::optional<nlohmann::json> ort_last;
      bool peer_ok = missing.empty();
      for (int round = 0; round < kRounds; ++round) {
        if (ember_error.empty()) {
          const auto t = sorted_seconds([&] { auto y = model.run({x}); }, bc.warmup, bc.calls);
          const double e = median(t);
          ember_s = ember_s ? std::min(*ember_s, e) : e;
          std::printf("  %-11s batch %4lld round %d ember %10.1f us  (p10 %.1f, p90 %.1f; load %.2f)\n", mc.name,
                      static_cast<long long>(bc.batch), round + 1, e * 1e6, t[t.size() / 10] * 1e6,
                      t[t.size() * 9 / 10] * 1e6, load1());
        }
        if (!peer_ok) continue;
        std::string why;
        const auto j = run_ort_peer(path, input, bc.batch, opt.threads, bc.warmup, bc.calls, &why);
        if (!j) {
          std::printf("  onnxruntime peer failed: %s\n", why.c_str());
          peer_ok = false;
          continue;
        }
        const double o = (*j)["median_us"].get<double>() * 1e-6;
        ort_s = std::min(ort_s, o);
        ort_last = j;
        std::printf("  %-11s batch %4lld round %d ort   %10.1f us  (p10 %.1f, p90 %.1f, p99 %.1f; public async "
                    "run %.1f us; load %.2f)\n",
                    mc.name, static_cast<long long>(bc.batch), round + 1, o * 1e6, (*j)["p10_us"].get<double>(),
                    (*j)["p90_us"].get<double>(), (*j)["p99_us"].get<double>(),
                    (*j)["api_median_us"].get<double>(), load1());
      }
      if (!ember_error.empty()) continue;
      if (!peer_ok) ort_s = std::numeric_limits<double>::infinity();
      const bool have_ort = std::isfinite(ort_s);
      // Both sides must have computed the same outputs.
      if (have_ort) {
        const auto [s, a] = sums(model.run({x})[0]);
        std::string why;
        if (!ort_sums_agree(s, a, *ort_last, &why))
          report.fail("onnx: " + std::string(mc.name) + " batch " + std::to_string(bc.batch) + ": " + why);
      }
      const std::string peer_name = ort_peer_name(ort_last, !missing.empty(), !peer_ok);
      Record r;
      r.suite = "onnx";
      r.case_name = std::string(mc.name) + (bc.batch == 1 ? " batch 1 median" : " batch 1000 median");
      r.unit = bc.batch == 1 ? "us (lower is better)" : "ms/batch (lower is better)";
      const double scale = bc.batch == 1 ? 1e6 : 1e3;
      r.ember = *ember_s * scale;
      r.peer_name = peer_name;
      if (have_ort) r.peer = ort_s * scale;
      r.floor = bc.batch * mc.flops_per_row / (mc.int8 ? 4 * peak : peak) * scale;
      report.add(std::move(r));
      if (bc.batch == 1) x1 = x;
    }
    if (ember_error.empty()) print_breakdown(mc.name, model, x1);
  }
}

}  // namespace

EMBER_BENCH_SUITE(onnx, onnx_suite);

}  // namespace ember::bench
