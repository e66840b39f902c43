// Gradient clipping: one norm per gradient (norm(), any device and dtype), then the
// norm of those norms on the first gradient's device, then one in-place multiply
// per gradient by a 0-dim factor that never leaves the device.
#include "nn/utils/clip_grad.h"

#include <cmath>
#include <sstream>

#include "kernels/base/error.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads, norms;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return zeros({});
  const Device device = grads[0].device();
  // float64 gradients keep float64; the others are measured in float32. A half
  // gradient is widened first: its norm rounded to float16 would lose digits and
  // overflow past 65504 even though every element is in range.
  DType total_dtype = kFloat32;
  for (const Tensor& g : grads)
    if (g.dtype() == kFloat64) total_dtype = kFloat64;
  for (const Tensor& g : grads)
    norms.push_back((is_half(g.dtype()) ? g.to(kFloat32) : g).norm(norm_type).to(total_dtype).to(device));
  const Tensor total = stack(norms).norm(norm_type);
  if (error_if_nonfinite && !std::isfinite(total.item<double>())) {
    std::ostringstream m;
    m << "clip_grad_norm_(): the total norm of order " << norm_type
      << " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
         "scale the gradients by the non-finite norm anyway, set error_if_nonfinite=false";
    throw ValueError(m.str());
  }
  const Tensor factor = (max_norm / (total + 1e-6)).clamp(std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(factor.to(g.device()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ember::nn::utils
