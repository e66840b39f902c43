// CPU kernels of the gradient scaler (nn/amp/grad_scaler.h): the fused unscale with
// its inf/NaN check over all gradients of an optimizer, and the scale update rule.
// The CUDA file kernels/cuda/amp.cu has the same two functions.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// One gradient as the kernel sees it: contiguous memory of `numel` elements.
struct GradBuffer {
  void* data;
  int64_t numel;
  DType dtype;  // float32, float16 or bfloat16
};

// For every buffer: sets *found_inf = 1 when any element is inf or NaN (it is
// never cleared here, so one flag gathers several calls), and multiplies every
// element by 1/(*scale) (the reciprocal taken in double, then rounded to float, as
// PyTorch). One read and one write per element: check and unscale are one pass.
void amp_unscale_grads(const GradBuffer* grads, int count, const float* scale, float* found_inf);

// PyTorch's _amp_update_scale_: after an overflow (*found_inf != 0) the scale is
// multiplied by backoff_factor and the tracker reset; otherwise the tracker counts
// the clean step and, at growth_interval, the scale grows by growth_factor (unless
// that would make it inf) and the tracker restarts.
void amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                      double backoff_factor, int64_t growth_interval);

}  // namespace ember::cpu
