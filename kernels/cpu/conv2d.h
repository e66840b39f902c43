// 2-D convolution on the CPU, NCHW, as PyTorch defines it (cross-correlation with
// stride, zero padding, dilation and groups): the forward pass and the gradients
// with respect to the input, the weight and the bias. Algorithm in conv2d.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/half.h"
#include "kernels/base/scalar.h"
#include "kernels/base/window.h"

namespace ember::cpu {

// Conv2dShape and its output-size helpers live in kernels/base/window.h (the CUDA
// kernels share them).
using ember::Conv2dShape;
using ember::conv2d_output_size;
using ember::conv2d_set_output_size;

// float32, float64 and bfloat16 (below); any other dtype throws NotImplementedError. When x or the weight holds Inf or NaN, the
// gradients do too, possibly in a few more entries than a term-by-term sum gives:
// the stride-1 kernels multiply zeros of grad_y by values just outside a tap's reach.

// y = conv(x, weight) + bias, then ReLU (NaN kept) when relu: float32 and float64
// only, applied to each image's output as it is made (ValueError for other dtypes).
// packed (nullable, float32 only, else ValueError): the same weight as
// conv2d_pack_weight lays it out, which spares the channel-lane tiles packing it on
// every call. Given it, weight may be null, so that a caller can keep the packed
// copy alone: the stride-1 kernels read packed (through strides where they need
// the plain layout), other strides read weight, or packed laid back out once per
// call where weight is null. The results are the same bits either way.
void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, bool relu = false, const void* packed = nullptr);

// A weight packed once for many forward calls (an ONNX plan's constant weights):
// [c_out][c_in/groups][kh][kw] as [groups][cog / bw][c_in/groups * kh * kw][bw], with
// cog = c_out/groups and bw = conv2d_pack_block(s), the layout of the stride-1
// float32 channel-lane tiles: blocks of bw output channels, each block's weights
// one contiguous run, tap by tap. The layout is the same at every instruction-set
// level. conv2d_uses_packed_weight says
// whether conv2d_forward can use one for layers of s's weight, stride and groups at
// the active instruction-set level (s's batch and image size do not matter: a call
// whose output rows are narrower than the shortest lane run takes the grid tiles,
// which read the packed weight as well).
bool conv2d_uses_packed_weight(DType dt, const Conv2dShape& s);
void conv2d_pack_weight(DType dt, const Conv2dShape& s, const void* weight, void* packed);
// The packed layout's block width: the largest of 32, 16 and 8 that divides c_out /
// groups, else c_out / groups.
int64_t conv2d_pack_block(const Conv2dShape& s);

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

// The seed network's max_pool2d(relu(conv2d(x)), 2) as one pass: y = 2x2 max
// pooling (stride 2; an odd last row or column dropped) of relu(conv(x, weight) +
// bias), the convolution's output pooled image by image and never stored. y is
// [n, c_out, h_out/2, w_out/2]; window (nullable, same shape) receives for the
// backward below, per value, the position it came from in its window (bits 0-1,
// dy*2 + dx) and whether it is > 0 (bit 2). Same values as the three ops in
// sequence (relu_pool_impl.h says why). float32 and float64. round_bf16 (float32
// only) rounds each convolution output to bfloat16 before ReLU and pooling, as the
// bfloat16 ops do (autocast's block); y's values are then bfloat16 values.
void conv2d_relu_pool_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                              const void* bias, void* y, uint8_t* window, bool round_bf16 = false);

// The gradient of the convolution's output [n, c_out, h_out, w_out] given the
// pooled gradient grad_y and the window bytes of the forward: grad_y (+ 0) at the
// chosen position where the pooled value was > 0, 0 everywhere else. grad_conv is
// overwritten.
void conv2d_relu_pool_backward(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                               void* grad_conv);

// conv2d_backward_input and conv2d_backward_weight of that convolution output
// gradient, given the pooled gradient and the window bytes: the same values, but the
// stride-1 kernels make each image's output gradient as they read it, so the full-size
// gradient is never written to memory (the seed network's conv1 block: 1.4 MB per
// batch of 100, written and read back). float32 and float64; the weight gradient
// also bfloat16 where conv2d_bf16_direct says yes (float32 sums, rounded once).
void conv2d_relu_pool_backward_input(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                                     const void* weight, void* grad_x);
void conv2d_relu_pool_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                                      const void* x, void* grad_weight, void* grad_bias);

// bfloat16 on the bfloat16 GEMM (conv2d_bf16.cpp): bfloat16 operands, float32 sums,
// each result rounded once. conv2d_forward and the two backward functions take
// DType::BFloat16 and run these; callers ask conv2d_bf16_native first and widen to
// float32 where it says no (no vdpbf16ps on this CPU, or layers too small for the
// GEMM, such as 6 or 12 output channels, which the float32 direct kernels do better).
bool conv2d_bf16_native(const Conv2dShape& s);

// Whether the stride-1 bfloat16 kernels (conv2d_direct_bf16.cpp: vdpbf16ps on the
// direct layout, for the small layers the GEMM does not serve) run this shape on
// this CPU at the active instruction-set level: stride 1 and avx512_bf16.
bool conv2d_bf16_direct(const Conv2dShape& s);
void conv2d_bf16_forward(const Conv2dShape& s, const BFloat16* x, const BFloat16* weight, const BFloat16* bias,
                         BFloat16* y);
void conv2d_bf16_backward_input(const Conv2dShape& s, const BFloat16* grad_y, const BFloat16* weight,
                                BFloat16* grad_x);
void conv2d_bf16_backward_weight(const Conv2dShape& s, const BFloat16* grad_y, const BFloat16* x,
                                 BFloat16* grad_weight, BFloat16* grad_bias);

// The stride-1 kernels run compiled for the active instruction set (cpu::set_isa in
// kernels/cpu/isa.h picks another, for tests).

}  // namespace ember::cpu
