// CPU softmax and log-softmax over one dimension of a contiguous tensor viewed as
// (outer, dim, inner).
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// Floating dtypes only; accumulates in float (double for float64).
void softmax(DType dt, int64_t outer, int64_t dim, int64_t inner, const void* in, void* out, bool log);

}  // namespace ember::cpu
