// Every backward rule, one `case` per op, written with tensor ops so that it runs on
// any device and dtype. Each returns one gradient per forward input (undefined
// where the input takes none). A rule reads what the op's front-end stored when it
// recorded the node: saved tensors by name (saved("x")) and attributes as the op's
// struct (tensor/op_attrs.h). For elementwise ops, whether "x" (the input) or "y"
// (the output) is saved is the `saves` column of the op's row in
// kernels/base/ops.def.h. Broadcasting inputs get their gradient summed back to their shape.
#include "autograd/engine.h"
#include <algorithm>
#include <cmath>

#include "tensor/checks.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::autograd {
namespace {

// Sums a broadcast gradient back to `shape`: over the leading dims it lacks and
// over dims where it has size 1.
Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? g : g.sum(dims, true);
  return r.reshape(shape);
}

// The reduced dims of a reduction node; an empty list means every dim.
Shape reduced_dims(const ReduceAttrs& a, int64_t ndim) {
  Shape dims = a.dims;
  if (dims.empty())
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  return dims;
}

// A reduction's output gradient, re-expanded to the input's shape.
Tensor expand_reduced(const Tensor& g, const Shape& in_shape, const Shape& dims, bool keepdim) {
  Tensor r = g;
  if (!keepdim) {
    Shape sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t d : sorted) r = r.unsqueeze(d);
  }
  return r.expand(in_shape);
}

int64_t count_of(const Shape& in_shape, const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= in_shape[d];
  return n;
}

Tensor as(const Tensor& mask, DType dt) { return mask.to(dt); }

// The gradients of a convolution's input, weight and bias from the gradient of its
// output, each only when an edge wants it (the Conv2d and Conv2dReluPool rules).
std::vector<Tensor> conv2d_grads(const Node& n, const Tensor& g_out, const Tensor& x, const Tensor& w) {
  const auto& c = n.attrs_as<Conv2dAttrs>();
  Tensor gx, gw, gb;
  if (n.next[0].valid()) gx = conv2d_backward_input(g_out, w, x.shape(), c.stride, c.padding, c.dilation, c.groups);
  if (n.next[1].valid() || (c.has_bias && n.next[2].valid()))
    std::tie(gw, gb) = conv2d_backward_weight(g_out, x, w.shape(), c.stride, c.padding, c.dilation, c.groups, c.has_bias);
  return {gx, gw, gb};
}

}  // namespace

std::vector<Tensor> apply_backward(Node& n, const std::vector<Tensor>& grads) {
  const Tensor& g = grads[0];
  auto saved = [&](const char* name) { return n.saved_tensor(name); };
  auto shape_of = [&](size_t i) -> const Shape& { return n.inputs[i].shape; };
  switch (n.op) {
    // ---- unary: x is the input, y the output ----
    case OpId::Neg: return {-g};
    case OpId::Abs: {
      Tensor x = saved("x");
      return {g * (as(x > 0, g.dtype()) - as(x < 0, g.dtype()))};
    }
    case OpId::Relu: return {relu_backward(g, saved("y"))};
    case OpId::Exp: return {g * saved("y")};
    case OpId::Log: return {g / saved("x")};
    case OpId::Sqrt: return {g / (saved("y") * 2)};
    case OpId::Rsqrt: {  // d/dx x^-1/2 = -y^3 / 2
      Tensor y = saved("y");
      return {g * y * y * y * -0.5};
    }
    case OpId::Sin: return {g * saved("x").cos()};
    case OpId::Cos: return {-g * saved("x").sin()};
    case OpId::Tanh: {
      Tensor y = saved("y");
      return {g * (1 - y * y)};
    }
    case OpId::Sigmoid: {
      Tensor y = saved("y");
      return {g * y * (1 - y)};
    }
    case OpId::Gelu: {  // d/dx x*Phi(x) = Phi(x) + x*phi(x)
      Tensor x = saved("x");
      Tensor cdf = (x.gelu() / x);  // Phi(x) except at 0
      cdf = where(x == 0, 0.5, cdf);
      Tensor pdf = (x * x * -0.5).exp() * 0.3989422804014327;
      return {g * (cdf + x * pdf)};
    }
    case OpId::Softplus: {  // d/dx log(1 + e^x) = sigmoid(x); 1 above the threshold, as the forward
      Tensor x = saved("x");
      return {where(x > 20, g, g * x.sigmoid())};
    }
    case OpId::Erf: {  // d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
      Tensor x = saved("x");
      return {g * (x * x * -1.0).exp() * 1.1283791670955126};
    }

    // ---- binary: a and b are the inputs, y the output ----
    case OpId::Add: return {sum_to(g, shape_of(0)), sum_to(g, shape_of(1))};
    case OpId::Sub: return {sum_to(g, shape_of(0)), sum_to(-g, shape_of(1))};
    case OpId::Mul: {
      Tensor a = saved("a"), b = saved("b");
      return {n.next[0].valid() ? sum_to(g * b, shape_of(0)) : Tensor(),
              n.next[1].valid() ? sum_to(g * a, shape_of(1)) : Tensor()};
    }
    case OpId::Div: {
      Tensor a = saved("a"), b = saved("b");
      return {n.next[0].valid() ? sum_to(g / b, shape_of(0)) : Tensor(),
              n.next[1].valid() ? sum_to(-g * a / (b * b), shape_of(1)) : Tensor()};
    }
    case OpId::Pow: {  // d/da = b a^(b-1); d/db = y log a (0 where a == 0 and b >= 0)
      Tensor a = saved("a"), b = saved("b"), y = saved("y");
      Tensor ga, gb;
      if (n.next[0].valid()) ga = sum_to(g * b * pow(a, b - 1), shape_of(0));
      if (n.next[1].valid()) gb = sum_to(where((a == 0) * (b >= 0), 0.0, g * y * a.log()), shape_of(1));
      return {ga, gb};
    }
    case OpId::Maximum:
    case OpId::Minimum: {  // ties split the gradient evenly, as PyTorch
      Tensor a = saved("a"), b = saved("b");
      Tensor a_wins = n.op == OpId::Maximum ? a > b : a < b;
      Tensor tie = a == b;
      Tensor wa = as(a_wins, g.dtype()) + as(tie, g.dtype()) * 0.5;
      Tensor wb = 1 - wa;
      return {sum_to(g * wa, shape_of(0)), sum_to(g * wb, shape_of(1))};
    }
    case OpId::Where: {  // inputs: a, b
      Tensor c = saved("condition");
      return {sum_to(where(c, g, 0.0), shape_of(0)), sum_to(where(c, 0.0, g), shape_of(1))};
    }

    // ---- reductions (ReduceAttrs) ----
    case OpId::Sum: {
      const Shape& in = shape_of(0);
      const auto& r = n.attrs_as<ReduceAttrs>();
      return {expand_reduced(g, in, reduced_dims(r, in.size()), r.keepdim)};
    }
    case OpId::Mean: {
      const Shape& in = shape_of(0);
      const auto& r = n.attrs_as<ReduceAttrs>();
      const Shape dims = reduced_dims(r, in.size());
      return {expand_reduced(g, in, dims, r.keepdim) / static_cast<double>(count_of(in, dims))};
    }
    case OpId::Var: {
      const Shape& in = shape_of(0);
      const auto& r = n.attrs_as<ReduceAttrs>();
      const Shape dims = reduced_dims(r, in.size());
      Tensor x = saved("x");
      const double dof = static_cast<double>(count_of(in, dims) - r.correction);
      Tensor centered = x - x.mean(dims, true);
      return {expand_reduced(g, in, dims, r.keepdim) * centered * (2.0 / dof)};
    }
    case OpId::Norm: {  // d|x|_p/dx = sign(x) |x|^(p-1) / |x|_p^(p-1); 0 where |x|_p = 0
      const Shape& in = shape_of(0);
      const auto& r = n.attrs_as<ReduceAttrs>();
      const Shape dims = reduced_dims(r, in.size());
      const double p = r.p;
      Tensor x = saved("x"), y = saved("y"), gy = g;
      const DType dt = x.dtype();
      if (is_half(dt)) x = x.to(kFloat32), y = y.to(kFloat32), gy = gy.to(kFloat32);  // as the forward
      Tensor ye = expand_reduced(y, in, dims, r.keepdim), ge = expand_reduced(gy, in, dims, r.keepdim);
      Tensor sign = as(x > 0, x.dtype()) - as(x < 0, x.dtype());
      Tensor gx;
      if (p == 0) {
        gx = zeros_like(x);
      } else if (p == 1) {
        gx = ge * sign;
      } else if (std::isinf(p)) {  // like amax/amin: shared evenly by the elements of largest/smallest magnitude
        // A NaN element made the norm NaN: it counts as a hit (with sign 0), as in PyTorch.
        Tensor hit = where(x != x, 1.0, as(x.abs() == ye, x.dtype()));
        gx = ge * sign * hit / expand_reduced(hit.sum(dims, true), in, dims, true);
      } else if (p == 2) {
        gx = where(ye == 0, 0.0, ge * x / ye);
      } else {  // x == 0 masked too: for p < 1, |x|^(p-1) is infinite there
        gx = where(ye == 0, 0.0, where(x == 0, 0.0, ge * sign * pow(x.abs(), p - 1) / pow(ye, p - 1)));
      }
      return {gx.to(dt)};
    }
    case OpId::Amax:
    case OpId::Amin: {  // the gradient is shared evenly by all extreme elements
      const Shape& in = shape_of(0);
      const auto& r = n.attrs_as<ReduceAttrs>();
      const Shape dims = reduced_dims(r, in.size());
      Tensor x = saved("x"), y = saved("y");
      Tensor mask = as(x == expand_reduced(y, in, dims, r.keepdim), g.dtype());
      Tensor count = mask.sum(dims, true);
      return {expand_reduced(g, in, dims, r.keepdim) * mask / expand_reduced(count, in, dims, true)};
    }
    case OpId::MaxDim:
    case OpId::MinDim: {  // the gradient goes to the chosen element
      const Shape& in = shape_of(0);
      const auto& a = n.attrs_as<DimAttrs>();
      const int64_t dim = a.dim;
      Tensor idx = saved("indices"), gg = g;
      if (!a.keepdim) {
        idx = idx.unsqueeze(dim);
        gg = gg.unsqueeze(dim);
      }
      Shape pos_shape(in.size(), 1);
      pos_shape[dim] = in[dim];
      Tensor positions = arange(in[dim]).reshape(pos_shape);
      return {where(positions == idx, gg.expand(in), 0.0)};
    }
    case OpId::Softmax: {
      Tensor y = saved("y");
      return {y * (g - (g * y).sum({n.attrs_as<DimAttrs>().dim}, true))};
    }
    case OpId::LogSoftmax: {
      Tensor y = saved("y");
      return {g - y.exp() * g.sum({n.attrs_as<DimAttrs>().dim}, true)};
    }

    // ---- linear algebra, joining, copies ----
    case OpId::Matmul: {  // a and b are at least 2-D
      Tensor a = saved("a"), b = saved("b");
      Tensor ga, gb;
      if (n.next[0].valid()) ga = sum_to(matmul(g, b.transpose(-1, -2)), shape_of(0));
      if (n.next[1].valid()) gb = sum_to(matmul(a.transpose(-1, -2), g), shape_of(1));
      return {ga, gb};
    }
    case OpId::Linear: {  // y = x . W^T + b (then ReLU): dW = g^T . x comes out [out, in], as W is
      const auto& a = n.attrs_as<LinearAttrs>();
      const Tensor gy = a.relu ? relu_backward(g, saved("y")) : g;
      Tensor gx, gw, gb;
      if (n.next[0].valid()) gx = matmul(gy, saved("weight"));
      if (n.next[1].valid()) gw = matmul(gy.t(), saved("x"));
      if (a.has_bias && n.next[2].valid()) gb = gy.sum({0});
      return {gx, gw, gb};
    }
    case OpId::Cat: {  // each input gets its slice
      const int64_t dim = n.attrs_as<DimAttrs>().dim;
      std::vector<Tensor> out;
      int64_t offset = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Shape& s = shape_of(i);
        if (s.size() == 1 && s[0] == 0) {  // skipped empty 1-D input
          out.push_back(zeros(s, {g.dtype(), g.device()}));
          continue;
        }
        out.push_back(g.narrow(dim, offset, s[dim]));
        offset += s[dim];
      }
      return out;
    }
    case OpId::Take: return {take_backward(g, shape_of(0), n.attrs_as<DimAttrs>().dim, saved("index"))};
    case OpId::ToCopy: return {g.to(n.inputs[0].device, n.inputs[0].dtype)};
    case OpId::Clone: return {g};

    // ---- views ----
    case OpId::View: return {g.reshape(shape_of(0))};
    case OpId::Permute: {
      const Shape& dims = n.attrs_as<PermuteAttrs>().dims;
      Shape inverse(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) inverse[dims[i]] = static_cast<int64_t>(i);
      return {g.permute(inverse)};
    }
    case OpId::Expand: return {sum_to(g, shape_of(0))};
    case OpId::Slice: {
      Tensor r = zeros(shape_of(0), {g.dtype(), g.device()});
      const auto& s = n.attrs_as<SliceAttrs>();
      r.slice(s.dim, s.start, s.start + g.shape()[s.dim] * s.step, s.step).copy_(g);
      return {r};
    }
    case OpId::Select: {
      Tensor r = zeros(shape_of(0), {g.dtype(), g.device()});
      const auto& s = n.attrs_as<SelectAttrs>();
      r.select(s.dim, s.index).copy_(g);
      return {r};
    }

    // ---- layers (tensor/nn_ops.h) ----
    case OpId::Conv2d: return conv2d_grads(n, g, saved("x"), saved("weight"));
    case OpId::Conv2dReluPool: {  // the Conv2d rule, reading the pooled gradient spread back
      const auto& c = n.attrs_as<Conv2dAttrs>();
      auto [gx, gw, gb] = conv2d_relu_pool2x2_backward(
          g, saved("window"), saved("x"), saved("weight"), c.stride, c.padding, c.dilation, c.groups,
          {n.next[0].valid(), n.next[1].valid(), c.has_bias && n.next[2].valid()});
      return {gx, gw, gb};
    }
    case OpId::MaxPool2d: {
      const auto& p = n.attrs_as<MaxPool2dAttrs>();
      return {max_pool2d_backward(g, saved("indices"), shape_of(0), p.kernel, p.stride, p.padding, p.dilation,
                                  p.ceil_mode)};
    }
    case OpId::AvgPool2d: {
      const auto& p = n.attrs_as<AvgPool2dAttrs>();
      return {avg_pool2d_backward(g, shape_of(0), p.kernel, p.stride, p.padding, p.ceil_mode, p.count_include_pad,
                                  p.divisor_override)};
    }
    case OpId::LayerNorm: {  // inputs: x, weight, bias
      const auto& a = n.attrs_as<LayerNormAttrs>();
      auto [gx, gw, gb] = layer_norm_backward(g, saved("x"), saved("mean"), saved("rstd"),
                                              a.has_weight ? saved("weight") : Tensor(), a.normalized_shape,
                                              {n.next[0].valid(), n.next[1].valid(), n.next[2].valid()});
      return {gx, gw, gb};
    }
    case OpId::Pad: {
      const auto& p = n.attrs_as<PadAttrs>();
      return {pad_backward(g, shape_of(0), p.pads, p.mode)};
    }
    case OpId::CrossEntropy:
      return {cross_entropy_backward(g, saved("logits"), saved("targets"), saved("stats"),
                                     n.attrs_as<LossAttrs>().ignore_index)};
    case OpId::NllLoss:
      return {nll_loss_backward(g, saved("targets"), shape_of(0), n.attrs_as<LossAttrs>().ignore_index)};
    case OpId::AccumulateGrad: break;  // handled by the engine
  }
  throw Error(msg("internal error: no backward rule ran for ", n.name()));
}

}  // namespace ember::autograd
