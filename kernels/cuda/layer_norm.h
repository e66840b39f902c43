// CUDA layer normalisation: the contract of kernels/cpu/layer_norm.h with device
// pointers and a stream. Plain C++: the front-end includes it from .cpp files.
// Algorithm in layer_norm.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// float32 and float64 only (else NotImplementedError); weight and bias may be null.
void layer_norm_forward(DType dt, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                        double eps, void* y, void* mean, void* rstd, cudaStream_t stream);

// Any output may be null. grad_weight and grad_bias sum over rows in increasing r
// (one thread per column), so they are deterministic.
void layer_norm_backward(DType dt, int64_t rows, int64_t cols, const void* grad_y, const void* x, const void* mean,
                         const void* rstd, const void* weight, void* grad_x, void* grad_weight, void* grad_bias,
                         cudaStream_t stream);

}  // namespace ember::cuda
