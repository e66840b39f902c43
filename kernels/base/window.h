// The geometry of sliding-window ops (convolution and pooling, NCHW), shared by the
// CPU and CUDA kernels: the shape structs and PyTorch's output-size rules.
#pragma once

#include <cstdint>

namespace ember {

// x [n, c_in, h, w], weight [c_out, c_in/groups, kh, kw], bias [c_out] (or null),
// y [n, c_out, h_out, w_out], all contiguous. c_in and c_out are multiples of
// groups; strides and dilations are >= 1, paddings >= 0; h_out and w_out are what
// conv2d_output_size gives (the front-end computes and checks them).
struct Conv2dShape {
  int64_t n = 0, c_in = 0, h = 0, w = 0;
  int64_t c_out = 0, kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  int64_t h_out = 0, w_out = 0;
};

// floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1; zero or less means the padded
// input is smaller than the dilated kernel.
constexpr int64_t conv2d_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                     int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// Fills h_out and w_out of s from the other fields.
inline Conv2dShape& conv2d_set_output_size(Conv2dShape& s) {
  s.h_out = conv2d_output_size(s.h, s.kh, s.stride_h, s.pad_h, s.dil_h);
  s.w_out = conv2d_output_size(s.w, s.kw, s.stride_w, s.pad_w, s.dil_w);
  return s;
}

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

}  // namespace ember
