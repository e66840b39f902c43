// Linear (see linear.h). Weight and bias are U(-1/sqrt(in), 1/sqrt(in)): the
// kaiming_uniform_(a=sqrt(5)) PyTorch uses, written out.
#include "nn/layers/linear.h"

#include <cmath>

#include "nn/functional.h"
#include "nn/init.h"
#include "tensor/checks.h"

namespace ember::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  if (in < 0 || out < 0) throw ValueError(msg("Linear: features must be non-negative, got ", in, " and ", out));
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  check_input_device(x, "linear_forward");
  return functional::linear(x, weight, bias);
}

Tensor Linear::forward_relu(const Tensor& x) {
  check_input_device(x, "linear_forward");
  return functional::linear_relu(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return msg("in_features=", in_features, ", out_features=", out_features, ", bias=", bias.defined() ? "True" : "False");
}

}  // namespace ember::nn
