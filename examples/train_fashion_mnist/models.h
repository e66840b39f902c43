// The models train_fashion_mnist can train, by name: "network" (the seed CNN,
// nn::Network) and "mlp" (784-1024-1024-10 with ReLU, the quantization example's
// model). Header-only so that examples/quantize_fashion_mnist rebuilds the same
// architecture from the name saved in the model file's metadata ("model").
#pragma once

#include <memory>
#include <string>

#include "nn/nn.h"

namespace train {

inline std::shared_ptr<ember::nn::Module> make_model(const std::string& name) {
  namespace nn = ember::nn;
  if (name == "mlp")
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 1024), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(1024, 1024), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(1024, 10)});
  if (name == "network") return std::make_shared<nn::Network>();
  throw ember::ValueError("unknown model '" + name + "' (expected network or mlp)");
}

}  // namespace train
