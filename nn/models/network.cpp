// The seed network (see network.h).
#include "nn/models/network.h"

#include <typeinfo>

#include "nn/functional.h"

namespace ember::nn {

Network::Network() : Module("Network") {
  conv1 = register_module("conv1", std::make_shared<Conv2d>(1, 6, 5));
  conv2 = register_module("conv2", std::make_shared<Conv2d>(6, 12, 5));
  fc1 = register_module("fc1", std::make_shared<Linear>(12 * 4 * 4, 120));
  fc2 = register_module("fc2", std::make_shared<Linear>(120, 60));
  out = register_module("out", std::make_shared<Linear>(60, 10));
}

// The layers run as registered, not through the typed members, so that a layer
// swapped in by quant::quantize_dynamic (an int8 Linear) is the one that runs.
// Each convolution block, conv -> ReLU -> 2x2 max pool, runs as one fused op
// (Conv2d::forward_relu_pool2x2: the same values and gradients, one pass over
// the activations) when its layer is a plain Conv2d; each hidden Linear and its
// ReLU run as Linear::forward_relu (the ReLU in place on the GEMM's output when
// nothing is recorded).
Tensor Network::forward(const Tensor& x) {
  namespace F = functional;
  const auto layers = named_children();  // conv1, conv2, fc1, fc2, out
  auto layer = [&](size_t i, const Tensor& in) { return (*layers[i].second)(in); };
  auto conv_block = [&](size_t i, const Tensor& in) {
    Module& m = *layers[i].second;
    if (typeid(m) != typeid(Conv2d)) return F::max_pool2d(F::relu(layer(i, in)), {2, 2});
    return static_cast<Conv2d&>(m).forward_relu_pool2x2(in);
  };
  auto dense_relu = [&](size_t i, const Tensor& in) {
    Module& m = *layers[i].second;
    if (typeid(m) != typeid(Linear)) return F::relu(layer(i, in));
    return static_cast<Linear&>(m).forward_relu(in);
  };
  Tensor t = conv_block(0, x);
  t = conv_block(1, t);
  t = t.flatten(1);
  t = dense_relu(2, t);
  t = dense_relu(3, t);
  return layer(4, t);
}

}  // namespace ember::nn
