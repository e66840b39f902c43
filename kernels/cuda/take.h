// CUDA take (gather of slices along one dim) and its scatter-add backward: the
// contract of kernels/cpu/take.h with device pointers and a stream. Plain C++: the
// front-end includes it from .cpp files. Algorithm in take.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// out[o, j, i] = in[o, index[j], i]; any dtype (elements of element_size bytes:
// 1, 2, 4 or 8). index holds n_index checked positions in [0, size), in device memory.
void take(size_t element_size, int64_t outer, int64_t size, int64_t inner, const int64_t* index,
          int64_t n_index, const void* in, void* out, cudaStream_t stream);

// grad_in (overwritten) = 0, then grad_in[o, index[j], i] += grad_out[o, j, i] in
// increasing j: deterministic, bit-identical to the CPU. Indices outside [0, size)
// are skipped, as on the CPU. float32 and float64 only.
void take_backward(DType dt, int64_t outer, int64_t size, int64_t inner, const int64_t* index,
                   int64_t n_index, const void* grad_out, void* grad_in, cudaStream_t stream);

}  // namespace ember::cuda
