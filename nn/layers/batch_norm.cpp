// BatchNorm2d (see batch_norm.h).
#include "nn/layers/batch_norm.h"

#include "nn/functional.h"
#include "tensor/checks.h"
#include "tensor/graph.h"

namespace ember::nn {

BatchNorm2d::BatchNorm2d(int64_t n, double eps, double momentum, bool affine, bool track)
    : Module("BatchNorm2d"), num_features(n), eps(eps), momentum(momentum), affine(affine), track_running_stats(track) {
  if (affine) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({n}));
    running_var = register_buffer("running_var", ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  check_input_device(x, "batch_norm_forward");
  if (x.dim() != 4) throw ShapeError(msg("expected 4D input (got ", x.dim(), "D input)"));
  if (x.shape()[1] != num_features)
    throw ShapeError(msg("BatchNorm2d: expected ", num_features, " channels, got ", x.shape()[1]));
  const bool use_batch_stats = is_training() || !track_running_stats;
  if (is_training() && track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  Tensor no_mean, no_var;
  Tensor& rm = track_running_stats && is_training() ? running_mean : no_mean;
  Tensor& rv = track_running_stats && is_training() ? running_var : no_var;
  if (!use_batch_stats) return functional::batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
  return functional::batch_norm(x, rm, rv, weight, bias, true, momentum, eps);
}

std::string BatchNorm2d::extra_repr() const {
  return msg(num_features, ", eps=", repr_float(eps), ", momentum=", repr_float(momentum),
             ", affine=", affine ? "True" : "False", ", track_running_stats=", track_running_stats ? "True" : "False");
}

}  // namespace ember::nn
