// The batches the CUDA training test and its CPU calibration program both train on
// (see test_training.cpp for why this task and docs/numerics.md for the bounds).
#pragma once

#include <vector>

#include "ember.h"
#include "nn/nn.h"

namespace cuda_test {

struct Batch {
  ember::Tensor images, labels;
};

// `count` batches of `size` images [size, 1, 28, 28]: image i is the template of its
// label (uniform over 0..9) plus Gaussian noise of standard deviation 2.
inline std::vector<Batch> make_batches(int64_t count, int64_t size) {
  ember::Generator g(2024);
  const ember::Tensor templates = ember::randn({10, 1, 28, 28}, ember::kFloat32, &g);
  std::vector<Batch> batches;
  for (int64_t i = 0; i < count; ++i) {
    const ember::Tensor y = (ember::rand({size}, ember::kFloat32, &g) * 10).to(ember::kInt64).clamp(0, 9);
    std::vector<ember::Tensor> rows;
    for (int64_t j = 0; j < size; ++j) rows.push_back(templates[y[j].item<int64_t>()]);
    batches.push_back({ember::stack(rows, 0) + ember::randn({size, 1, 28, 28}, ember::kFloat32, &g) * 2.0, y});
  }
  return batches;
}

// Trains `net` for `steps` steps over the batches in turn (copied to CUDA when
// `gpu`) and returns each step's loss. `perturb` > 0 multiplies every parameter by
// (1 + perturb * N(0, 1)) after each step: the calibration program uses it to see
// how far rounding-sized differences carry (docs/numerics.md, "Training").
template <class Opt>
std::vector<double> train(ember::nn::Network& net, Opt& opt, const std::vector<Batch>& batches, int steps, bool gpu,
                          double perturb = 0) {
  ember::Generator noise(7);
  std::vector<double> losses;
  net.train();
  for (int s = 0; s < steps; ++s) {
    const Batch& b = batches[static_cast<size_t>(s) % batches.size()];
    const ember::Tensor x = gpu ? b.images.cuda() : b.images, y = gpu ? b.labels.cuda() : b.labels;
    opt.zero_grad();
    ember::Tensor loss = ember::nn::functional::cross_entropy(net(x), y);
    loss.backward();
    opt.step();
    if (perturb > 0) {
      ember::NoGradGuard no_grad;
      for (ember::Tensor& p : net.parameters())
        p.mul_(1.0 + perturb * ember::randn(p.shape(), {ember::kFloat32, p.device()}, &noise));
    }
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace cuda_test
