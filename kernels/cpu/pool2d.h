// 2-D max and average pooling on the CPU, NCHW, with PyTorch's window, padding,
// ceil_mode and divisor rules, forward and backward. Algorithm in pool2d.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"
#include "kernels/base/window.h"

namespace ember::cpu {

// Pool2dShape and its output-size helpers live in kernels/base/window.h.
using ember::Pool2dShape;
using ember::pool2d_output_size;
using ember::pool2d_set_output_size;

// float32 and float64 only; any other dtype throws NotImplementedError.

// y = max over each window; indices (nullable) [n, c, h_out, w_out] = the position
// of the chosen element within its input plane, iy*w + ix. Ties go to the first
// element in row-major window order; a NaN is the maximum (the last NaN if several),
// as in PyTorch.
void max_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        int64_t* indices);

// grad_x = 0, then grad_x[plane][indices[o]] += grad_y[o] for every output o.
// Indices outside the plane are skipped. Reads only n, c, h, w, h_out and w_out of s.
void max_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x);

// y = sum over the window's input elements / divisor, where the divisor is
// divisor_override if set, else the window clipped to the padded input when
// count_include_pad, else the window clipped to the input. A window lying wholly in
// the padding gives 0.
void avg_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y);

// grad_x = 0, then each grad_y[o] / divisor is added to every input element of
// window o.
void avg_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y, void* grad_x);

}  // namespace ember::cpu
