// Pooling front-ends: max_pool2d (with indices, or without when nothing is
// recorded) and avg_pool2d over [N, C, H, W];
// half types are computed in float32. Nodes: MaxPool2d saves the indices and its
// window (MaxPool2dAttrs); AvgPool2d keeps its window (AvgPool2dAttrs).
#include "kernels/cpu/pool2d.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {
namespace {

cpu::Pool2dShape pool_shape(const char* op, const Shape& x, Pair kernel, Pair stride, Pair padding, Pair dilation,
                            bool ceil_mode) {
  if (x.size() != 4) throw ShapeError(msg(op, ": expected a 4-D input [N, C, H, W], got ", shape_str(x)));
  if (kernel[0] < 1 || kernel[1] < 1) throw ValueError(msg(op, ": kernel_size must be greater than zero"));
  if (stride[0] < 1 || stride[1] < 1) throw ValueError(msg(op, ": stride must be greater than zero"));
  if (dilation[0] < 1 || dilation[1] < 1) throw ValueError(msg(op, ": dilation must be greater than zero"));
  if (padding[0] < 0 || padding[1] < 0 || padding[0] > kernel[0] / 2 || padding[1] > kernel[1] / 2)
    throw ValueError(msg(op, ": pad should be at most half of effective kernel size, but got pad=", padding[0],
                         ", kernel_size=", kernel[0]));
  // pool2d_output_size's sums and products, checked here once (2 * padding <= kernel).
  for (int i = 0; i < 2; ++i) {
    (void)size_add(size_add(x[2 + i], 2 * padding[i], op), ceil_mode ? stride[i] - 1 : 0, op);
    (void)size_mul(dilation[i], kernel[i] - 1, op);
  }
  cpu::Pool2dShape s;
  s.n = x[0];
  s.c = x[1];
  s.h = x[2];
  s.w = x[3];
  s.kh = kernel[0];
  s.kw = kernel[1];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = padding[0];
  s.pad_w = padding[1];
  s.dil_h = dilation[0];
  s.dil_w = dilation[1];
  s.ceil_mode = ceil_mode;
  cpu::pool2d_set_output_size(s);
  if (s.h_out <= 0 || s.w_out <= 0)
    throw ShapeError(msg(op, ": output size is too small (", s.h_out, "x", s.w_out, ") for input ", shape_str(x)));
  return s;
}

// y = max pooling of x on x's backend (nothing to compute on meta); the positions
// go to *idx unless it is null (both backends' kernels then skip them).
void max_pool2d_into(const Tensor& x, const cpu::Pool2dShape& s, Tensor& y, Tensor* idx_t) {
  const OpBackend backend = backend_of("max_pool2d", x);
  if (backend == Backend::None || y.numel() == 0) return;
  int64_t* idx = idx_t ? idx_t->data_ptr<int64_t>() : nullptr;
  Tensor xc = x.detach().contiguous();
  if (backend == Backend::CPU) cpu::max_pool2d_forward(x.dtype(), s, xc.data_ptr(), y.data_ptr(), idx);
  else EMBER_CUDA(cuda::max_pool2d_forward(x.dtype(), s, xc.data_ptr(), y.data_ptr(), idx, stream_of(x)));
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel, Pair stride, Pair padding,
                                                   Pair dilation, bool ceil_mode) {
  const auto s = pool_shape("max_pool2d", x.shape(), kernel, stride, padding, dilation, ceil_mode);
  if (is_half(x.dtype())) {  // computed in float32 on both devices
    auto [y, idx] = max_pool2d_with_indices(x.to(kFloat32), kernel, stride, padding, dilation, ceil_mode);
    return {y.to(x.dtype()), idx};
  }
  if (!is_floating(x.dtype())) throw NotImplementedError(msg("max_pool2d: not implemented for dtype ", x.dtype()));
  Tensor y = empty({s.n, s.c, s.h_out, s.w_out}, {x.dtype(), x.device()});
  Tensor idx = empty(y.shape(), {kInt64, x.device()});
  max_pool2d_into(x, s, y, &idx);
  if (needs_grad({&x})) {
    auto node = record(OpId::MaxPool2d, {&x}, {&y});
    node->save("indices", idx);
    node->attrs = MaxPool2dAttrs{kernel, stride, padding, dilation, ceil_mode};
  }
  return {y, idx};
}

Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation, bool ceil_mode) {
  if (needs_grad({&x}) || is_half(x.dtype()) || !is_floating(x.dtype()))
    return std::get<0>(max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode));
  const auto s = pool_shape("max_pool2d", x.shape(), kernel, stride, padding, dilation, ceil_mode);
  Tensor y = empty({s.n, s.c, s.h_out, s.w_out}, {x.dtype(), x.device()});
  max_pool2d_into(x, s, y, nullptr);
  return y;
}

namespace {
// Gradient of max pooling given the pooling geometry (kh == 0 when the window is unknown).
Tensor max_pool2d_backward_impl(const Tensor& grad_y, const Tensor& indices, const cpu::Pool2dShape& s) {
  const Shape xs{s.n, s.c, s.h, s.w};
  Tensor gx = empty(xs, {grad_y.dtype(), grad_y.device()});
  const OpBackend backend = backend_of("max_pool2d_backward", grad_y);
  if (backend == Backend::None) return gx;
  Tensor g = grad_y.contiguous(), i = indices.contiguous();
  if (backend == Backend::CPU) cpu::max_pool2d_backward(grad_y.dtype(), s, g.data_ptr(), i.data_ptr<int64_t>(), gx.data_ptr());
  else EMBER_CUDA(cuda::max_pool2d_backward(grad_y.dtype(), s, g.data_ptr(), i.data_ptr<int64_t>(), gx.data_ptr(),
                                            stream_of(grad_y)));
  return gx;
}
}  // namespace

Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape, Pair kernel,
                           Pair stride, Pair padding, Pair dilation, bool ceil_mode) {
  return max_pool2d_backward_impl(grad_y, indices,
                                  pool_shape("max_pool2d", x_shape, kernel, stride, padding, dilation, ceil_mode));
}

Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape) {
  cpu::Pool2dShape s;  // no window: the kernels scatter through the indices
  s.n = x_shape[0];
  s.c = x_shape[1];
  s.h = x_shape[2];
  s.w = x_shape[3];
  s.h_out = grad_y.shape()[2];
  s.w_out = grad_y.shape()[3];
  return max_pool2d_backward_impl(grad_y, indices, s);
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode, bool count_include_pad,
                  int64_t divisor_override) {
  auto s = pool_shape("avg_pool2d", x.shape(), kernel, stride, padding, {1, 1}, ceil_mode);
  s.count_include_pad = count_include_pad;
  s.divisor_override = divisor_override;
  if (divisor_override < 0) throw ValueError("avg_pool2d: divisor must be not zero");
  if (is_half(x.dtype()))
    return avg_pool2d(x.to(kFloat32), kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
        .to(x.dtype());
  if (!is_floating(x.dtype())) throw NotImplementedError(msg("avg_pool2d: not implemented for dtype ", x.dtype()));
  Tensor y = empty({s.n, s.c, s.h_out, s.w_out}, {x.dtype(), x.device()});
  if (const OpBackend backend = backend_of("avg_pool2d", x); backend != Backend::None && y.numel() > 0) {
    Tensor xc = x.detach().contiguous();
    if (backend == Backend::CPU) cpu::avg_pool2d_forward(x.dtype(), s, xc.data_ptr(), y.data_ptr());
    else EMBER_CUDA(cuda::avg_pool2d_forward(x.dtype(), s, xc.data_ptr(), y.data_ptr(), stream_of(x)));
  }
  if (needs_grad({&x})) {
    auto node = record(OpId::AvgPool2d, {&x}, {&y});
    node->attrs = AvgPool2dAttrs{kernel, stride, padding, ceil_mode, count_include_pad, divisor_override};
  }
  return y;
}

Tensor avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape, Pair kernel, Pair stride, Pair padding,
                           bool ceil_mode, bool count_include_pad, int64_t divisor_override) {
  auto s = pool_shape("avg_pool2d", x_shape, kernel, stride, padding, {1, 1}, ceil_mode);
  s.count_include_pad = count_include_pad;
  s.divisor_override = divisor_override;
  Tensor gx = empty(x_shape, {grad_y.dtype(), grad_y.device()});
  const OpBackend backend = backend_of("avg_pool2d_backward", grad_y);
  if (backend == Backend::None) return gx;
  Tensor g = grad_y.contiguous();
  if (backend == Backend::CPU) cpu::avg_pool2d_backward(grad_y.dtype(), s, g.data_ptr(), gx.data_ptr());
  else EMBER_CUDA(cuda::avg_pool2d_backward(grad_y.dtype(), s, g.data_ptr(), gx.data_ptr(), stream_of(grad_y)));
  return gx;
}

}  // namespace ember
