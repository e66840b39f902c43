// conv2d front-end: shape checks with PyTorch's messages, half types on the CPU
// computed in float32 (or on the bfloat16 kernels where they pay), dispatch to
// kernels/cpu/conv2d, and the Conv2d autograd node
// (saved: x, weight; attributes: Conv2dAttrs). Inference's own front-ends
// (conv2d_relu, a packed weight) are in conv_inference.cpp.
#include "kernels/cpu/conv2d.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/conv_args.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {

cpu::Conv2dShape conv2d_shape(const Shape& x, const Shape& w, Pair stride, Pair padding, Pair dilation, int64_t groups) {
  cpu::Conv2dShape s;
  s.n = x[0];
  s.c_in = x[1];
  s.h = x[2];
  s.w = x[3];
  s.c_out = w[0];
  s.kh = w[2];
  s.kw = w[3];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = padding[0];
  s.pad_w = padding[1];
  s.dil_h = dilation[0];
  s.dil_w = dilation[1];
  s.groups = groups;
  return cpu::conv2d_set_output_size(s);
}

void check_conv2d_args(const Tensor& x, const Tensor& w, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
                     int64_t groups) {
  if (w.dim() != 4) throw ShapeError(msg("conv2d: expected a 4-dimensional weight, got ", shape_str(w.shape())));
  if (x.dim() != 4)
    throw ShapeError(msg("Expected 4-dimensional input for 4-dimensional weight ", shape_str(w.shape()), ", but got ",
                         x.dim(), "-dimensional input of size ", shape_str(x.shape()), " instead"));
  if (stride[0] < 1 || stride[1] < 1) throw ValueError("non-positive stride is not supported");
  if (padding[0] < 0 || padding[1] < 0) throw ValueError("negative padding is not supported");
  if (dilation[0] < 1 || dilation[1] < 1) throw ValueError("dilation should be greater than zero");
  if (groups < 1) throw ValueError("non-positive groups is not supported");
  if (w.shape()[0] % groups != 0)
    throw ShapeError(msg("Given groups=", groups, ", expected weight to be divisible by ", groups,
                         " at dimension 0, but got weight of size ", shape_str(w.shape()), " instead"));
  if (x.shape()[1] != w.shape()[1] * groups)
    throw ShapeError(msg("Given groups=", groups, ", weight of size ", shape_str(w.shape()), ", expected input",
                         shape_str(x.shape()), " to have ", w.shape()[1] * groups, " channels, but got ",
                         x.shape()[1], " channels instead"));
  if (bias.defined() && (bias.dim() != 1 || bias.shape()[0] != w.shape()[0]))
    throw ShapeError(msg("Given weight of size ", shape_str(w.shape()), ", expected bias to be 1-dimensional with ",
                         w.shape()[0], " elements, but got bias of size ", shape_str(bias.shape()), " instead"));
  const char* op = "conv2d";
  const int64_t ph = size_add(x.shape()[2], size_mul(2, padding[0], op), op),
                pw = size_add(x.shape()[3], size_mul(2, padding[1], op), op);
  const int64_t kh = size_add(size_mul(dilation[0], w.shape()[2] - 1, op), 1, op),
                kw = size_add(size_mul(dilation[1], w.shape()[3] - 1, op), 1, op);
  if (ph < kh || pw < kw)
    throw ShapeError(msg("Calculated padded input size per channel: (", ph, " x ", pw, "). Kernel size: (", kh, " x ",
                         kw, "). Kernel size can't be greater than actual input size"));
}

namespace {

// Whether a CPU bfloat16 convolution of this shape runs on bfloat16 kernels: the
// bfloat16 GEMM for large layers, the stride-1 direct kernels (vdpbf16ps) for small
// ones; otherwise it is widened to float32.
bool bf16_kernels(const Conv2dShape& s) { return cpu::conv2d_bf16_native(s) || cpu::conv2d_bf16_direct(s); }

bool cpu_bf16_native(const Tensor& x, const Tensor& w, Pair stride, Pair padding, Pair dilation, int64_t groups) {
  return x.dtype() == kBFloat16 && x.device().is_cpu() &&
         bf16_kernels(conv2d_shape(x.shape(), w.shape(), stride, padding, dilation, groups));
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding, Pair dilation,
              int64_t groups) {
  if (auto r = autocast::run(autocast::Policy::lower, [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
        return conv2d(x_, w_, b_, stride, padding, dilation, groups); }, x, weight, bias))
    return *r;
  if (bias.defined()) check_same_device({&x, &weight, &bias});
  else check_same_device(x, weight);
  check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != weight.dtype()))
    throw DTypeError(msg("conv2d: expected input, weight and bias to have the same dtype, but got ", x.dtype(), ", ",
                         weight.dtype(), (bias.defined() ? msg(" and ", bias.dtype()) : std::string())));
  // CPU half types: bfloat16 runs on bfloat16 kernels where the CPU has vdpbf16ps
  // (the GEMM for large layers, the direct kernels for small stride-1 ones); the
  // rest is computed in float32 and rounded once (CUDA has half kernels).
  if (is_half(x.dtype()) && !x.device().is_cuda() && !cpu_bf16_native(x, weight, stride, padding, dilation, groups)) {
    return conv2d(x.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, stride, padding,
                  dilation, groups)
        .to(x.dtype());
  }
  if (!is_floating(x.dtype())) throw NotImplementedError(msg("conv2d: not implemented for dtype ", x.dtype()));
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  Tensor y = empty({s.n, s.c_out, s.h_out, s.w_out}, {x.dtype(), x.device()});
  if (const OpBackend backend = backend_of("conv2d", x); backend != Backend::None && y.numel() > 0) {
    NoGradGuard no_grad;
    Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.defined() ? bias.contiguous() : bias;
    const void* bp = bc.defined() ? bc.data_ptr() : nullptr;
    if (backend == Backend::CPU) cpu::conv2d_forward(x.dtype(), s, xc.data_ptr(), wc.data_ptr(), bp, y.data_ptr());
    else EMBER_CUDA(cuda::conv2d_forward(x.dtype(), s, xc.data_ptr(), wc.data_ptr(), bp, y.data_ptr(), stream_of(x)));
  }
  if (needs_grad({&x, &weight, &bias})) {
    auto node = record(OpId::Conv2d, {&x, &weight, &bias}, {&y});
    node->save("x", x);
    node->save("weight", weight);
    node->attrs = Conv2dAttrs{stride, padding, dilation, groups, bias.defined()};
  }
  return y;
}

Tensor conv2d_backward_input(const Tensor& grad_y, const Tensor& weight, const Shape& x_shape, Pair stride,
                             Pair padding, Pair dilation, int64_t groups) {
  const auto s = conv2d_shape(x_shape, weight.shape(), stride, padding, dilation, groups);
  if (is_half(grad_y.dtype()) && grad_y.device().is_cpu() &&
      !(grad_y.dtype() == kBFloat16 && bf16_kernels(s)))
    return conv2d_backward_input(grad_y.to(kFloat32), weight.to(kFloat32), x_shape, stride, padding, dilation, groups)
        .to(grad_y.dtype());
  Tensor gx = empty(x_shape, {grad_y.dtype(), grad_y.device()});
  const OpBackend backend = backend_of("conv2d_backward", grad_y);
  if (backend == Backend::None || gx.numel() == 0) return gx.numel() ? gx : gx.fill_(0);
  Tensor g = grad_y.contiguous(), w = weight.contiguous();
  if (backend == Backend::CPU) cpu::conv2d_backward_input(grad_y.dtype(), s, g.data_ptr(), w.data_ptr(), gx.data_ptr());
  else EMBER_CUDA(cuda::conv2d_backward_input(grad_y.dtype(), s, g.data_ptr(), w.data_ptr(), gx.data_ptr(),
                                               stream_of(grad_y)));
  return gx;
}

std::tuple<Tensor, Tensor> conv2d_backward_weight(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                                                  Pair stride, Pair padding, Pair dilation, int64_t groups,
                                                  bool with_bias) {
  const auto s = conv2d_shape(x.shape(), w_shape, stride, padding, dilation, groups);
  if (is_half(grad_y.dtype()) && grad_y.device().is_cpu() &&
      !(grad_y.dtype() == kBFloat16 && bf16_kernels(s))) {
    auto [gw, gb] = conv2d_backward_weight(grad_y.to(kFloat32), x.to(kFloat32), w_shape, stride, padding, dilation,
                                           groups, with_bias);
    return {gw.to(grad_y.dtype()), gb.defined() ? gb.to(grad_y.dtype()) : gb};
  }
  Tensor gw = empty(w_shape, {grad_y.dtype(), grad_y.device()});
  Tensor gb = with_bias ? empty({w_shape[0]}, {grad_y.dtype(), grad_y.device()}) : Tensor();
  const OpBackend backend = backend_of("conv2d_backward", grad_y);
  if (backend == Backend::None) return {gw, gb};
  Tensor g = grad_y.contiguous(), xc = x.contiguous();
  void* gbp = gb.defined() ? gb.data_ptr() : nullptr;
  if (backend == Backend::CPU)
    cpu::conv2d_backward_weight(grad_y.dtype(), s, g.data_ptr(), xc.data_ptr(), gw.data_ptr(), gbp);
  else
    EMBER_CUDA(cuda::conv2d_backward_weight(grad_y.dtype(), s, g.data_ptr(), xc.data_ptr(), gw.data_ptr(), gbp,
                                            stream_of(grad_y)));
  return {gw, gb};
}

}  // namespace ember
