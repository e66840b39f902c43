// Every backward rule, one `case` per op, written with tensor ops so that it runs on
// any device and dtype. Each returns one gradient per forward input (undefined
// where the input takes none). What a rule reads (saved tensors, attributes) is
// what the op's front-end stored when it recorded the node; the comment on each
// case says which. Broadcasting inputs get their gradient summed back to their shape.
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

// The reduced dims of a reduction node: ints = [keepdim, (extra), dims...];
// an empty list means every dim.
Shape reduced_dims(const Node& n, size_t first, int64_t ndim) {
  Shape dims(n.ints.begin() + first, n.ints.end());
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

}  // namespace

std::vector<Tensor> apply_backward(Node& n, const std::vector<Tensor>& grads) {
  const Tensor& g = grads[0];
  auto saved = [&](size_t i) { return n.saved[i].unpack(n.name()); };
  auto shape_of = [&](size_t i) -> const Shape& { return n.inputs[i].shape; };
  switch (n.op) {
    // ---- unary: saved[0] is the input x or the output y, as noted ----
    case OpId::Neg: return {-g};
    case OpId::Abs: {  // x
      Tensor x = saved(0);
      return {g * (as(x > 0, g.dtype()) - as(x < 0, g.dtype()))};
    }
    case OpId::Relu: return {g * as(saved(0) > 0, g.dtype())};  // y
    case OpId::Exp: return {g * saved(0)};                       // y
    case OpId::Log: return {g / saved(0)};                       // x
    case OpId::Sqrt: return {g / (saved(0) * 2)};                // y
    case OpId::Rsqrt: {                                          // y: d/dx x^-1/2 = -y^3 / 2
      Tensor y = saved(0);
      return {g * y * y * y * -0.5};
    }
    case OpId::Sin: return {g * saved(0).cos()};                 // x
    case OpId::Cos: return {-g * saved(0).sin()};                // x
    case OpId::Tanh: {                                           // y
      Tensor y = saved(0);
      return {g * (1 - y * y)};
    }
    case OpId::Sigmoid: {                                        // y
      Tensor y = saved(0);
      return {g * y * (1 - y)};
    }
    case OpId::Gelu: {  // x: d/dx x*Phi(x) = Phi(x) + x*phi(x)
      Tensor x = saved(0);
      Tensor cdf = (x.gelu() / x);  // Phi(x) except at 0
      cdf = where(x == 0, 0.5, cdf);
      Tensor pdf = (x * x * -0.5).exp() * 0.3989422804014327;
      return {g * (cdf + x * pdf)};
    }

    // ---- binary: saved[0] = a, saved[1] = b where needed ----
    case OpId::Add: return {sum_to(g, shape_of(0)), sum_to(g, shape_of(1))};
    case OpId::Sub: return {sum_to(g, shape_of(0)), sum_to(-g, shape_of(1))};
    case OpId::Mul: {
      Tensor a = saved(0), b = saved(1);
      return {n.next[0].valid() ? sum_to(g * b, shape_of(0)) : Tensor(),
              n.next[1].valid() ? sum_to(g * a, shape_of(1)) : Tensor()};
    }
    case OpId::Div: {
      Tensor a = saved(0), b = saved(1);
      return {n.next[0].valid() ? sum_to(g / b, shape_of(0)) : Tensor(),
              n.next[1].valid() ? sum_to(-g * a / (b * b), shape_of(1)) : Tensor()};
    }
    case OpId::Pow: {  // saved a, b, y. d/da = b a^(b-1); d/db = y log a (0 where a == 0 and b >= 0)
      Tensor a = saved(0), b = saved(1), y = saved(2);
      Tensor ga, gb;
      if (n.next[0].valid()) ga = sum_to(g * b * pow(a, b - 1), shape_of(0));
      if (n.next[1].valid()) gb = sum_to(where((a == 0) * (b >= 0), 0.0, g * y * a.log()), shape_of(1));
      return {ga, gb};
    }
    case OpId::Maximum:
    case OpId::Minimum: {  // saved a, b; ties split the gradient evenly, as PyTorch
      Tensor a = saved(0), b = saved(1);
      Tensor a_wins = n.op == OpId::Maximum ? a > b : a < b;
      Tensor tie = a == b;
      Tensor wa = as(a_wins, g.dtype()) + as(tie, g.dtype()) * 0.5;
      Tensor wb = 1 - wa;
      return {sum_to(g * wa, shape_of(0)), sum_to(g * wb, shape_of(1))};
    }
    case OpId::Where: {  // saved[0] = condition; inputs: a, b
      Tensor c = saved(0);
      return {sum_to(where(c, g, 0.0), shape_of(0)), sum_to(where(c, 0.0, g), shape_of(1))};
    }

    // ---- reductions: ints = [keepdim, (correction for var), dims...] ----
    case OpId::Sum: {
      const Shape& in = shape_of(0);
      return {expand_reduced(g, in, reduced_dims(n, 1, in.size()), n.ints[0])};
    }
    case OpId::Mean: {
      const Shape& in = shape_of(0);
      const Shape dims = reduced_dims(n, 1, in.size());
      return {expand_reduced(g, in, dims, n.ints[0]) / static_cast<double>(count_of(in, dims))};
    }
    case OpId::Var: {  // saved x
      const Shape& in = shape_of(0);
      const Shape dims = reduced_dims(n, 2, in.size());
      Tensor x = saved(0);
      const double dof = static_cast<double>(count_of(in, dims) - n.ints[1]);
      Tensor centered = x - x.mean(dims, true);
      return {expand_reduced(g, in, dims, n.ints[0]) * centered * (2.0 / dof)};
    }
    case OpId::Norm: {  // saved x, y; reals = [p]. d|x|_p/dx = sign(x) |x|^(p-1) / |x|_p^(p-1); 0 where |x|_p = 0
      const Shape& in = shape_of(0);
      const Shape dims = reduced_dims(n, 1, in.size());
      const double p = n.reals[0];
      Tensor x = saved(0), y = saved(1), gy = g;
      const DType dt = x.dtype();
      if (is_half(dt)) x = x.to(kFloat32), y = y.to(kFloat32), gy = gy.to(kFloat32);  // as the forward
      Tensor ye = expand_reduced(y, in, dims, n.ints[0]), ge = expand_reduced(gy, in, dims, n.ints[0]);
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
    case OpId::Amin: {  // saved x, y: the gradient is shared evenly by all extreme elements
      const Shape& in = shape_of(0);
      const Shape dims = reduced_dims(n, 1, in.size());
      Tensor x = saved(0), y = saved(1);
      Tensor mask = as(x == expand_reduced(y, in, dims, n.ints[0]), g.dtype());
      Tensor count = mask.sum(dims, true);
      return {expand_reduced(g, in, dims, n.ints[0]) * mask / expand_reduced(count, in, dims, true)};
    }
    case OpId::MaxDim:
    case OpId::MinDim: {  // saved indices; ints = [dim, keepdim]: the gradient goes to the chosen element
      const Shape& in = shape_of(0);
      const int64_t dim = n.ints[0];
      Tensor idx = saved(0), gg = g;
      if (!n.ints[1]) {
        idx = idx.unsqueeze(dim);
        gg = gg.unsqueeze(dim);
      }
      Shape pos_shape(in.size(), 1);
      pos_shape[dim] = in[dim];
      Tensor positions = arange(in[dim]).reshape(pos_shape);
      return {where(positions == idx, gg.expand(in), 0.0)};
    }
    case OpId::Softmax: {  // saved y; ints = [dim]
      Tensor y = saved(0);
      return {y * (g - (g * y).sum({n.ints[0]}, true))};
    }
    case OpId::LogSoftmax: {  // saved y; ints = [dim]
      Tensor y = saved(0);
      return {g - y.exp() * g.sum({n.ints[0]}, true)};
    }

    // ---- linear algebra, joining, copies ----
    case OpId::Matmul: {  // saved a, b (both at least 2-D)
      Tensor a = saved(0), b = saved(1);
      Tensor ga, gb;
      if (n.next[0].valid()) ga = sum_to(matmul(g, b.transpose(-1, -2)), shape_of(0));
      if (n.next[1].valid()) gb = sum_to(matmul(a.transpose(-1, -2), g), shape_of(1));
      return {ga, gb};
    }
    case OpId::Cat: {  // ints = [dim]; each input gets its slice
      const int64_t dim = n.ints[0];
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
    case OpId::ToCopy: return {g.to(n.inputs[0].device, n.inputs[0].dtype)};
    case OpId::Clone: return {g};

    // ---- views ----
    case OpId::View: return {g.reshape(shape_of(0))};
    case OpId::Permute: {  // ints = the permutation
      Shape inverse(n.ints.size());
      for (size_t i = 0; i < n.ints.size(); ++i) inverse[n.ints[i]] = static_cast<int64_t>(i);
      return {g.permute(inverse)};
    }
    case OpId::Expand: return {sum_to(g, shape_of(0))};
    case OpId::Slice: {  // ints = [dim, start, step]
      Tensor r = zeros(shape_of(0), {g.dtype(), g.device()});
      const int64_t dim = n.ints[0], start = n.ints[1], step = n.ints[2];
      r.slice(dim, start, start + g.shape()[dim] * step, step).copy_(g);
      return {r};
    }
    case OpId::Select: {  // ints = [dim, index]
      Tensor r = zeros(shape_of(0), {g.dtype(), g.device()});
      r.select(n.ints[0], n.ints[1]).copy_(g);
      return {r};
    }

    // ---- layers (tensor/nn_ops.h) ----
    case OpId::Conv2d: {  // saved x, weight; ints = stride(2), padding(2), dilation(2), groups, has_bias
      Tensor x = saved(0), w = saved(1);
      const Pair stride{n.ints[0], n.ints[1]}, padding{n.ints[2], n.ints[3]}, dilation{n.ints[4], n.ints[5]};
      const int64_t groups = n.ints[6];
      Tensor gx, gw, gb;
      if (n.next[0].valid()) gx = conv2d_backward_input(g, w, x.shape(), stride, padding, dilation, groups);
      if (n.next[1].valid() || (n.ints[7] && n.next[2].valid()))
        std::tie(gw, gb) = conv2d_backward_weight(g, x, w.shape(), stride, padding, dilation, groups, n.ints[7]);
      return {gx, gw, gb};
    }
    case OpId::MaxPool2d: {  // saved indices; ints = kernel(2), stride(2), padding(2), dilation(2), ceil_mode
      const auto& i = n.ints;
      return {max_pool2d_backward(g, saved(0), shape_of(0), {i[0], i[1]}, {i[2], i[3]}, {i[4], i[5]}, {i[6], i[7]},
                                  i[8] != 0)};
    }
    case OpId::AvgPool2d: {  // ints = kernel(2), stride(2), padding(2), ceil_mode, count_include_pad, divisor
      const auto& i = n.ints;
      return {avg_pool2d_backward(g, shape_of(0), {i[0], i[1]}, {i[2], i[3]}, {i[4], i[5]}, i[6], i[7], i[8])};
    }
    case OpId::CrossEntropy:  // saved logits, targets, lse; ints = [ignore_index]
      return {cross_entropy_backward(g, saved(0), saved(1), saved(2), n.ints[0])};
    case OpId::NllLoss:  // saved targets; ints = [ignore_index]
      return {nll_loss_backward(g, saved(0), shape_of(0), n.ints[0])};
    case OpId::AccumulateGrad: break;  // handled by the engine
  }
  throw Error(msg("internal error: no backward rule ran for ", n.name()));
}

}  // namespace ember::autograd
