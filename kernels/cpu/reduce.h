// CPU reductions over any set of dimensions (sum, mean, var, amax/amin with or
// without indices, argmax/argmin), described by a ReduceGeometry in element strides.
#pragma once

#include <cstdint>

#include "kernels/base/ops.def.h"
#include "kernels/base/scalar.h"
#include "kernels/base/strided.h"

namespace ember::cpu {

// Output dtypes, fixed by (op, dt): sum writes dt for floating inputs and int64 for
// integral and bool ones; mean and var write dt (floating only); amax/amin write dt
// into `out` and, when `indices` is not null, the position of the first extreme
// (row-major over the reduced dims, in the order given); argmax/argmin write only
// `indices`. NaN wins every max/min comparison, as in PyTorch. var divides by
// (count - correction).
void reduce(ReduceOp op, DType dt, const ReduceGeometry& g, const void* in, void* out,
            int64_t* indices, int64_t correction);

}  // namespace ember::cpu
