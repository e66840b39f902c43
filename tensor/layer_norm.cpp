// Front-end of layer_norm: checks, float16/bfloat16 computed in float32 (and
// autocast's float32 policy), the kernels over [rows, cols] with cols the product
// of normalized_shape, and the LayerNorm node, which saves x, the weight and the
// per-row mean and 1/std, and keeps normalized_shape (LayerNormAttrs).
#include "kernels/cpu/layer_norm.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {
namespace {

void check_param(const char* what, const Tensor& p, const Shape& normalized_shape) {
  if (p.defined() && p.shape() != normalized_shape)
    throw ShapeError(msg("Expected ", what, " to be of same shape as normalized_shape, but got ", what, " of shape ",
                         shape_str(p.shape()), " and normalized_shape = ", shape_str(normalized_shape)));
}

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (auto r = autocast::run(
          autocast::Policy::fp32,
          [&](const Tensor& a, const Tensor& w, const Tensor& b) { return layer_norm(a, normalized_shape, w, b, eps); },
          x, weight, bias))
    return *r;
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0 || k > x.dim() || !std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - k))
    throw ShapeError(msg("Given normalized_shape=", shape_str(normalized_shape), ", expected input with shape [*",
                         [&] {
                           std::string s;
                           for (int64_t v : normalized_shape) s += ", " + std::to_string(v);
                           return s;
                         }(),
                         "], but got input of size", shape_str(x.shape())));
  check_param("weight", weight, normalized_shape);
  check_param("bias", bias, normalized_shape);
  std::vector<const Tensor*> operands{&x};
  if (weight.defined()) operands.push_back(&weight);
  if (bias.defined()) operands.push_back(&bias);
  check_same_device(operands);
  for (const Tensor* t : operands)
    if (!is_floating(t->dtype()))
      throw DTypeError(msg("layer_norm(): expected floating point tensors, got ", t->dtype()));
  // float16/bfloat16 inputs: computed in float32 and rounded once (through recorded
  // conversions, so autograd needs nothing more). Parameters follow the input's dtype.
  const DType compute = is_half(x.dtype()) ? kFloat32 : x.dtype();
  if (x.dtype() != compute)
    return layer_norm(x.to(compute), normalized_shape, weight.defined() ? weight.to(compute) : weight,
                      bias.defined() ? bias.to(compute) : bias, eps)
        .to(x.dtype());
  if ((weight.defined() && weight.dtype() != compute) || (bias.defined() && bias.dtype() != compute))
    return layer_norm(x, normalized_shape, weight.defined() ? weight.to(compute) : weight,
                      bias.defined() ? bias.to(compute) : bias, eps);
  const int64_t cols = product(normalized_shape);
  const int64_t rows = product(Shape(x.shape().begin(), x.shape().end() - k));
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  Tensor mean = empty({rows}, {x.dtype(), x.device()});
  Tensor rstd = empty(mean.shape(), {x.dtype(), x.device()});
  Tensor xc = x.detach().contiguous();
  Tensor wc = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  if (const OpBackend backend = backend_of("layer_norm", x); backend != Backend::None && mean.numel() > 0) {
    const void* wp = wc.defined() ? wc.data_ptr() : nullptr;
    const void* bp = bc.defined() ? bc.data_ptr() : nullptr;
    if (backend == Backend::CPU)
      cpu::layer_norm_forward(x.dtype(), rows, cols, xc.data_ptr(), wp, bp, eps, y.data_ptr(), mean.data_ptr(),
                              rstd.data_ptr());
    else
      EMBER_CUDA(cuda::layer_norm_forward(x.dtype(), rows, cols, xc.data_ptr(), wp, bp, eps, y.data_ptr(),
                                          mean.data_ptr(), rstd.data_ptr(), stream_of(x)));
  }
  if (needs_grad({&x, &weight, &bias})) {
    auto node = record(OpId::LayerNorm, {&x, &weight, &bias}, {&y});
    node->save("x", xc);
    if (wc.defined()) node->save("weight", wc);
    node->save("mean", mean);
    node->save("rstd", rstd);
    node->attrs = LayerNormAttrs{normalized_shape, weight.defined(), eps};
  }
  return y;
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& mean,
                                                       const Tensor& rstd, const Tensor& weight,
                                                       const Shape& normalized_shape, std::array<bool, 3> output_mask) {
  const int64_t cols = product(normalized_shape);
  const int64_t rows = mean.numel();
  if (x.numel() != rows * cols || grad_y.shape() != x.shape() || rstd.numel() != rows ||
      (weight.defined() && weight.numel() != cols))
    throw ShapeError(msg("layer_norm_backward(): inconsistent shapes: grad ", shape_str(grad_y.shape()), ", x ",
                         shape_str(x.shape()), ", ", rows, " rows of normalized_shape ", shape_str(normalized_shape)));
  const TensorOptions opts{x.dtype(), x.device()};
  Tensor gx = output_mask[0] ? empty(x.shape(), opts) : Tensor();
  Tensor gw = output_mask[1] ? empty(normalized_shape, opts) : Tensor();
  Tensor gb = output_mask[2] ? empty(normalized_shape, opts) : Tensor();
  if (x.numel() == 0) {  // no rows (or empty rows): the parameter gradients are sums of nothing
    NoGradGuard no_grad;
    if (gx.defined()) gx = zeros(x.shape(), opts);
    if (gw.defined()) gw = zeros(normalized_shape, opts);
    if (gb.defined()) gb = zeros(normalized_shape, opts);
    return {gx, gw, gb};
  }
  const OpBackend backend = backend_of("layer_norm_backward", x);
  if (backend == Backend::None) return {gx, gw, gb};
  NoGradGuard no_grad;
  Tensor g = grad_y.to(x.dtype()).contiguous(), xc = x.contiguous(), m = mean.contiguous(), r = rstd.contiguous();
  Tensor wc = weight.defined() ? weight.to(x.dtype()).contiguous() : Tensor();
  const void* wp = wc.defined() ? wc.data_ptr() : nullptr;
  void* gxp = gx.defined() ? gx.data_ptr() : nullptr;
  void* gwp = gw.defined() ? gw.data_ptr() : nullptr;
  void* gbp = gb.defined() ? gb.data_ptr() : nullptr;
  if (backend == Backend::CPU)
    cpu::layer_norm_backward(x.dtype(), rows, cols, g.data_ptr(), xc.data_ptr(), m.data_ptr(), r.data_ptr(), wp, gxp,
                             gwp, gbp);
  else
    EMBER_CUDA(cuda::layer_norm_backward(x.dtype(), rows, cols, g.data_ptr(), xc.data_ptr(), m.data_ptr(),
                                         r.data_ptr(), wp, gxp, gwp, gbp, stream_of(x)));
  return {gx, gw, gb};
}

}  // namespace ember
