// CUDA kernels of the gradient scaler (nn/amp/grad_scaler.h), the same two
// functions as kernels/cpu/amp.h: the fused unscale with inf/NaN check over all
// gradients of an optimizer in one multi-tensor launch, and the scale update rule.
// Both read the scale and write the flag in device memory, so the host never waits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// One gradient: contiguous device memory of `numel` elements.
struct GradBuffer {
  void* data;
  int64_t numel;
  DType dtype;  // float32, float16 or bfloat16
};

// For every buffer: multiplies each element by 1/(*scale) (reciprocal in double,
// rounded to float, as PyTorch) and sets *found_inf = 1 when any element was inf or
// NaN (never clears it). scale and found_inf are device pointers. All buffers go
// into one launch (chunks of up to kAmpMaxTensors tensors per launch).
void amp_unscale_grads(const GradBuffer* grads, int count, const float* scale, float* found_inf,
                       cudaStream_t stream);

// PyTorch's _amp_update_scale_ on device memory: backoff on overflow, growth after
// growth_interval clean steps, never to a non-finite scale.
void amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                      double backoff_factor, int64_t growth_interval, cudaStream_t stream);

}  // namespace ember::cuda
