// CUDA reductions over any set of dimensions: sum, mean, var, amax/amin with or
// without indices, argmax/argmin; the contract of kernels/cpu/reduce.h with device
// pointers and a stream. Results are deterministic: the same input and geometry give
// the same bits on every run (partials are combined in a fixed order, no atomics).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/ops.def.h"
#include "kernels/base/scalar.h"
#include "kernels/base/strided.h"

namespace ember::cuda {

// Output dtypes as on the CPU: sum writes dt for floating inputs and int64 for
// integral and bool ones; mean and var write dt (floating only, else DTypeError);
// amax/amin write dt into `out` and, when `indices` is not null, the position of the
// first extreme (row-major over the reduced dims, in the order given); argmax/argmin
// write only `indices`. NaN wins every max/min comparison. var divides by
// (count - correction), NaN when that is not positive. Sums accumulate in double for
// every floating dtype (as the CPU's do), int64 for integers and bool; var sums
// x - shift and (x - shift)^2 (the shift: a thread's first value) and merges by
// Chan's formula, in the same types.
void reduce(ReduceOp op, DType dt, const ReduceGeometry& g, const void* in, void* out, int64_t* indices,
            int64_t correction, cudaStream_t stream);

// Whether the vector schedules of reduce() and softmax() run: EMBER_CUDA_REDUCE=vector
// (read once). They read contiguous runs as 16-byte vectors with several loads in
// flight, size splits to one wave of the kernel's occupancy, and hold softmax rows in
// registers; they were written after the one GPU run so far and have not run on a
// GPU, so they are opt-in. With them a half-type sum adds each 16-byte vector's 8
// values pairwise in float before adding that to its double accumulator
// (docs/numerics.md).
bool vector_reductions();

}  // namespace ember::cuda
