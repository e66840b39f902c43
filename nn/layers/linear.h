// Linear: y = x W^T + b, with PyTorch's default initialisation.
#pragma once

#include "kernels/base/export.h"

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) with the relu fused where linear_relu can (tensor/ops.h).
  Tensor forward_relu(const Tensor& x);
  std::string extra_repr() const override;
  Tensor weight, bias;
  const int64_t in_features, out_features;
};

}  // namespace ember::nn

EMBER_API_END
