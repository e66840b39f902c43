// The seed documents' FashionMNIST network, named as they name it: conv1 (1->6,
// 5x5), conv2 (6->12, 5x5), fc1 (192->120), fc2 (120->60), out (60->10); ReLU
// after each hidden layer and 2x2 max pooling after each convolution. Its
// parameter names match the PyTorch original, so state dicts move between them.
#pragma once

#include "kernels/base/export.h"

#include "nn/layers/conv2d.h"
#include "nn/layers/linear.h"
#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn {

class Network : public Module {
 public:
  Network();
  // x: [N, 1, 28, 28] -> logits [N, 10].
  Tensor forward(const Tensor& x) override;

  // The float layers as built; after quant::quantize_dynamic the registered
  // children (named_children) hold the int8 versions and these are no longer used.
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Linear> fc1, fc2, out;
};

}  // namespace ember::nn

EMBER_API_END
