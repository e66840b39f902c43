// What the two convolution front-ends (conv.cpp, conv_relu_pool.cpp) share: the
// argument checks with PyTorch's messages and the kernels' shape record.
// Internal to tensor/.
#pragma once

#include "kernels/base/window.h"
#include "tensor/nn_ops.h"

namespace ember {

// Throws conv2d's ShapeError or ValueError for bad shapes, strides, padding,
// dilation or groups (docs/errors.md).
void check_conv2d_args(const Tensor& x, const Tensor& w, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
                       int64_t groups);
// The kernels' description of a convolution of x by a weight of shape w, output size included.
Conv2dShape conv2d_shape(const Shape& x, const Shape& w, Pair stride, Pair padding, Pair dilation, int64_t groups);

}  // namespace ember
