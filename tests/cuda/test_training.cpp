// End to end on the GPU: the seed network trained on CUDA follows the same network
// trained on the CPU. Both start from the same weights (built on the CPU, the state
// copied into a second instance moved to CUDA) and see the same batches: fixed
// random images labelled by a fixed random linear "teacher", so the task is
// learnable and needs no data files. float32 on both devices (cuBLAS without TF32),
// so the two loss curves differ only by rounding, which training amplifies slowly;
// the bounds (docs/numerics.md, "CUDA against CPU") are 1e-3 relative for the first
// 50 steps and 2e-2 after (relative to max(loss, 0.1)).
#include <cmath>

#include "cuda/both.h"
#include "nn/nn.h"

using namespace ember;
using cuda_test::kCuda;
namespace F = ember::nn::functional;

namespace {

struct Batch {
  Tensor images, labels;
};

// `count` batches of `size` images [size, 1, 28, 28] with labels in [0, 10).
std::vector<Batch> make_batches(int64_t count, int64_t size) {
  Generator g(2024);
  const Tensor teacher = randn({784, 10}, kFloat32, &g);
  std::vector<Batch> batches;
  for (int64_t i = 0; i < count; ++i) {
    const Tensor x = randn({size, 1, 28, 28}, kFloat32, &g);
    batches.push_back({x, matmul(x.flatten(1), teacher).argmax(1)});
  }
  return batches;
}

template <class Opt>
std::vector<double> train(nn::Network& net, Opt& opt, const std::vector<Batch>& batches, int steps, bool gpu) {
  std::vector<double> losses;
  net.train();
  for (int s = 0; s < steps; ++s) {
    const Batch& b = batches[static_cast<size_t>(s) % batches.size()];
    const Tensor x = gpu ? b.images.cuda() : b.images, y = gpu ? b.labels.cuda() : b.labels;
    opt.zero_grad();
    Tensor loss = F::cross_entropy(net(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

template <class MakeOpt>
void check_curves(const char* name, MakeOpt make_opt) {
  manual_seed(99);
  nn::Network cpu_net, gpu_net;
  gpu_net.load_state_dict(cpu_net.state_dict());
  gpu_net.to(Device("cuda"));
  auto cpu_opt = make_opt(cpu_net.parameters());
  auto gpu_opt = make_opt(gpu_net.parameters());
  const std::vector<Batch> batches = make_batches(8, 64);
  const int steps = 300;
  const std::vector<double> lc = train(cpu_net, cpu_opt, batches, steps, false);
  const std::vector<double> lg = train(gpu_net, gpu_opt, batches, steps, true);
  REQUIRE(lc.size() == lg.size());
  double worst_early = 0, worst_late = 0;
  for (int s = 0; s < steps; ++s) {
    INFO(name << " step " << s << ": CPU loss " << lc[s] << ", CUDA loss " << lg[s]);
    REQUIRE(std::isfinite(lg[s]));
    // Relative to the loss, but never to less than 0.1: once a loss is tiny its
    // rounding-driven differences are judged in absolute terms (2e-3 after step 50).
    const double rel = std::fabs(lg[s] - lc[s]) / std::max(std::fabs(lc[s]), 0.1);
    if (s < 50) {
      worst_early = std::max(worst_early, rel);
      CHECK(rel < 1e-3);
    } else {
      worst_late = std::max(worst_late, rel);
      CHECK(rel < 2e-2);
    }
  }
  // The run learned something (so agreement is not agreement on noise): the mean
  // loss of the last 8 steps is well below the first step's ln 10.
  double tail = 0;
  for (int s = steps - 8; s < steps; ++s) tail += lc[s] / 8;
  INFO(name << ": first loss " << lc[0] << ", mean of the last 8 " << tail << "; worst relative difference "
            << worst_early << " (first 50 steps), " << worst_late << " (after)");
  CHECK(tail < 0.6 * lc[0]);
  WARN(name << ": worst relative loss difference CPU vs CUDA " << worst_early << " (steps 0-49), " << worst_late
            << " (steps 50-299)");
}

}  // namespace

TEST_CASE("the seed network trains on CUDA as on the CPU (SGD with momentum)", "[cuda][training]") {
  check_curves("SGD", [](std::vector<Tensor> p) { return nn::optim::SGD(p, 0.02, {0.9, 0, 0, false}); });
}

TEST_CASE("the seed network trains on CUDA as on the CPU (Adam)", "[cuda][training]") {
  check_curves("Adam", [](std::vector<Tensor> p) { return nn::optim::Adam(p, 1e-3); });
}
