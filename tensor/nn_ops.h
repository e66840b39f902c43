// Front-ends of the layer ops whose kernels live in kernels/cpu/{conv2d,pool2d,
// layer_norm,loss,pad}: convolution, pooling, layer normalisation, the
// classification losses and padding. They check shapes, dispatch,
// and record autograd nodes. nn::functional wraps them with PyTorch's names and
// defaults; the backward functions are what the rules in autograd/ call.
#pragma once

#include "kernels/base/export.h"

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "tensor/op_attrs.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember {

using Pair = std::array<int64_t, 2>;

// x [N, C_in, H, W], weight [C_out, C_in/groups, kH, kW], bias [C_out] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride = {1, 1},
              Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);
Tensor conv2d_backward_input(const Tensor& grad_y, const Tensor& weight, const Shape& x_shape, Pair stride,
                             Pair padding, Pair dilation, int64_t groups);
// Returns (grad_weight, grad_bias); grad_bias is undefined unless with_bias.
std::tuple<Tensor, Tensor> conv2d_backward_weight(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                                                  Pair stride, Pair padding, Pair dilation, int64_t groups,
                                                  bool with_bias);

// relu(conv2d(x, weight, bias, ...)), the same values and gradients. On the CPU in
// float32 and float64 with nothing to record for autograd (inference: NoGradGuard,
// or operands that need no gradient) and no autocast, each image's output goes
// through ReLU as it is made, on the thread that made it (no second tensor, no second
// pass over memory); otherwise it is the two ops.
Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride = {1, 1},
                   Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);

// A convolution weight [c_out, c_in/groups, kh, kw] laid out once for many forward
// calls (an ONNX plan packs its constant weights at load): [groups, cog / bw,
// c_in/groups * kh * kw, bw] with cog = c_out/groups and bw the largest of 32, 16 and
// 8 that divides cog (cog itself when none does): the layout of the CPU's stride-1
// float32 kernels with output channels in the vector lanes, in blocks of bw
// channels. An undefined tensor where no kernel of the
// instruction-set level in use (the CPU's best unless a test lowered it) would use
// it for layers of this stride and groups (not float32 on the CPU, not stride 1, or
// channels per group that do not fill whole vector tiles: 32 with AVX-512). The
// layout is the same at every level.
Tensor conv2d_pack_weight(const Tensor& weight, Pair stride = {1, 1}, int64_t groups = 1);

// conv2d(x, weight, bias, ...), then ReLU when relu, given packed =
// conv2d_pack_weight(weight, stride, groups) too (or an undefined tensor): the same
// values, without laying the weight out on each call, so that small batches take
// those kernels as well. Inference only, as conv2d_relu: with autograd, autocast,
// other devices or dtypes it is the ops apart (packed unused, unless the weight is
// a meta tensor: below). A packed tensor of
// another dtype, device or shape is a ValueError; one of other values than the
// weight's gives wrong results. Given packed, the weight may be a float32 tensor on
// the meta device (its shape only), so that a caller can keep the packed copy
// alone: the stride-1 kernels read packed, other strides and the ops apart get
// the weight laid back out from it.
Tensor conv2d_packed(const Tensor& x, const Tensor& weight, const Tensor& packed, const Tensor& bias,
                     Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1,
                     bool relu = false);

// max_pool2d(relu(conv2d(x, weight, bias, ...)), {2, 2}) as one op. On the CPU in
// float32, float64, bfloat16 and bfloat16 autocast the convolution's output is pooled
// image by image as it is computed and never stored, and the node keeps one byte per
// pooled value (its window position and whether it is > 0) instead of the activations
// and 8-byte indices; elsewhere it runs the three ops (tensor/conv_relu_pool.cpp says
// where). Values and gradients are the same either way; the fused node is Conv2dReluPool.
Tensor conv2d_relu_pool2x2(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride = {1, 1},
                           Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);
// The fused node's gradients (grad_x, grad_weight, grad_bias) from the pooled
// gradient and what the forward saved: x, the weight (both float32 or float64) and
// the window bytes. want[i] says which to make; the others come back undefined. The
// convolution's full-size output gradient is made image by image inside the
// convolution kernels, never stored whole (kernels/cpu/conv2d.h).
std::tuple<Tensor, Tensor, Tensor> conv2d_relu_pool2x2_backward(const Tensor& grad_y, const Tensor& window,
                                                                const Tensor& x, const Tensor& weight, Pair stride,
                                                                Pair padding, Pair dilation, int64_t groups,
                                                                std::array<bool, 3> want);

// ReLU's gradient from its saved output y: grad_y where y > 0, else 0 (PyTorch's
// threshold_backward at 0, so a NaN or Inf gradient where y <= 0 gives 0). One pass
// on the CPU (kernels/cpu/relu_backward.h); when the call itself would be recorded
// (grad mode on and an operand requiring grad), on other devices and for mixed
// dtypes it is where(y > 0, grad_y, 0), which is differentiable and gives the same
// values.
Tensor relu_backward(const Tensor& grad_y, const Tensor& y);

// (values, indices): indices are positions within each input plane (y * W + x).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel, Pair stride, Pair padding = {0, 0},
                                                   Pair dilation = {1, 1}, bool ceil_mode = false);
// The values only: when nothing is recorded for autograd no index tensor is made
// (inference), otherwise max_pool2d_with_indices runs and keeps them for backward.
Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding = {0, 0}, Pair dilation = {1, 1},
                  bool ceil_mode = false);
Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape);
// The same with the window, which lets the CUDA kernel gather (deterministic, no
// atomics) instead of scattering through the indices; autograd calls this one.
Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape, Pair kernel,
                           Pair stride, Pair padding, Pair dilation, bool ceil_mode);
Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding = {0, 0}, bool ceil_mode = false,
                  bool count_include_pad = true, int64_t divisor_override = 0);
Tensor avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape, Pair kernel, Pair stride, Pair padding,
                           bool ceil_mode, bool count_include_pad, int64_t divisor_override);

// Layer normalisation over the trailing dims normalized_shape of x (PyTorch's
// F.layer_norm): each row of prod(normalized_shape) elements is shifted to mean 0
// and scaled to variance 1 (biased variance, eps added), then multiplied by weight
// and shifted by bias (both of shape normalized_shape, either may be undefined).
// float16/bfloat16 inputs are computed in float32 and rounded once; under autocast
// the op runs in float32.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// (grad_x, grad_weight, grad_bias) from the saved per-row mean and 1/std (each [rows]);
// an output whose output_mask entry is false comes back undefined.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& mean,
                                                       const Tensor& rstd, const Tensor& weight,
                                                       const Shape& normalized_shape, std::array<bool, 3> output_mask);

// PadMode (constant, reflect, replicate) is in tensor/op_attrs.h.
// x padded (or, for negative pads, cropped) on both sides of every dim: pads holds one
// (begin, end) pair per dim of x, from dim 0 (not PyTorch's last-dim-first flat
// list), and dim d of the result has x.size(d) + begin + end elements. value fills
// the constant mode (it must fit the dtype). Reflect needs each positive pad smaller
// than its dim; replicate a non-empty dim wherever it pads. Any dtype.
Tensor pad(const Tensor& x, const std::vector<Pair>& pads, PadMode mode = PadMode::Constant, Scalar value = 0);
// The gradient of pad: each input element gets the sum of the output gradients that
// read it (none for cropped elements).
Tensor pad_backward(const Tensor& grad_y, const Shape& x_shape, const std::vector<Pair>& pads, PadMode mode);

enum class Reduction { None, Mean, Sum };

// Cross-entropy of logits [N, C] against class indices [N] (int64): fused
// log-softmax and negative log-likelihood. Mean divides by the number of targets
// that are not ignore_index.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction = Reduction::Mean,
                     int64_t ignore_index = -100);
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100);
// Per-sample gradient kernels, used by the backward rules. stats [N, 2] holds each
// row's max and log sum exp(x - max), as cross_entropy saved them.
Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& targets,
                              const Tensor& stats, int64_t ignore_index);
Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& targets, const Shape& input_shape,
                         int64_t ignore_index);

}  // namespace ember

EMBER_API_END
