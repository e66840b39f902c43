// Gradient clipping, as torch.nn.utils. clip_grad_norm_ scales all gradients by
// one factor so that their joint p-norm is at most max_norm: the direction of the
// update is kept, only an exploding step is shortened. clip_grad_value_ clamps
// each element instead. Under mixed precision call scaler.unscale_(optimizer)
// first, so that the norm measured is the true gradients', not the scaled ones'.
#pragma once

#include "kernels/base/export.h"

#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::nn::utils {

// Returns the joint norm of the gradients before clipping, the norm of the
// per-parameter norms as in PyTorch: a 0-dim tensor on the first gradient's device,
// float64 if any gradient is float64, else float32 (a float32 0 when no parameter
// has a gradient). Gradients are multiplied in place by
// min(1, max_norm / (total + 1e-6)). With error_if_nonfinite, an inf or NaN total
// raises ValueError and leaves the gradients untouched (that check reads the total
// on the host, which waits for a GPU; without it nothing waits).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ember::nn::utils

EMBER_API_END
