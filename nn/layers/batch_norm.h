// BatchNorm2d: per-channel normalisation with learned scale and shift, batch
// statistics in training and running statistics in eval.
#pragma once

#include "kernels/base/export.h"

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn {

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  const int64_t num_features;
  const double eps, momentum;
  const bool affine, track_running_stats;
};

}  // namespace ember::nn

EMBER_API_END
