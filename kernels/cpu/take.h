// Gathering slices along one dim by index, and its adjoint, the scatter-add: the
// kernels of ember::take, index_select and embedding (forward) and take_backward.
// The input is contiguous, viewed as [outer, size, inner]; the index is n_index
// positions already checked to lie in [0, size) (the front-end wraps and checks).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// out[o, j, i] = in[o, index[j], i] for o < outer, j < n_index, i < inner. Any
// dtype: rows of inner * element_size bytes are copied. `team`: large copies run on
// the thread team; false keeps the copy on the calling thread (a DataLoader worker,
// where a team per worker would oversubscribe the cores).
void take(size_t element_size, int64_t outer, int64_t size, int64_t inner, const int64_t* index,
          int64_t n_index, const void* in, void* out, bool team = true);

// grad_in (overwritten, [outer, size, inner]) = 0, then grad_in[o, index[j], i] +=
// grad_out[o, j, i] for every j in increasing order (so the result does not depend on
// the thread count). An index outside [0, size) is skipped (this is a public entry
// point: bad input must not write out of bounds). float32 and float64 only; other
// dtypes throw NotImplementedError.
void take_backward(DType dt, int64_t outer, int64_t size, int64_t inner, const int64_t* index,
                   int64_t n_index, const void* grad_out, void* grad_in);

}  // namespace ember::cpu
