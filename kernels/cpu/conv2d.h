// 2-D convolution on the CPU, NCHW, as PyTorch defines it (cross-correlation with
// stride, zero padding, dilation and groups): the forward pass and the gradients
// with respect to the input, the weight and the bias. Algorithm in conv2d.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

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

// float32 and float64 only (half types are converted by the caller); any other
// dtype throws NotImplementedError. When x or the weight holds Inf or NaN, the
// gradients do too, possibly in a few more entries than a term-by-term sum gives:
// the stride-1 kernels multiply zeros of grad_y by values just outside a tap's reach.

// y = conv(x, weight) + bias.
void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y);

// grad_x = d(sum grad_y . y)/dx: every input element collects grad_y times the
// weight over the outputs its value reaches. grad_x is overwritten.
void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x);

// grad_weight = correlation of grad_y with x summed over the batch, grad_bias
// (nullable) = grad_y summed over batch and space. Both are overwritten.
// When x or the weight holds Inf or NaN the gradients do too, possibly in a few more
// entries than a term-by-term sum gives (the stride-1 kernels multiply zeros of
// grad_y by inputs just outside a tap's reach).
void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias);

// Makes later stride-1 convolutions use the kernels compiled for the named
// instruction set ("avx512", "avx2", "sse", or "auto" for the best this CPU runs),
// so that tests can cover each on one machine. Returns false, changing nothing,
// when this CPU cannot run that set. Not thread-safe: call it while no conv2d runs.
bool conv2d_set_kernels(const char* isa);

}  // namespace ember::cpu
