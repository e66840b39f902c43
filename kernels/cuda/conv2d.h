// 2-D convolution on a CUDA device, NCHW, with the semantics of cpu::conv2d_*
// (kernels/cpu/conv2d.h): stride, zero padding, dilation and groups; all tensors
// contiguous; grad_x, grad_weight and grad_bias are overwritten, never accumulated.
// dt is Float32, Float64, Float16 or BFloat16 (the half types accumulate in float32).
//
// Three implementations: native (im2col into scratch memory, chunked over the batch,
// then cuda::gemm; conv2d.cu), direct (a thread per output, per input-gradient
// element and per slice of a weight's sum; conv2d_direct.cu) and cuDNN
// (cudnn_conv.cpp, when the build has it). The plain entry points run the native
// kernels, unless opted in (each variable read once): EMBER_CUDNN=1 picks cuDNN in a
// build that has it (not with EMBER_KERNELS=native), else EMBER_CUDA_CONV=direct picks
// the direct kernels for the shapes conv2d_direct_suits accepts. Neither opt-in path
// has run on a GPU yet (docs/kernels-cuda.md).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"
#include "kernels/base/window.h"

namespace ember::cuda {

// y = conv(x, weight) + bias (bias nullable).
void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, cudaStream_t stream);
// grad_x = the gradient of sum(grad_y * y) with respect to x.
void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y, const void* weight,
                           void* grad_x, cudaStream_t stream);
// grad_weight, and grad_bias (nullable) = grad_y summed over batch and space.
void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias, cudaStream_t stream);

// NotImplementedError "{op}: not implemented for dtype {dtype} on cuda" unless dt is
// a floating dtype: the native and direct entry points check first, so that an empty
// shape (which returns before any dispatch) refuses the same dtypes.
void conv2d_check_dtype(DType dt, const char* op);

// The native kernels (conv2d.cu).
void conv2d_forward_native(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                           const void* bias, void* y, cudaStream_t stream);
void conv2d_backward_input_native(DType dt, const Conv2dShape& s, const void* grad_y,
                                  const void* weight, void* grad_x, cudaStream_t stream);
void conv2d_backward_weight_native(DType dt, const Conv2dShape& s, const void* grad_y,
                                   const void* x, void* grad_weight, void* grad_bias,
                                   cudaStream_t stream);

// The direct kernels (conv2d_direct.cu, arithmetic in conv2d_direct_math.h): correct
// for every shape; conv2d_direct_suits says whether they are the better choice (few
// output channels per group, where the native path's GEMM tiles sit mostly idle).
bool conv2d_direct_suits(const Conv2dShape& s);
void conv2d_forward_direct(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                           const void* bias, void* y, cudaStream_t stream);
void conv2d_backward_input_direct(DType dt, const Conv2dShape& s, const void* grad_y,
                                  const void* weight, void* grad_x, cudaStream_t stream);
void conv2d_backward_weight_direct(DType dt, const Conv2dShape& s, const void* grad_y,
                                   const void* x, void* grad_weight, void* grad_bias,
                                   cudaStream_t stream);

// cuDNN (cudnn_conv.cpp). Shapes cuDNN cannot take (empty tensors, sizes past int
// range, descriptors or an algorithm query cuDNN refuses, no algorithm that runs
// within the workspace limit) run the native kernels instead. A half-type forward with a bias
// rounds once, as the native one: cuDNN convolves float32 copies of x and the weight
// into float32, then conv2d_add_bias_round adds the bias and rounds.
// Without cuDNN in the build these throw NotImplementedError.
bool conv2d_have_cudnn();
void conv2d_forward_cudnn(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                          const void* bias, void* y, cudaStream_t stream);
void conv2d_backward_input_cudnn(DType dt, const Conv2dShape& s, const void* grad_y,
                                 const void* weight, void* grad_x, cudaStream_t stream);
void conv2d_backward_weight_cudnn(DType dt, const Conv2dShape& s, const void* grad_y,
                                  const void* x, void* grad_weight, void* grad_bias,
                                  cudaStream_t stream);

// Helpers of the cuDNN path's half-type bias (their kernels live in conv2d.cu, since
// cudnn_conv.cpp is host code). dt is Float16 or BFloat16, else NotImplementedError.
// out[i] = float(in[i]) for i < count (exact).
void conv2d_widen(DType dt, int64_t count, const void* in, float* out, cudaStream_t stream);
// y = dt(acc + bias[c]) over y's n x c_out x h_out x w_out, summed in float and
// rounded once; acc is float32 of y's shape.
void conv2d_add_bias_round(DType dt, const Conv2dShape& s, const float* acc, const void* bias, void* y,
                           cudaStream_t stream);

// grad_bias[c] = sum of grad_y[., c, ., .], a deterministic per-channel reduction
// (used by both paths' callers and tests).
void conv2d_bias_grad(DType dt, const Conv2dShape& s, const void* grad_y, void* grad_bias,
                      cudaStream_t stream);

}  // namespace ember::cuda
