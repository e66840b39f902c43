// Conv2d (see conv2d.h): PyTorch's initialisation, bias bound 1/sqrt(fan_in).
#include "nn/layers/conv2d.h"

#include <cmath>

#include "nn/init.h"
#include "tensor/checks.h"

namespace ember::nn {

Conv2d::Conv2d(int64_t in, int64_t out, Pair k, Conv2dOptions o)
    : Module("Conv2d"), in_channels(in), out_channels(out), kernel_size(k), options(o) {
  if (o.groups < 1 || in % o.groups != 0) throw ValueError("in_channels must be divisible by groups");
  if (out % o.groups != 0) throw ValueError("out_channels must be divisible by groups");
  weight = register_parameter("weight", empty({out, in / o.groups, k[0], k[1]}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (o.bias) {
    bias = register_parameter("bias", empty({out}));
    const int64_t fan_in = init::fan_in_and_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  check_input_device(x, "conv2d_forward");
  return conv2d(x, weight, bias, options.stride, options.padding, options.dilation, options.groups);
}

Tensor Conv2d::forward_relu_pool2x2(const Tensor& x) {
  check_input_device(x, "conv2d_forward");
  return conv2d_relu_pool2x2(x, weight, bias, options.stride, options.padding, options.dilation, options.groups);
}

std::string Conv2d::extra_repr() const {
  std::string s = msg(in_channels, ", ", out_channels, ", kernel_size=(", kernel_size[0], ", ", kernel_size[1],
                      "), stride=(", options.stride[0], ", ", options.stride[1], ")");
  if (options.padding != Pair{0, 0}) s += msg(", padding=(", options.padding[0], ", ", options.padding[1], ")");
  if (options.dilation != Pair{1, 1}) s += msg(", dilation=(", options.dilation[0], ", ", options.dilation[1], ")");
  if (options.groups != 1) s += msg(", groups=", options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

}  // namespace ember::nn
