// ReLU's backward pass in one sweep: grad_x = grad_y where the saved output y > 0,
// else 0 (PyTorch's threshold_backward at 0: a NaN or Inf gradient where y <= 0
// gives 0, not NaN). The composite it replaces (y > 0, a cast of the mask, a
// multiply) read and wrote the tensor three times.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// n contiguous elements of grad, y and out, all of dtype dt (float32, float64,
// float16 or bfloat16; any other dtype throws NotImplementedError); out is a
// separate buffer.
void relu_backward(DType dt, int64_t n, const void* grad, const void* y, void* out);

}  // namespace ember::cpu
