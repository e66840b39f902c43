// ONNX ops that pick values by position: GatherElements (numpy's
// take_along_axis), OneHot, Trilu and EyeLike. Positions are compared or worked
// out as int64 and the values moved by Ember's `take` and `where`, so each op
// runs on any device the model is on.
#include "onnx/op_families.h"

#include <algorithm>
#include <optional>
#include <string>

#include "kernels/base/error.h"
#include "onnx/tensor_proto.h"
#include "tensor/ops.h"

namespace ember::onnx {

// The flat position in a contiguous tensor of shape `shape` of element p with
// p[axis] replaced by indices[p], for every position p of `indices` (GatherElements
// and ScatterElements), as a host int64 tensor of indices' shape. Indices count
// from the end when negative; one outside [-size, size) raises IndexError.
Tensor element_positions(const std::string& site, const Shape& shape, const Tensor& indices, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) throw ShapeError(site + ": data has no dims");
  if (indices.dim() != rank)
    throw ShapeError(site + ": indices have " + std::to_string(indices.dim()) + " dims but data has " +
                     std::to_string(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.size(d) > shape[size_t(d)])
      throw ShapeError(site + ": indices are " + std::to_string(indices.size(d)) + " long in dim " +
                       std::to_string(d) + ", where data is " + std::to_string(shape[size_t(d)]));
  const Tensor idx = indices.to(kCPU, kInt64).contiguous();
  const int64_t* iv = idx.data_ptr<int64_t>();
  Shape strides(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[size_t(d)] = strides[size_t(d + 1)] * shape[size_t(d + 1)];
  const int64_t s = shape[size_t(axis)];
  Tensor flat = empty(indices.shape(), kInt64);
  int64_t* out = flat.data_ptr<int64_t>();
  Shape pos(static_cast<size_t>(rank), 0);  // the position of element n in indices
  for (int64_t n = 0; n < idx.numel(); ++n) {
    int64_t i = iv[n];
    if (i < -s || i >= s)
      throw IndexError(site + ": index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                       " of size " + std::to_string(s));
    if (i < 0) i += s;
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (d == axis ? i : pos[size_t(d)]) * strides[size_t(d)];
    out[n] = offset;
    for (int64_t d = rank - 1; d >= 0 && ++pos[size_t(d)] == indices.size(d); --d) pos[size_t(d)] = 0;
  }
  return flat;
}

// GatherElements: the flat positions are worked out on the host (the index is
// read there anyway, to check its range), then one `take` from data flattened
// moves the values on data's device.
Tensor gather_elements(const std::string& site, const Tensor& data, const Tensor& indices, int64_t axis) {
  const Tensor flat = element_positions(site, data.shape(), indices, axis);
  return take(data.contiguous().reshape({data.numel()}), 0, flat.to(data.device()));
}

namespace {

std::vector<Tensor> one(Tensor t) { return std::vector<Tensor>{std::move(t)}; }

// 0, 1, ..., n - 1 as int64 on `device`, shaped to lie along dim `dim` of a
// rank-`rank` tensor (size 1 in every other dim), ready to broadcast.
Tensor positions_along(int64_t n, int64_t dim, int64_t rank, const Device& device) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(dim)] = n;
  return arange(0, n, 1, TensorOptions(kInt64, device)).reshape(shape);
}

OpFn build_gather_elements(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", 0);
  std::string site = ctx.where();
  return [axis, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);  // constant indices live on the host
    return one(gather_elements(site, in[0], in[1], normalize_axis(site, axis, std::max<int64_t>(in[0].dim(), 1))));
  };
}

// OneHot(indices, depth, values = [off, on]): a new dim of size depth at `axis`,
// `on` where its position equals the index and `off` elsewhere. Negative indices
// count from depth; an index outside [-depth, depth) gives a row of `off`.
OpFn build_one_hot(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", -1);
  const bool wrap = ctx.opset >= 11;  // before 11, a negative index is outside too
  std::string site = ctx.where();
  return [axis, wrap, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    if (in[1].numel() != 1)
      throw ShapeError(site + ": depth must hold one value, got " + std::to_string(in[1].numel()));
    const double depth_value = in[1].item<double>();
    if (!(depth_value >= 1) || depth_value > 9.2e18)
      throw ValueError(site + ": depth must be between 1 and 2^63, got " + in[1].item().str());
    const int64_t depth = static_cast<int64_t>(depth_value);
    const Tensor& values = in[2];
    if (values.numel() != 2)
      throw ShapeError(site + ": values must hold 2 elements (off, on), got " + std::to_string(values.numel()));
    const int64_t a = normalize_axis(site, axis, in[0].dim() + 1);
    // Non-integer indices are truncated, as ONNX says; a negative one is compared
    // with position - depth rather than moved by + depth, which could overflow.
    const Tensor idx = in[0].to(kInt64).unsqueeze(a);
    const Tensor pos = positions_along(depth, a, idx.dim(), idx.device());
    Tensor hot = eq(idx, pos);
    if (wrap) hot = where(lt(idx, 0), eq(idx, sub(pos, depth)), hot);
    Tensor pair = values.reshape({2});
    return one(where(hot, pair.select(0, 1), pair.select(0, 0)));
  };
}

// Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// dims, zeros elsewhere; k is an optional int64 input.
OpFn build_trilu(const NodeContext& ctx) {
  bool upper = ctx.get_int("upper", 1) != 0;
  std::string site = ctx.where();
  return [upper, site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() < 2) throw ShapeError(site + ": the input has " + std::to_string(x.dim()) + " dims, fewer than 2");
    int64_t k = 0;
    if (in.size() > 1 && in[1].defined()) {
      if (in[1].numel() != 1) throw ShapeError(site + ": k must hold one value, got " + std::to_string(in[1].numel()));
      k = in[1].item<int64_t>();
    }
    const Device& device = x.device();
    Tensor diagonal = sub(positions_along(x.size(-1), 1, 2, device), positions_along(x.size(-2), 0, 2, device));
    Tensor keep = upper ? ge(diagonal, k) : le(diagonal, k);
    return one(where(keep, x, zeros({}, TensorOptions(x.dtype(), device))));
  };
}

// EyeLike: ones where j - i == k in a 2-D tensor of the input's shape, in the
// `dtype` attribute's type or else the input's.
OpFn build_eye_like(const NodeContext& ctx) {
  int64_t k = ctx.get_int("k", 0);
  std::optional<DType> dtype;
  if (ctx.has("dtype")) dtype = dtype_from_onnx(static_cast<int32_t>(ctx.get_int("dtype", 0)), ctx.where());
  std::string site = ctx.where();
  return [k, dtype, site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() != 2) throw ShapeError(site + ": the input must have 2 dims, got " + std::to_string(x.dim()));
    const Device& device = x.device();
    Tensor diagonal = sub(positions_along(x.size(1), 1, 2, device), positions_along(x.size(0), 0, 2, device));
    return one(eq(diagonal, k).to(dtype.value_or(x.dtype())));
  };
}

}  // namespace

void add_index_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"GatherElements", build_gather_elements, 11}, {"OneHot", build_one_hot, 9}, {"Trilu", build_trilu, 14},
      {"EyeLike", build_eye_like, 9},
  });
}

}  // namespace ember::onnx
