// conv2d_relu_pool2x2: max_pool2d(relu(conv2d(x, ...)), 2) as one op, the seed
// network's convolution blocks. On the CPU in float32 and float64 it runs
// kernels/cpu/conv2d's fused pass and records one node (saved: x, weight and a byte
// per pooled value: its window position and whether it is > 0; attributes:
// Conv2dAttrs), whose backward spreads the pooled gradient inside the convolution's
// gradient kernels.
// The output itself is not saved, so it may be modified in place before backward,
// as the three ops' output may.
//
// bfloat16 on the CPU (bfloat16 tensors, or float32 ones under bfloat16 autocast,
// cast as conv2d's autocast casts them): for layers the bfloat16 GEMM does not
// serve, conv2d widens to float32, convolves and rounds its output once
// (tensor/conv.cpp). The block does the same around the fused pass, which rounds
// each convolution output to bfloat16 before ReLU and pooling compare it, so the
// values, the positions ties pick and the gradients are those of the three
// bfloat16 ops, without their three passes over the activations. Where the CPU
// has vdpbf16ps the block and its gradients run on the bfloat16 direct kernels
// instead (kernels/cpu/conv2d_direct_bf16.cpp): the same products, float32 sums in
// another order, the same rounding.
//
// Anywhere else (CUDA, meta, float16, layers the bfloat16 GEMM serves, outputs
// smaller than one window) it runs the three ops, so the values and gradients are
// the same either way.
#include "kernels/cpu/conv2d.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/conv_args.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {
namespace {

bool on_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return x.device().is_cpu() && weight.device().is_cpu() && (!bias.defined() || bias.device().is_cpu());
}

bool all_of_dtype(DType dt, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return x.dtype() == dt && weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt);
}

// The fused pass over CPU tensors of the shape s, float32/float64 as they are. A
// bfloat16 block runs on the bfloat16 direct kernels (vdpbf16ps) where the CPU has
// them; elsewhere it is widened to float32, each convolution output rounded to
// bfloat16 before ReLU and pooling, and the pooled output narrowed (exactly: the
// values are bfloat16 values). The node records the tensors as given, so the
// gradients of a bfloat16 block are bfloat16.
Tensor fused(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dShape& s, Pair stride,
             Pair padding, Pair dilation, int64_t groups) {
  const DType dt = x.dtype();
  const bool bf16 = dt == kBFloat16;
  const bool widen = bf16 && !cpu::conv2d_bf16_direct(s);
  const DType kernel_dt = widen ? kFloat32 : dt;
  Tensor y = empty({s.n, s.c_out, s.h_out / 2, s.w_out / 2}, {kernel_dt, kCPU});
  const bool record_grad = needs_grad({&x, &weight, &bias});
  Tensor window = record_grad ? empty(y.shape(), {kUInt8, kCPU}) : Tensor();
  {
    NoGradGuard no_grad;
    const auto prepare = [&](const Tensor& t) { return !t.defined() ? t : t.to(kernel_dt).contiguous(); };
    Tensor xc = prepare(x), wc = prepare(weight), bc = prepare(bias);
    cpu::conv2d_relu_pool_forward(kernel_dt, s, xc.data_ptr(), wc.data_ptr(), bc.defined() ? bc.data_ptr() : nullptr,
                                  y.data_ptr(), record_grad ? window.data_ptr<uint8_t>() : nullptr, widen);
    if (widen) y = y.to(kBFloat16);
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

}  // namespace

Tensor conv2d_relu_pool2x2(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                           Pair dilation, int64_t groups) {
  auto three_ops = [&] {
    return max_pool2d(conv2d(x, weight, bias, stride, padding, dilation, groups).relu(), {2, 2}, {2, 2});
  };
  if (const auto to = autocast::applies(autocast::Policy::lower, {&x, &weight, &bias})) {
    if (*to != kBFloat16 || !on_cpu(x, weight, bias)) return three_ops();  // conv2d casts
    autocast::SuspendGuard suspend;
    const auto cast = [&](const Tensor& t) { return autocast::cast(t, autocast::Policy::lower, *to); };
    return conv2d_relu_pool2x2(cast(x), cast(weight), cast(bias), stride, padding, dilation, groups);
  }
  const DType dt = x.dtype();
  const bool bf16 = dt == kBFloat16;
  if (!(dt == kFloat32 || dt == kFloat64 || bf16) || !all_of_dtype(dt, x, weight, bias) || !on_cpu(x, weight, bias))
    return three_ops();
  check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  if (s.n == 0 || s.c_out == 0 || s.h_out < 2 || s.w_out < 2) return three_ops();  // its errors, its empty results
  if (bf16 && cpu::conv2d_bf16_native(s)) return three_ops();
  return fused(x, weight, bias, s, stride, padding, dilation, groups);
}

// The gradients of a recorded block. A bfloat16 block runs on the bfloat16 direct
// kernels where conv2d_bf16_direct says so; elsewhere in float32 on the widened
// values (exact), each gradient rounded once.
std::tuple<Tensor, Tensor, Tensor> conv2d_relu_pool2x2_backward(const Tensor& grad_y, const Tensor& window,
                                                                const Tensor& x, const Tensor& weight, Pair stride,
                                                                Pair padding, Pair dilation, int64_t groups,
                                                                std::array<bool, 3> want) {
  const DType dt = weight.dtype();
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  const DType kernel_dt = dt == kBFloat16 && !cpu::conv2d_bf16_direct(s) ? kFloat32 : dt;
  const auto prepare = [&](const Tensor& t) { return t.to(kernel_dt).contiguous(); };
  const auto result = [&](const Tensor& t) { return !t.defined() ? t : t.to(dt); };
  const Tensor g = prepare(grad_y), win = window.contiguous();
  Tensor gx, gw, gb;
  if (want[0]) {
    gx = empty(x.shape(), {kernel_dt, kCPU});
    cpu::conv2d_relu_pool_backward_input(kernel_dt, s, g.data_ptr(), win.data_ptr<uint8_t>(),
                                         prepare(weight).data_ptr(), gx.data_ptr());
  }
  if (want[1] || want[2]) {
    gw = empty(weight.shape(), {kernel_dt, kCPU});
    if (want[2]) gb = empty({s.c_out}, {kernel_dt, kCPU});
    cpu::conv2d_relu_pool_backward_weight(kernel_dt, s, g.data_ptr(), win.data_ptr<uint8_t>(), prepare(x).data_ptr(),
                                          gw.data_ptr(), gb.defined() ? gb.data_ptr() : nullptr);
    if (!want[1]) gw = Tensor();
  }
  return {result(gx), result(gw), result(gb)};
}

}  // namespace ember
