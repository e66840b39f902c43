// ONNX ops addressed by index tuples or that write by index: GatherND,
// ScatterElements (and its old name Scatter) and ScatterND (with reduction none, add, mul, max or min).
// Index tuples are read and checked on the host. GatherND then picks its slices
// with one `take` on the model's device; the two scatters write on a host copy
// of the data (in float64 or int64, which hold every value of Ember's types
// exactly) and copy the result back, so updates to the same place happen in index
// order, as the ONNX reference does them.
#include "onnx/op_families.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Reduce { None, Add, Mul, Max, Min };

Reduce reduction_attr(const NodeContext& ctx) {
  const std::string r = ctx.get_string("reduction", "none");
  if (r == "none") return Reduce::None;
  if (r == "add") return Reduce::Add;
  if (r == "mul") return Reduce::Mul;
  if (r == "max") return Reduce::Max;
  if (r == "min") return Reduce::Min;
  ctx.invalid("reduction must be none, add, mul, max or min, got '" + r + "'");
}

// One update under the reduction. Integers add and multiply as uint64, which
// wraps as the type's own arithmetic would, without signed overflow.
template <class T>
T combine(Reduce r, T old, T update) {
  switch (r) {
    case Reduce::None: return update;
    case Reduce::Add:
      if constexpr (std::is_integral_v<T>) return T(uint64_t(old) + uint64_t(update));
      else return old + update;
    case Reduce::Mul:
      if constexpr (std::is_integral_v<T>) return T(uint64_t(old) * uint64_t(update));
      else return old * update;
    case Reduce::Max: return std::max(old, update);
    case Reduce::Min: return std::min(old, update);
  }
  return update;
}

// The flat element offsets, in data of `shape` seen as [batch, L, slice], of the
// slices ND index tuples name: `indices` is [batch dims..., k dims..., m], each
// tuple m indices into shape[b : b + m]. Returns a host int64 tensor [batch * K]
// of slice numbers (0 to batch * L - 1) and sets `slice` to the slice's size.
Tensor slice_numbers(const std::string& site, const Shape& shape, const Tensor& indices, int64_t b, int64_t& slice) {
  const int64_t r = static_cast<int64_t>(shape.size()), q = indices.dim();
  if (q < 1) throw ShapeError(site + ": indices have no dims");
  const int64_t m = indices.size(q - 1);
  if (b < 0 || b >= std::min(r, q)) throw ShapeError(site + ": batch_dims " + std::to_string(b) + " is out of range");
  if (m < 1 || m > r - b)
    throw ShapeError(site + ": index tuples of " + std::to_string(m) + " values do not fit data of rank " +
                     std::to_string(r) + (b ? " after " + std::to_string(b) + " batch dims" : std::string()));
  int64_t batch = 1, within = 1;
  for (int64_t d = 0; d < b; ++d) {
    if (indices.size(d) != shape[size_t(d)])
      throw ShapeError(site + ": batch dim " + std::to_string(d) + " is " + std::to_string(indices.size(d)) +
                       " in indices but " + std::to_string(shape[size_t(d)]) + " in data");
    batch *= shape[size_t(d)];
  }
  for (int64_t d = b; d < b + m; ++d) within *= shape[size_t(d)];
  slice = 1;
  for (int64_t d = b + m; d < r; ++d) slice *= shape[size_t(d)];
  const Tensor idx = indices.to(kCPU, kInt64).contiguous();
  const int64_t tuples = idx.numel() / m, per_batch = batch ? tuples / batch : 0;
  Tensor out = empty({tuples}, kInt64);
  const int64_t* iv = idx.data_ptr<int64_t>();
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t n = 0;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t size = shape[size_t(b + j)];
      int64_t i = iv[t * m + j];
      if (i < -size || i >= size)
        throw IndexError(site + ": index " + std::to_string(i) + " is out of range for dim " + std::to_string(b + j) +
                         " of size " + std::to_string(size));
      n = n * size + (i < 0 ? i + size : i);
    }
    o[t] = (per_batch ? t / per_batch : 0) * within + n;
  }
  return out;
}

OpFn build_gather_nd(const NodeContext& ctx) {
  const int64_t b = ctx.get_int("batch_dims", 0);
  const std::string site = ctx.where();
  return [b, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const Tensor& data = in[0];
    int64_t slice = 0;
    const Tensor n = slice_numbers(site, data.shape(), in[1], b, slice);
    const int64_t m = in[1].size(in[1].dim() - 1);
    Shape out = in[1].shape();
    out.pop_back();
    for (int64_t d = b + m; d < data.dim(); ++d) out.push_back(data.size(d));
    if (slice == 0 || n.numel() == 0) return std::vector<Tensor>{empty(out, TensorOptions(data.dtype(), data.device()))};
    const int64_t slices = data.numel() / slice;
    Tensor picked = take(data.contiguous().reshape({slices, slice}), 0, n.to(data.device()));
    return std::vector<Tensor>{picked.reshape(out)};
  };
}

// Applies `updates` (host, work type) at element offsets `at` of the host copy `out`.
template <class T>
void scatter(T* out, const T* updates, const int64_t* at, int64_t count, int64_t slice, Reduce r) {
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < slice; ++j) out[at[i] * slice + j] = combine(r, out[at[i] * slice + j], updates[i * slice + j]);
}

// The data with updates written at `at` (slice numbers of `slice` elements).
Tensor scatter_into(const Tensor& data, const Tensor& updates, const Tensor& at, int64_t slice, Reduce r) {
  const bool floating = is_floating(data.dtype());
  const DType work = floating ? kFloat64 : kInt64;
  Tensor out = data.to(kCPU, work).contiguous().clone();
  const Tensor u = updates.to(kCPU, work).contiguous();
  if (floating) scatter(out.data_ptr<double>(), u.data_ptr<double>(), at.data_ptr<int64_t>(), at.numel(), slice, r);
  else scatter(out.data_ptr<int64_t>(), u.data_ptr<int64_t>(), at.data_ptr<int64_t>(), at.numel(), slice, r);
  return out.to(data.dtype()).to(data.device());
}

OpFn build_scatter_elements(const NodeContext& ctx) {
  const Reduce r = reduction_attr(ctx);
  const int64_t axis = ctx.get_int("axis", 0);
  const std::string site = ctx.where();
  return [r, axis, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const Tensor &data = in[0], &indices = in[1], &updates = in[2];
    if (updates.shape() != indices.shape())
      throw ShapeError(site + ": updates of shape " + shape_str(updates.shape()) + " do not match indices of shape " +
                       shape_str(indices.shape()));
    const int64_t a = normalize_axis(site, axis, std::max<int64_t>(data.dim(), 1));
    const Tensor at = element_positions(site, data.shape(), indices, a);
    return std::vector<Tensor>{scatter_into(data, updates, at, 1, r)};
  };
}

OpFn build_scatter_nd(const NodeContext& ctx) {
  const Reduce r = reduction_attr(ctx);
  const std::string site = ctx.where();
  return [r, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const Tensor &data = in[0], &indices = in[1], &updates = in[2];
    int64_t slice = 0;
    const Tensor at = slice_numbers(site, data.shape(), indices, 0, slice);
    Shape want = indices.shape();
    want.pop_back();
    for (int64_t d = indices.size(indices.dim() - 1); d < data.dim(); ++d) want.push_back(data.size(d));
    if (updates.shape() != want)
      throw ShapeError(site + ": updates must have shape " + shape_str(want) + ", got " + shape_str(updates.shape()));
    return std::vector<Tensor>{scatter_into(data, updates, at, slice, r)};
  };
}

}  // namespace

void add_scatter_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"GatherND", build_gather_nd, 11},
                           {"ScatterElements", build_scatter_elements, 11},
                           {"Scatter", build_scatter_elements, 9},  // ScatterElements' old name
                           {"ScatterND", build_scatter_nd, 11}});
}

}  // namespace ember::onnx
