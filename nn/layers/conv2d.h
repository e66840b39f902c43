// Conv2d over [N, C, H, W] with stride, padding, dilation and groups.
#pragma once

#include "kernels/base/export.h"

#include "nn/module.h"
#include "tensor/nn_ops.h"

EMBER_API_BEGIN

namespace ember::nn {

struct Conv2dOptions {
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Pair kernel_size, Conv2dOptions options = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options = {})
      : Conv2d(in_channels, out_channels, Pair{kernel_size, kernel_size}, options) {}
  Tensor forward(const Tensor& x) override;
  // max_pool2d(relu(forward(x)), 2) as one fused op (conv2d_relu_pool2x2 in
  // tensor/nn_ops.h): the same values and gradients, one pass over the activations.
  Tensor forward_relu_pool2x2(const Tensor& x);
  std::string extra_repr() const override;
  Tensor weight, bias;
  const int64_t in_channels, out_channels;
  const Pair kernel_size;
  const Conv2dOptions options;
};

}  // namespace ember::nn

EMBER_API_END
