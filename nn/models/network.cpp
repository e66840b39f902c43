// The seed network (see network.h).
#include "nn/models/network.h"

#include "nn/functional.h"

namespace ember::nn {

Network::Network() : Module("Network") {
  conv1 = register_module("conv1", std::make_shared<Conv2d>(1, 6, 5));
  conv2 = register_module("conv2", std::make_shared<Conv2d>(6, 12, 5));
  fc1 = register_module("fc1", std::make_shared<Linear>(12 * 4 * 4, 120));
  fc2 = register_module("fc2", std::make_shared<Linear>(120, 60));
  out = register_module("out", std::make_shared<Linear>(60, 10));
}

Tensor Network::forward(const Tensor& x) {
  namespace F = functional;
  Tensor t = F::max_pool2d(F::relu((*conv1)(x)), {2, 2});
  t = F::max_pool2d(F::relu((*conv2)(t)), {2, 2});
  t = t.flatten(1);
  t = F::relu((*fc1)(t));
  t = F::relu((*fc2)(t));
  return (*out)(t);
}

}  // namespace ember::nn
