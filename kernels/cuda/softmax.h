// CUDA softmax and log-softmax over one dimension of a contiguous tensor viewed as
// (outer, dim, inner); the contract of kernels/cpu/softmax.h with device pointers.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// Floating dtypes only (else DTypeError); accumulates in float (double for
// float64). A row of all -inf gives NaN, as on the CPU and in PyTorch.
void softmax(DType dt, int64_t outer, int64_t dim, int64_t inner, const void* in, void* out, bool log,
             cudaStream_t stream);

}  // namespace ember::cuda
