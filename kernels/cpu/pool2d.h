// 2-D max and average pooling on the CPU, NCHW, with PyTorch's window, padding,
// ceil_mode and divisor rules, forward and backward. Algorithm in pool2d.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// x [n, c, h, w] and y [n, c, h_out, w_out], contiguous. Padding is implicit: max
// pooling never selects it, average pooling counts it toward the divisor only when
// count_include_pad. Dilation applies to max pooling only (average pooling requires
// dil_h == dil_w == 1, as PyTorch has no dilated average pooling).
struct Pool2dShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t h_out = 0, w_out = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  int64_t divisor_override = 0;   // average pooling only; 0 means none
};

// PyTorch's rule: floor (or, with ceil_mode, ceil) of
// (in + 2*pad - dil*(k-1) - 1) / stride, plus one; in ceil mode a last window that
// would start past the input and its left padding is dropped. The result may be
// zero or negative: the front-end rejects such shapes.
constexpr int64_t pool2d_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                     int64_t dil, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Division rounding toward minus infinity, as PyTorch's div_rtn.
  const int64_t q = num / stride - ((num % stride != 0) && (num < 0) ? 1 : 0);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Fills h_out and w_out of s from the other fields.
inline Pool2dShape& pool2d_set_output_size(Pool2dShape& s) {
  s.h_out = pool2d_output_size(s.h, s.kh, s.stride_h, s.pad_h, s.dil_h, s.ceil_mode);
  s.w_out = pool2d_output_size(s.w, s.kw, s.stride_w, s.pad_w, s.dil_w, s.ceil_mode);
  return s;
}

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
