// The smallest complete training program (docs/nn.md): a two-layer network learns
// which points of the plane lie in the first or third quadrant.
#include <iostream>

#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/nn.h"

using namespace ember;
namespace F = ember::nn::functional;

int main() {
  manual_seed(0);
  Tensor x = randn({1024, 2});                                       // 1024 points
  Tensor y = (x.select(1, 0) * x.select(1, 1) > 0).to(kInt64);       // label: same sign
  nn::Sequential model{std::make_shared<nn::Linear>(2, 32), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(32, 2)};
  nn::optim::Adam optimizer(model.parameters(), /*lr=*/0.01);
  data::DataLoader loader(x, y, {.batch_size = 64, .shuffle = true});

  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    double total = 0;
    for (data::Batch& batch : loader.epoch(epoch)) {
      Tensor loss = F::cross_entropy(model(batch.inputs), batch.targets);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      total += loss.item<double>();
    }
    std::cout << "epoch " << epoch << ": mean loss " << total / loader.size() << "\n";
  }

  NoGradGuard no_grad;
  const double accuracy = (model(x).argmax(1) == y).to(kFloat32).mean().item<double>();
  std::cout << "accuracy " << accuracy << "\n";
  return accuracy > 0.9 ? 0 : 1;
}
