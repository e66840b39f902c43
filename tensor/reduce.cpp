// Front-ends of the reductions: sum, mean, var, norm, amax/amin, max/min (with indices),
// argmax/argmin. Each builds a ReduceGeometry: kept dims map input to output
// offsets, reduced dims are walked per output. For order-insensitive ops the
// reduced dims are sorted by stride and merged, so most reductions of permuted
// views still read memory contiguously.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/reduce.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

struct Dim {
  int64_t size, in_stride, out_stride;
};

// Merges adjacent dims (outer first) whose strides allow it.
void coalesce(std::vector<Dim>& dims, bool with_out) {
  std::vector<Dim> out;
  for (const Dim& d : dims) {
    if (!out.empty()) {
      Dim& prev = out.back();
      const bool in_ok = prev.in_stride == d.in_stride * d.size;
      const bool out_ok = !with_out || prev.out_stride == d.out_stride * d.size;
      if (in_ok && out_ok) {
        prev.size *= d.size;
        prev.in_stride = d.in_stride;
        prev.out_stride = d.out_stride;
        continue;
      }
    }
    out.push_back(d);
  }
  dims = out;
}

std::vector<bool> reduced_mask(const char* op, const Tensor& a, const Shape& dims) {
  std::vector<bool> mask(a.dim(), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, a.dim());
    if (a.dim() == 0) continue;
    if (mask[w]) throw ValueError(msg(op, "(): dim ", w, " appears multiple times in the list of dims"));
    mask[w] = true;
  }
  return mask;
}

// The reduced dims in ascending order (what the backward rules re-expand over).
std::vector<int64_t> reduced_dims(const std::vector<bool>& mask) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) dims.push_back(static_cast<int64_t>(d));
  return dims;
}

Shape out_shape(const Tensor& a, const std::vector<bool>& mask, bool keepdim) {
  Shape s;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!mask[d]) s.push_back(a.shape()[d]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

// Reduces `a` over `mask` into `out` (and `indices`), both allocated with the
// keepdim shape. `ordered` keeps the reduced dims in their logical order, which
// index-producing ops need.
void run_reduce(ReduceOp op, const Tensor& a, const std::vector<bool>& mask, Tensor* out, Tensor* indices,
                bool ordered, int64_t correction) {
  const Tensor& shaped = out ? *out : *indices;
  const Shape& ost = shaped.stride();  // out and indices are both contiguous with the keepdim shape
  std::vector<Dim> kept, red;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.shape()[d] == 1) continue;
    if (mask[d]) red.push_back({a.shape()[d], a.stride()[d], 0});
    else kept.push_back({a.shape()[d], a.stride()[d], ost[d]});
  }
  if (!ordered)
    std::stable_sort(red.begin(), red.end(), [](const Dim& x, const Dim& y) { return x.in_stride > y.in_stride; });
  coalesce(red, false);
  coalesce(kept, true);
  ReduceGeometry g;
  g.out_ndim = static_cast<int>(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    g.out_sizes[i] = kept[i].size;
    g.out_strides_in[i] = kept[i].in_stride;
    g.out_strides_out[i] = kept[i].out_stride;
    g.out_numel *= kept[i].size;
  }
  g.red_ndim = static_cast<int>(red.size());
  for (size_t i = 0; i < red.size(); ++i) {
    g.red_sizes[i] = red[i].size;
    g.red_strides[i] = red[i].in_stride;
    g.red_numel *= red[i].size;
  }
  if (a.numel() == 0) g.red_numel = 0;
  if (g.out_numel == 0 || shaped.numel() == 0) return;
  const void* in = a.numel() ? a.data_ptr() : nullptr;
  void* o = out ? out->data_ptr() : nullptr;
  int64_t* idx = indices ? indices->data_ptr<int64_t>() : nullptr;
  if (a.device().is_cuda()) EMBER_CUDA(cuda::reduce(op, a.dtype(), g, in, o, idx, correction, stream_of(a)));
  else cpu::reduce(op, a.dtype(), g, in, o, idx, correction);
}

void check_nonempty(const char* op, const Tensor& a, const std::vector<bool>& mask) {
  for (int64_t d = 0; d < a.dim(); ++d)
    if (mask[d] && a.shape()[d] == 0)
      throw IndexError(msg(op, "(): Expected reduction dim ", d, " to have non-zero size."));
}

Tensor finish(Tensor t, const Tensor& a, const std::vector<bool>& mask, bool keepdim) {
  return keepdim ? t : t.view(out_shape(a, mask, false));
}

Tensor reduce_values(const char* name, ReduceOp op, const Tensor& a, const Shape& dims, bool keepdim,
                     DType out_dtype, int64_t correction = 0) {
  const auto mask = reduced_mask(name, a, dims);
  Tensor out = empty(out_shape(a, mask, true), {out_dtype, a.device()});
  if (const OpBackend backend = backend_of(name, a); backend != Backend::None) run_reduce(op, a, mask, &out, nullptr, false, correction);
  out = finish(out, a, mask, keepdim);
  if (needs_grad({&a}) && is_floating(out_dtype)) {
    static constexpr OpId ids[] = {OpId::Sum, OpId::Mean, OpId::Var, OpId::Amax, OpId::Amin};
    const OpId id = ids[static_cast<int>(op)];
    auto node = record(id, {&a}, {&out});
    node->attrs = ReduceAttrs{reduced_dims(mask), keepdim, correction};
    if (op == ReduceOp::var || op == ReduceOp::amax || op == ReduceOp::amin) node->save("x", a);
    if (op == ReduceOp::amax || op == ReduceOp::amin) node->save("y", out);
  }
  return out;
}

void require_floating(const char* op, const Tensor& a) {
  if (!is_floating(a.dtype()))
    throw DTypeError(msg(op, "(): could not infer output dtype. Input dtype must be either a floating point or "
                             "complex dtype. Got: ",
                         a.dtype()));
}

std::tuple<Tensor, Tensor> extreme_with_index(const char* name, ReduceOp op, const Tensor& a, int64_t dim,
                                              bool keepdim) {
  const auto mask = reduced_mask(name, a, {dim});
  check_nonempty(name, a, mask);
  const Shape s = out_shape(a, mask, true);
  Tensor values = empty(s, {a.dtype(), a.device()});
  Tensor indices = empty(s, {kInt64, a.device()});
  if (const OpBackend backend = backend_of(name, a); backend != Backend::None) run_reduce(op, a, mask, &values, &indices, true, 0);
  values = finish(values, a, mask, keepdim);
  indices = finish(indices, a, mask, keepdim);
  if (needs_grad({&a})) {  // only the values are differentiable
    auto node = record(op == ReduceOp::amax ? OpId::MaxDim : OpId::MinDim, {&a}, {&values});
    node->attrs = DimAttrs{a.dim() == 0 ? 0 : wrap_dim(dim, a.dim()), keepdim};
    node->save("indices", indices);
  }
  return {values, indices};
}

Tensor arg_extreme(const char* name, ReduceOp op, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) {
    if (a.numel() == 0)
      throw IndexError(msg(name, "(): Expected reduction dim to be specified for input.numel() == 0."));
    // Over the flattened tensor: positions are row-major, so walk a contiguous copy.
    Tensor flat = a.contiguous().reshape({-1});
    Tensor idx = arg_extreme(name, op, flat, 0, false);
    return keepdim ? idx.reshape(Shape(a.dim(), 1)) : idx;
  }
  const auto mask = reduced_mask(name, a, {*dim});
  check_nonempty(name, a, mask);
  Tensor indices = empty(out_shape(a, mask, true), {kInt64, a.device()});
  if (const OpBackend backend = backend_of(name, a); backend != Backend::None) run_reduce(op, a, mask, nullptr, &indices, true, 0);
  return finish(indices, a, mask, keepdim);
}

Tensor full_extreme(const char* name, ReduceOp op, const Tensor& a) {
  if (a.numel() == 0)
    throw IndexError(msg(name, "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument."));
  return reduce_values(name, op, a, {}, false, a.dtype());
}

}  // namespace

Tensor sum(const Tensor& a, const Shape& dims, bool keepdim) {
  if (auto r = autocast::run(autocast::Policy::fp32, [&](const Tensor& x) { return sum(x, dims, keepdim); }, a))
    return *r;
  return reduce_values("sum", ReduceOp::sum, a, dims, keepdim, is_floating(a.dtype()) ? a.dtype() : kInt64);
}

Tensor mean(const Tensor& a, const Shape& dims, bool keepdim) {
  if (auto r = autocast::run(autocast::Policy::fp32, [&](const Tensor& x) { return mean(x, dims, keepdim); }, a))
    return *r;
  require_floating("mean", a);
  return reduce_values("mean", ReduceOp::mean, a, dims, keepdim, a.dtype());
}

Tensor var(const Tensor& a, const Shape& dims, int64_t correction, bool keepdim) {
  if (!is_floating(a.dtype()))
    throw DTypeError(msg("var(): std and var only support floating point and complex dtypes, got ", a.dtype()));
  return reduce_values("var", ReduceOp::var, a, dims, keepdim, a.dtype(), correction);
}

// The p-norm over `dims`, as torch.linalg.vector_norm: p = 2 the Euclidean norm,
// 1 the sum of magnitudes, inf / -inf the largest / smallest magnitude, 0 the count
// of non-zeros, any other p (sum |x|^p)^(1/p). Built from the reductions above, so it
// runs on every device; half inputs are computed in float32 and rounded once, and
// under autocast it runs in float32 (it is on PyTorch's float32 list). Its own
// backward node gives the subgradient 0 where the norm is 0, as PyTorch does,
// instead of the 0/0 a composition of sqrt and sum would leave there.
Tensor norm(const Tensor& a, double p, const Shape& dims, bool keepdim) {
  if (auto r = autocast::run(autocast::Policy::fp32, [&](const Tensor& x) { return norm(x, p, dims, keepdim); }, a))
    return *r;
  if (!is_floating(a.dtype())) throw DTypeError(msg("norm(): expected a floating point input, got ", a.dtype()));
  if (std::isnan(p)) throw ValueError("norm(): the order p must be a number, got nan");
  const auto mask = reduced_mask("norm", a, dims);
  if (p < 0 || std::isinf(p)) {  // min, max and negative powers have no value for an empty set
    for (int64_t d = 0; d < a.dim(); ++d) {
      if (!mask[d] || a.shape()[d] != 0) continue;
      if (dims.empty())
        throw IndexError(msg("norm(): cannot compute the ", p, " norm on an empty tensor because the operation does "
                             "not have an identity"));
      throw IndexError(msg("norm(): cannot compute the ", p, " norm on the dimension ", d, " because this dimension "
                           "is empty and the operation does not have an identity"));
    }
  }
  Tensor y;
  {
    NoGradGuard no_grad;
    const Tensor x = is_half(a.dtype()) ? a.to(kFloat32) : a;
    if (p == 2) y = (x * x).sum(dims, keepdim).sqrt();
    else if (p == 1) y = x.abs().sum(dims, keepdim);
    else if (p == 0) y = (x != 0).to(x.dtype()).sum(dims, keepdim);
    else if (std::isinf(p)) y = p > 0 ? x.abs().amax(dims, keepdim) : x.abs().amin(dims, keepdim);
    else y = pow(pow(x.abs(), p).sum(dims, keepdim), 1.0 / p);
    y = y.to(a.dtype());
  }
  if (needs_grad({&a})) {
    auto node = record(OpId::Norm, {&a}, {&y});
    node->attrs = ReduceAttrs{reduced_dims(mask), keepdim, 0, p};
    node->save("x", a);
    node->save("y", y);
  }
  return y;
}

Tensor amax(const Tensor& a, const Shape& dims, bool keepdim) {
  const auto mask = reduced_mask("amax", a, dims);
  check_nonempty("amax", a, mask);
  return reduce_values("amax", ReduceOp::amax, a, dims, keepdim, a.dtype());
}

Tensor amin(const Tensor& a, const Shape& dims, bool keepdim) {
  const auto mask = reduced_mask("amin", a, dims);
  check_nonempty("amin", a, mask);
  return reduce_values("amin", ReduceOp::amin, a, dims, keepdim, a.dtype());
}

Tensor max(const Tensor& a) { return full_extreme("max", ReduceOp::amax, a); }
Tensor min(const Tensor& a) { return full_extreme("min", ReduceOp::amin, a); }
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme_with_index("max", ReduceOp::amax, a, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme_with_index("min", ReduceOp::amin, a, dim, keepdim);
}
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmax", ReduceOp::argmax, a, dim, keepdim);
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmin", ReduceOp::argmin, a, dim, keepdim);
}

Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return ember::sum(*this, dims, keepdim); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return ember::mean(*this, dims, keepdim); }
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return ember::var(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const { return ember::norm(*this, p, dims, keepdim); }
Tensor Tensor::amax(const Shape& dims, bool keepdim) const { return ember::amax(*this, dims, keepdim); }
Tensor Tensor::amin(const Shape& dims, bool keepdim) const { return ember::amin(*this, dims, keepdim); }
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::min() const { return ember::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return ember::max(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return ember::min(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }

}  // namespace ember
