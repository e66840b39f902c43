// 2-D convolution on the CPU, NCHW, as PyTorch defines it (cross-correlation with
// stride, zero padding, dilation and groups): the forward pass and the gradients
// with respect to the input, the weight and the bias. Algorithm in conv2d.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"
#include "kernels/base/window.h"

namespace ember::cpu {

// Conv2dShape and its output-size helpers live in kernels/base/window.h (the CUDA
// kernels share them).
using ember::Conv2dShape;
using ember::conv2d_output_size;
using ember::conv2d_set_output_size;

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

// The stride-1 kernels run compiled for the active instruction set (cpu::set_isa in
// kernels/cpu/isa.h picks another, for tests).

}  // namespace ember::cpu
