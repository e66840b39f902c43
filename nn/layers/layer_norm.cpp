// LayerNorm (see layer_norm.h): a module over ember::layer_norm.
#include "nn/layers/layer_norm.h"

#include "nn/init.h"
#include "tensor/checks.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::nn {

LayerNorm::LayerNorm(Shape shape, double eps_, bool affine, bool with_bias)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps_), elementwise_affine(affine) {
  for (int64_t v : normalized_shape)
    if (v < 0) throw ValueError(msg("LayerNorm: negative size in normalized_shape ", shape_str(normalized_shape)));
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    if (with_bias) bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  check_input_device(x, "layer_norm_forward");
  return ember::layer_norm(x, normalized_shape, weight, bias, eps);
}

// PyTorch's repr: "(4,), eps=1e-05, elementwise_affine=True" (a Python tuple).
std::string LayerNorm::extra_repr() const {
  std::string t = "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i) t += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  t += normalized_shape.size() == 1 ? ",)" : ")";
  return msg(t, ", eps=", repr_float(eps), ", elementwise_affine=", elementwise_affine ? "True" : "False");
}

}  // namespace ember::nn
