// CUDA padding and cropping: the contract of kernels/cpu/pad.h with device pointers
// (x, y and the concatenated coordinate maps) and a stream. Plain C++: the front-end
// includes it from .cpp files. Algorithm in pad.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/pad_geometry.h"

namespace ember::cuda {

void pad(size_t element_size, const PadGeometry& g, const int64_t* maps, const void* x, void* y, uint64_t fill_bits,
         cudaStream_t stream);

}  // namespace ember::cuda
