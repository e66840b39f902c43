// conv2d_relu_pool2x2: max_pool2d(relu(conv2d(x, ...)), 2) as one op, the seed
// network's convolution blocks. On the CPU in float32 and float64 outside autocast
// it runs kernels/cpu/conv2d's fused pass and records one node (saved: x, weight and
// a byte per pooled value: its window position and whether it is > 0; attributes:
// Conv2dAttrs), whose backward makes the convolution's output gradient in one pass.
// The output itself is not saved, so it may be modified in place before backward,
// as the three ops' output may. Anywhere else (CUDA, meta, half types, autocast,
// outputs smaller than one window) it runs the three ops, so the values and
// gradients are the same either way.
#include "kernels/cpu/conv2d.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/conv_args.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {

Tensor conv2d_relu_pool2x2(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                           Pair dilation, int64_t groups) {
  auto three_ops = [&] {
    return max_pool2d(conv2d(x, weight, bias, stride, padding, dilation, groups).relu(), {2, 2}, {2, 2});
  };
  const DType dt = x.dtype();
  const bool fusable = (dt == kFloat32 || dt == kFloat64) && x.device().is_cpu() && weight.device().is_cpu() &&
                       weight.dtype() == dt && (!bias.defined() || (bias.device().is_cpu() && bias.dtype() == dt)) &&
                       !autocast::applies(autocast::Policy::lower, {&x, &weight, &bias});
  if (!fusable) return three_ops();
  check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  if (s.n == 0 || s.c_out == 0 || s.h_out < 2 || s.w_out < 2) return three_ops();  // its errors, its empty results
  Tensor y = empty({s.n, s.c_out, s.h_out / 2, s.w_out / 2}, {dt, kCPU});
  const bool record_grad = needs_grad({&x, &weight, &bias});
  Tensor window = record_grad ? empty(y.shape(), {kUInt8, kCPU}) : Tensor();
  {
    NoGradGuard no_grad;
    Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.defined() ? bias.contiguous() : bias;
    cpu::conv2d_relu_pool_forward(dt, s, xc.data_ptr(), wc.data_ptr(), bc.defined() ? bc.data_ptr() : nullptr,
                                  y.data_ptr(), record_grad ? window.data_ptr<uint8_t>() : nullptr);
  }
  if (record_grad) {
    auto node = record(OpId::Conv2dReluPool, {&x, &weight, &bias}, {&y});
    node->save("x", x);
    node->save("weight", weight);
    node->save("window", window);
    node->attrs = Conv2dAttrs{stride, padding, dilation, groups, bias.defined()};
  }
  return y;
}

Tensor conv2d_relu_pool2x2_backward(const Tensor& grad_y, const Tensor& window, DType dtype, const Shape& x_shape,
                                    const Shape& w_shape, Pair stride, Pair padding, Pair dilation, int64_t groups) {
  const auto s = conv2d_shape(x_shape, w_shape, stride, padding, dilation, groups);
  Tensor g = grad_y.to(dtype).contiguous();
  Tensor grad_conv = empty({s.n, s.c_out, s.h_out, s.w_out}, {dtype, kCPU});
  cpu::conv2d_relu_pool_backward(dtype, s, g.data_ptr(), window.contiguous().data_ptr<uint8_t>(),
                                 grad_conv.data_ptr());
  return grad_conv;
}

}  // namespace ember
