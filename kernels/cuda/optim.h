// Fused optimizer updates on CUDA: one pass over a parameter, its gradient and its
// state per step, the same formulas and order of operations as kernels/cpu/optim.h
// (PyTorch 1.13's single-tensor SGD and Adam/AdamW). Plain C++: the front-end
// includes it from .cpp files. Algorithm in optim.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/optim_params.h"
#include "kernels/base/scalar.h"

namespace ember::cuda {

// All arrays are contiguous device memory of dtype `dt` (float32, float64, float16,
// bfloat16; half types compute in float32, as on the CPU); the work is queued on
// `stream` and nothing is synchronized. Any other dtype throws NotImplementedError.

// buf may be null when momentum == 0.
void sgd_step(DType dt, int64_t n, void* param, const void* grad, void* momentum_buffer,
              const SgdParams& h, cudaStream_t stream);

// max_exp_avg_sq may be null unless h.amsgrad.
void adam_step(DType dt, int64_t n, void* param, const void* grad, void* exp_avg,
               void* exp_avg_sq, void* max_exp_avg_sq, const AdamParams& h,
               cudaStream_t stream);

}  // namespace ember::cuda
