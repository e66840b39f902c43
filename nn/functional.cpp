// nn::functional (see functional.h).
#include "nn/functional.h"

#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/graph.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) { return ember::linear(x, weight, bias); }
Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return ember::linear_relu(x, weight, bias);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
              int64_t groups) {
  return ember::conv2d(x, weight, bias, stride, padding, dilation, groups);
}

Tensor max_pool2d(const Tensor& x, Pair kernel, std::optional<Pair> stride, Pair padding, Pair dilation,
                  bool ceil_mode) {
  return ember::max_pool2d(x, kernel, stride.value_or(kernel), padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, std::optional<Pair> stride, Pair padding, bool ceil_mode,
                  bool count_include_pad) {
  return ember::avg_pool2d(x, kernel, stride.value_or(kernel), padding, ceil_mode, count_include_pad);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  if (p < 0 || p > 1) throw ValueError(msg("dropout probability has to be between 0 and 1, but got ", p));
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  Tensor mask;
  {
    NoGradGuard no_grad;
    mask = (rand(x.shape(), {is_floating(x.dtype()) ? x.dtype() : kFloat32, x.device()}, gen) >= p)
               .to(x.dtype()) *
           (1.0 / (1.0 - p));
  }
  return x * mask.to(x.device());
}

Tensor batch_norm(const Tensor& x, Tensor& running_mean, Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  if (x.dim() < 2) throw ShapeError(msg("batch_norm: expected at least 2-D input, got ", shape_str(x.shape())));
  Shape dims{0}, stat_shape(x.dim(), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  stat_shape[1] = x.shape()[1];
  Tensor mean, var;
  if (training) {
    const int64_t count = x.numel() / x.shape()[1];
    if (count <= 1)
      throw ValueError(msg("Expected more than 1 value per channel when training, got input size ",
                           shape_str(x.shape())));
    mean = x.mean(dims, true);
    var = x.var(dims, 0, true);  // normalise with the biased variance
    if (running_mean.defined()) {
      NoGradGuard no_grad;
      const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      running_mean.mul_(1 - momentum).add_(mean.detach().reshape({-1}) * momentum);
      running_var.mul_(1 - momentum).add_(var.detach().reshape({-1}) * (momentum * unbias));
    }
  } else {
    mean = running_mean.reshape(stat_shape);
    var = running_var.reshape(stat_shape);
  }
  Tensor y = (x - mean) * (var + eps).rsqrt();
  if (weight.defined()) y = y * weight.reshape(stat_shape);
  if (bias.defined()) y = y + bias.reshape(stat_shape);
  return y;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  return ember::cross_entropy(logits, targets, reduction, ignore_index);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  return ember::nll_loss(log_probs, targets, reduction, ignore_index);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (auto r = autocast::run(autocast::Policy::fp32,
                             [&](const Tensor& i_, const Tensor& t_) { return mse_loss(i_, t_, reduction); }, input,
                             target))
    return *r;
  if (input.shape() != target.shape())
    throw ShapeError(msg("mse_loss: input ", shape_str(input.shape()), " and target ", shape_str(target.shape()),
                         " must have the same shape"));
  Tensor d = input - target;
  Tensor sq = d * d;
  switch (reduction) {
    case Reduction::None: return sq;
    case Reduction::Sum: return sq.sum();
    case Reduction::Mean: return sq.mean();
  }
  return sq;
}

}  // namespace ember::nn::functional
