// LayerNorm: normalises the trailing dims normalized_shape of its input to mean 0
// and variance 1, then applies a learned elementwise scale and shift (PyTorch's
// nn.LayerNorm).
#pragma once

#include "kernels/base/export.h"

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn {

class LayerNorm : public Module {
 public:
  // weight (ones) and bias (zeros) of shape normalized_shape when
  // elementwise_affine; bias only when `bias` too.
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias;
  const Shape normalized_shape;
  const double eps;
  const bool elementwise_affine;
};

}  // namespace ember::nn

EMBER_API_END
