// The cuda_train suite: one epoch of the seed network (nn::Network) at batch 1000,
// Adam(lr=0.01), cross-entropy, on CUDA against the same epoch on the CPU (with
// --threads threads), in seconds per epoch, and the speedup. The loop is the one
// bench/suite_train.cpp times (bench/train_epoch.cpp): a shuffled DataLoader on the calling thread, and
// loss.item() read every step as a logging loop does (on CUDA that synchronizes
// every step, as it does in PyTorch); each CUDA batch is copied to the device
// inside the timed loop. Images: FashionMNIST where it is installed (the epoch must
// then learn: mean loss under ln 10, test accuracy over 0.5, measured on the CPU
// after the epoch), else random images and labels of the same shape (then only a
// finite loss is required). The floor is the epoch's FLOPs at the measured SIMT
// FMA peak. Times are reported in ms per epoch (the table prints peers and floors
// to one decimal).
//
// Where a step's time goes: after the epochs, one float32 step on a fixed batch is
// timed phase by phase (the batch's copy to the device, each layer block's forward,
// the loss, zero_grad, backward, the Adam step, loss.item()), with a synchronization
// after each phase, median of 20 steps, beside the median of whole unsynchronized
// steps; printed as one line, so a GPU run says which kernels to work on next.
//
// Mixed precision: one more CUDA epoch with the forward and loss under autocast
// (float16) and backward/step through a GradScaler (nn/amp, docs/amp.md), reported
// beside the float32 CUDA epoch ("epoch b=1000 amp fp16", peer: the float32 CUDA
// epoch), since the AMP target is to beat float32 on the same GPU.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/cuda_floors.h"
#include "bench/cuda_harness.h"
#include "bench/train_epoch.h"
#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/data/fashion_mnist.h"
#include "nn/nn.h"
#include "tensor/cuda.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kBatch = 1000;
constexpr int kWarmupBatches = 5;

struct Data {
  Tensor images, labels;            // training set, CPU
  std::optional<data::FashionMNIST> test;  // only with the real data set
};

Data load() {
  Data d;
  try {
    data::FashionMNIST train(data::FashionMNIST::kDefaultRoot, true);
    d.test.emplace(data::FashionMNIST::kDefaultRoot, false);
    d.images = train.images();
    d.labels = train.labels();
    std::printf("cuda_train: FashionMNIST from %s, %lld training images\n", data::FashionMNIST::kDefaultRoot,
                static_cast<long long>(d.images.size(0)));
  } catch (const std::exception& e) {
    d.test.reset();
    manual_seed(5);
    d.images = rand({60000, 1, 28, 28});
    d.labels = (rand({60000}) * 10).to(kInt64);  // uniform over 0..9
    std::printf("cuda_train: no FashionMNIST (%s); random images and labels of the same shape\n", e.what());
  }
  return d;
}

struct Epoch {
  double seconds = 0, mean_loss = 0;
  std::optional<double> accuracy;
};

// A warm-up on a throw-away model (kernel modules, cuBLAS/cuDNN handles, the
// caching allocator's blocks), then a fresh model's first epoch, timed.
Epoch epoch_seconds(const Data& d, const Device& device, std::optional<DType> amp = std::nullopt) {
  const data::DataLoader::Options options{.batch_size = kBatch, .shuffle = true, .seed = 0};
  data::DataLoader loader(d.images, d.labels, options);
  {
    manual_seed(1);
    auto warm = std::make_shared<nn::Network>();
    warm->to(device);
    nn::optim::Adam warm_opt(warm->parameters(), 0.01);
    train_pass(*warm, warm_opt, loader, device, 0, kWarmupBatches, amp);
  }
  if (device.is_cuda()) cuda::synchronize();
  manual_seed(0);
  auto net = std::make_shared<nn::Network>();  // shared_ptr-owned (Module uses shared_from_this)
  net->to(device);
  nn::optim::Adam opt(net->parameters(), 0.01);
  Epoch e;
  const auto t0 = Clock::now();
  e.mean_loss = train_pass(*net, opt, loader, device, 0, 0, amp);
  if (device.is_cuda()) cuda::synchronize();
  e.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (d.test) {
    net->to(kCPU);
    e.accuracy = test_accuracy(*net, *d.test);
  }
  return e;
}

void check(Report& report, const Data& d, const char* where, const Epoch& e) {
  std::printf("  %-5s b=%lld %7.3f s/epoch  mean loss %.4f", where, static_cast<long long>(kBatch), e.seconds,
              e.mean_loss);
  if (e.accuracy) std::printf("  test accuracy %.4f", *e.accuracy);
  std::printf("\n");
  std::fflush(stdout);
  const bool learned = !d.test || (e.mean_loss < std::log(10.0) && e.accuracy && *e.accuracy > 0.5);
  if (!std::isfinite(e.mean_loss) || !learned)
    report.fail(std::string("cuda_train ") + where + ": the epoch did not learn (mean loss " +
                std::to_string(e.mean_loss) + ")");
}

// The median of v (v is reordered).
double median_of(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void print_step_breakdown(const Data& d) {
  namespace F = nn::functional;
  const Device cuda("cuda");
  manual_seed(2);
  auto net = std::make_shared<nn::Network>();
  net->to(cuda);
  nn::optim::Adam opt(net->parameters(), 0.01);
  const Tensor images = d.images.narrow(0, 0, kBatch).contiguous(), labels = d.labels.narrow(0, 0, kBatch);
  constexpr int kWarm = 5, kSteps = 20;
  const char* names[] = {"copy", "conv1+relu+pool", "conv2+relu+pool", "fc1+relu", "fc2+relu", "out",
                         "loss", "zero_grad", "backward", "adam", "item"};
  constexpr size_t kPhases = sizeof(names) / sizeof(names[0]);
  std::vector<std::vector<double>> us(kPhases);
  std::vector<double> whole;
  for (int rep = 0; rep < kWarm + kSteps; ++rep) {
    // Phase by phase, synchronized after each.
    size_t phase = 0;
    auto timed = [&](auto&& f) {
      cuda::synchronize();
      const auto t0 = Clock::now();
      f();
      cuda::synchronize();
      if (rep >= kWarm) us[phase].push_back(1e6 * std::chrono::duration<double>(Clock::now() - t0).count());
      ++phase;
    };
    Tensor x, y, a, loss;
    timed([&] { x = images.to(cuda), y = labels.to(cuda); });
    timed([&] { a = net->conv1->forward_relu_pool2x2(x); });
    timed([&] { a = net->conv2->forward_relu_pool2x2(a).flatten(1); });
    timed([&] { a = net->fc1->forward_relu(a); });
    timed([&] { a = net->fc2->forward_relu(a); });
    timed([&] { a = (*net->out)(a); });
    timed([&] { loss = F::cross_entropy(a, y); });
    timed([&] { opt.zero_grad(); });
    timed([&] { loss.backward(); });
    timed([&] { opt.step(); });
    timed([&] { (void)loss.item<double>(); });
    // The same step whole, as the epoch runs it (loss.item() its only synchronization).
    cuda::synchronize();
    const auto t0 = Clock::now();
    Tensor x2 = images.to(cuda), y2 = labels.to(cuda);
    Tensor l2 = F::cross_entropy((*net)(x2), y2);
    opt.zero_grad();
    l2.backward();
    opt.step();
    (void)l2.item<double>();
    if (rep >= kWarm) whole.push_back(1e6 * std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::string line;
  double sum = 0;
  for (size_t i = 0; i < kPhases; ++i) {
    const double m = median_of(us[i]);
    sum += m;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %s %.1f", names[i], m);
    line += buf;
  }
  std::printf("cuda_train step, float32, by phase (us, median of %d, synchronized after each):%s; sum %.1f; "
              "whole step unsynchronized %.1f\n",
              kSteps, line.c_str(), sum, median_of(whole));
  std::fflush(stdout);
}

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  const Data d = load();
  std::printf("cuda_train: seed network, batch %lld, Adam lr 0.01, cross-entropy, loss.item() every step; "
              "CPU epoch on %d threads\n",
              static_cast<long long>(kBatch), opt.threads);
  std::fflush(stdout);
  std::optional<Epoch> gpu, cpu, gpu_amp;
  cuda_case(report, "cuda_train cuda epoch", [&] {
    gpu = epoch_seconds(d, Device("cuda"));
    check(report, d, "cuda", *gpu);
  });
  cuda_case(report, "cuda_train cuda amp epoch", [&] {
    gpu_amp = epoch_seconds(d, Device("cuda"), kFloat16);
    check(report, d, "amp", *gpu_amp);
  });
  cuda_case(report, "cuda_train step breakdown", [&] { print_step_breakdown(d); });
  cuda_case(report, "cuda_train cpu epoch", [&] {
    cpu = epoch_seconds(d, kCPU);
    check(report, d, "cpu", *cpu);
  });
  if (!gpu) return;

  const std::string cpu_name = "ember-cpu-" + std::to_string(opt.threads) + "t";
  Record r;
  r.suite = "cuda_train";
  r.case_name = "epoch b=" + std::to_string(kBatch);
  r.unit = "ms/epoch (lower is better)";
  r.ember = 1e3 * gpu->seconds;
  r.peer_name = cpu_name;
  if (cpu) r.peer = 1e3 * cpu->seconds;
  r.floor = 1e3 * kTrainFlopsPerImage * double(d.images.size(0)) / (measured_cuda_fma_peak_tflops() * 1e12);
  report.add(std::move(r));
  if (gpu_amp) {
    Record a;
    a.suite = "cuda_train";
    a.case_name = "epoch b=" + std::to_string(kBatch) + " amp fp16";
    a.unit = "ms/epoch (lower is better)";
    a.ember = 1e3 * gpu_amp->seconds;
    a.peer_name = "ember-cuda-float32";
    a.peer = 1e3 * gpu->seconds;
    report.add(std::move(a));
  }
  if (cpu) {
    Record s;
    s.suite = "cuda_train";
    s.case_name = "speedup b=" + std::to_string(kBatch);
    s.unit = "x (CPU s / CUDA s)";
    s.ember = cpu->seconds / gpu->seconds;
    report.add(std::move(s));
  }
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(cuda_train, ember::bench::run);
