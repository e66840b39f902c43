// ONNX's shape and data-movement ops: Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze, Concat, Split, Slice, Expand, Tile, Gather, Shape, Size, Constant,
// ConstantOfShape, Range, DepthToSpace, SpaceToDepth. Most are views of the input (no copy). Values that
// describe shapes (Reshape's shape, Slice's starts, ...) are inputs from opset 5,
// 10 or 13 on and attributes before; either way they are read at run time, so a
// shape computed by the graph itself works as well as a constant.
#include "onnx/op_families.h"

#include <algorithm>
#include <cmath>

#include "kernels/base/error.h"
#include "onnx/tensor_proto.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

std::vector<Tensor> one(Tensor t) { return std::vector<Tensor>{std::move(t)}; }

OpFn build_reshape(const NodeContext& ctx) {
  bool allowzero = ctx.get_int("allowzero", 0) != 0;
  std::vector<int64_t> attr_shape = ctx.opset < 5 ? ctx.get_ints("shape") : std::vector<int64_t>{};
  bool from_attr = ctx.opset < 5;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    std::vector<int64_t> spec = from_attr ? attr_shape : int_values(in[1]);
    Shape out(spec.size());
    int64_t infer = -1, known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
      int64_t s = spec[i];
      if (s == 0 && !allowzero) {
        if (static_cast<int64_t>(i) >= x.dim())
          throw ShapeError(where + ": shape " + shape_str(spec) + " copies dim " + std::to_string(i) +
                           " of an input with " + std::to_string(x.dim()) + " dims");
        s = x.size(static_cast<int64_t>(i));
      }
      if (s == -1) {
        if (infer >= 0) throw ShapeError(where + ": shape " + shape_str(spec) + " has more than one -1");
        infer = static_cast<int64_t>(i);
        continue;
      }
      if (s < 0) throw ShapeError(where + ": shape " + shape_str(spec) + " has a negative size");
      out[i] = s;
      known = size_mul(known, s, where.c_str());
    }
    if (infer >= 0) {
      if (known == 0 || x.numel() % known != 0)
        throw ShapeError(where + ": cannot reshape " + shape_str(x.shape()) + " into " + shape_str(spec));
      out[static_cast<size_t>(infer)] = x.numel() / known;
    }
    return one(x.reshape(out));
  };
}

OpFn build_flatten(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", 1);
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t a = axis < 0 ? axis + x.dim() : axis;
    if (a < 0 || a > x.dim())
      throw ShapeError(where + ": axis " + std::to_string(axis) + " is out of range for a rank-" +
                       std::to_string(x.dim()) + " input");
    int64_t outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.size(d);
    int64_t inner = 1;
    for (int64_t d = a; d < x.dim(); ++d) inner *= x.size(d);
    return one(x.reshape({outer, inner}));
  };
}

OpFn build_transpose(const NodeContext& ctx) {
  std::vector<int64_t> perm = ctx.get_ints("perm");
  return [perm](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape p = perm;
    if (p.empty())
      for (int64_t d = x.dim() - 1; d >= 0; --d) p.push_back(d);
    return one(x.permute(p));
  };
}

// Where Squeeze and Unsqueeze find their axes: an attribute before opset 13, the
// optional input 1 from then on. Read once at load; the input, if any, per run.
struct AxesSource {
  bool from_input = false;
  std::optional<std::vector<int64_t>> attr;
  explicit AxesSource(const NodeContext& ctx) : from_input(ctx.opset >= 13) {
    if (!from_input && ctx.has("axes")) attr = ctx.get_ints("axes");
  }
  std::optional<std::vector<int64_t>> get(const std::vector<Tensor>& in) const {
    if (!from_input) return attr;
    if (in.size() > 1 && in[1].defined()) return int_values(in[1]);
    return std::nullopt;
  }
};

// The axes normalized against `rank` and sorted (descending for Squeeze, which
// removes from the back); a repeated dim is a ShapeError.
std::vector<int64_t> sorted_axes(const std::string& where, const std::vector<int64_t>& axes, int64_t rank,
                                 bool descending) {
  std::vector<int64_t> a;
  for (int64_t ax : axes) a.push_back(normalize_axis(where, ax, rank));
  if (descending) std::sort(a.rbegin(), a.rend());
  else std::sort(a.begin(), a.end());
  if (std::adjacent_find(a.begin(), a.end()) != a.end()) throw ShapeError(where + ": axes repeat a dim");
  return a;
}

OpFn build_squeeze(const NodeContext& ctx) {
  AxesSource source(ctx);
  std::string where = ctx.where();
  return [source, where](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    auto axes = source.get(in);
    if (!axes) return one(x.squeeze());
    Tensor y = x;
    for (int64_t ax : sorted_axes(where, *axes, x.dim(), true)) {
      if (y.size(ax) != 1)
        throw ShapeError(where + ": cannot squeeze axis " + std::to_string(ax) + " of size " +
                         std::to_string(y.size(ax)));
      y = y.squeeze(ax);
    }
    return one(y);
  };
}

OpFn build_unsqueeze(const NodeContext& ctx) {
  AxesSource source(ctx);
  std::string where = ctx.where();
  return [source, where](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    auto axes = source.get(in);
    if (!axes) throw ShapeError(where + ": axes are missing");
    int64_t rank = x.dim() + static_cast<int64_t>(axes->size());
    Tensor y = x;
    for (int64_t ax : sorted_axes(where, *axes, rank, false)) y = y.unsqueeze(ax);
    return one(y);
  };
}

OpFn build_concat(const NodeContext& ctx) {
  if (!ctx.has("axis") && ctx.opset >= 4) ctx.invalid("attribute 'axis' is missing");
  int64_t axis = ctx.get_int("axis", 1);
  std::string where = ctx.where();
  return [axis, where](const std::vector<Tensor>& in) {
    int64_t a = normalize_axis(where, axis, in[0].dim());
    // Zero-length inputs take part in no copy but still pass shape checks.
    std::vector<Tensor> moved;
    return one(cat(on_one_device(in, moved), a));
  };
}

OpFn build_split(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", 0);
  std::vector<int64_t> attr_split = ctx.opset < 13 ? ctx.get_ints("split") : std::vector<int64_t>{};
  bool from_input = ctx.opset >= 13 || (ctx.opset < 13 && ctx.has_input(1) && !ctx.has("split"));
  size_t n = ctx.num_outputs;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t a = normalize_axis(where, axis, x.dim());
    std::vector<int64_t> sizes = attr_split;
    if (from_input && in.size() > 1 && in[1].defined()) sizes = int_values(in[1]);
    if (sizes.empty()) {
      if (x.size(a) % static_cast<int64_t>(n) != 0)
        throw ShapeError(where + ": cannot split a dim of size " + std::to_string(x.size(a)) + " into " +
                         std::to_string(n) + " equal parts");
      sizes.assign(n, x.size(a) / static_cast<int64_t>(n));
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) throw ShapeError(where + ": split sizes " + shape_str(sizes) + " have a negative size");
      total = size_add(total, s, where.c_str());
    }
    if (sizes.size() != n || total != x.size(a))
      throw ShapeError(where + ": split sizes " + shape_str(sizes) + " do not divide a dim of size " +
                       std::to_string(x.size(a)) + " into " + std::to_string(n) + " outputs");
    std::vector<Tensor> out;
    int64_t start = 0;
    for (int64_t s : sizes) {
      out.push_back(x.narrow(a, start, s));
      start += s;
    }
    return out;
  };
}

OpFn build_slice(const NodeContext& ctx) {
  bool attrs = ctx.opset < 10;
  std::vector<int64_t> a_starts = ctx.get_ints("starts"), a_ends = ctx.get_ints("ends"), a_axes = ctx.get_ints("axes");
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    std::vector<int64_t> starts = attrs ? a_starts : int_values(in[1]);
    std::vector<int64_t> ends = attrs ? a_ends : int_values(in[2]);
    std::vector<int64_t> axes = attrs ? a_axes : (in.size() > 3 && in[3].defined() ? int_values(in[3]) : Shape{});
    std::vector<int64_t> steps = !attrs && in.size() > 4 && in[4].defined() ? int_values(in[4]) : Shape{};
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      throw ShapeError(where + ": starts, ends, axes and steps must have the same length");
    Tensor y = x;
    std::vector<bool> seen(static_cast<size_t>(x.dim()), false);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t ax = normalize_axis(where, axes[i], x.dim());
      if (seen[static_cast<size_t>(ax)]) throw ShapeError(where + ": axes repeat a dim");
      seen[static_cast<size_t>(ax)] = true;
      int64_t dim = x.size(ax), step = steps[i];
      if (step == 0) throw ShapeError(where + ": a step of 0");
      if (step < 0) {
        // Backwards: start in [0, dim - 1], end in [-1, dim - 1] (the end excluded),
        // taken by index since a view cannot walk a dim backwards.
        if (dim == 0) continue;  // nothing to take
        const int64_t s = std::clamp<int64_t>(starts[i] < 0 ? starts[i] + dim : starts[i], 0, dim - 1);
        const int64_t e = std::clamp<int64_t>(ends[i] < 0 ? ends[i] + dim : ends[i], -1, dim - 1);
        const uint64_t stride = uint64_t(0) - static_cast<uint64_t>(step);  // |step|, also for INT64_MIN
        const uint64_t count = s > e ? static_cast<uint64_t>(s - e - 1) / stride + 1 : 0;
        std::vector<int64_t> idx(static_cast<size_t>(count));
        for (size_t k = 0; k < idx.size(); ++k) idx[k] = s - static_cast<int64_t>(k * stride);
        y = index_select(y, ax, tensor(idx, {static_cast<int64_t>(idx.size())}).to(y.device()));
        continue;
      }
      int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e < s) e = s;
      y = y.slice(ax, s, e, step);
    }
    return one(y);
  };
}

OpFn build_expand(const NodeContext&) {
  return [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape target = broadcast_shapes(x.shape(), int_values(in[1]));
    return one(x.expand(target));
  };
}

OpFn build_tile(const NodeContext& ctx) {
  std::string where = ctx.where();
  return [where](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    std::vector<int64_t> reps = int_values(in[1]);
    if (static_cast<int64_t>(reps.size()) != x.dim())
      throw ShapeError(where + ": repeats has " + std::to_string(reps.size()) + " values for a rank-" +
                       std::to_string(x.dim()) + " input");
    // [d0, d1] -> [1, d0, 1, d1] -> expand to [r0, d0, r1, d1] -> [r0*d0, r1*d1].
    Shape split, big, out;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (reps[d] < 0) throw ShapeError(where + ": repeats " + shape_str(reps) + " has a negative value");
      split.push_back(1);
      split.push_back(x.size(d));
      big.push_back(reps[d]);
      big.push_back(x.size(d));
      out.push_back(size_mul(reps[d], x.size(d), where.c_str()));
    }
    return one(x.reshape(split).expand(big).contiguous().reshape(out));
  };
}

OpFn build_shape(const NodeContext& ctx) {
  int64_t start = ctx.get_int("start", 0), end_attr = ctx.get_int("end", INT64_MAX);
  bool has_end = ctx.has("end");
  return [=](const std::vector<Tensor>& in) {
    const Shape& s = in[0].shape();
    int64_t r = static_cast<int64_t>(s.size());
    int64_t b = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    int64_t e = has_end ? std::clamp<int64_t>(end_attr < 0 ? end_attr + r : end_attr, 0, r) : r;
    std::vector<int64_t> v(s.begin() + b, s.begin() + std::max(b, e));
    return one(tensor(v, {static_cast<int64_t>(v.size())}));
  };
}

OpFn build_size(const NodeContext&) {
  return [](const std::vector<Tensor>& in) { return one(scalar_tensor(in[0].numel()).to(kInt64)); };
}

OpFn build_constant(const NodeContext& ctx) {
  Tensor value;
  if (ctx.has("value")) value = ctx.get_tensor("value");
  else if (ctx.has("value_float")) value = full({}, ctx.get_float("value_float", 0), kFloat32);
  else if (ctx.has("value_int")) value = full({}, ctx.get_int("value_int", 0), kInt64);
  else if (ctx.has("value_floats")) {
    std::vector<float> v;
    for (double f : ctx.get_floats("value_floats")) v.push_back(static_cast<float>(f));
    value = tensor(v, {static_cast<int64_t>(v.size())});
  } else if (ctx.has("value_ints")) {
    std::vector<int64_t> v = ctx.get_ints("value_ints");
    value = tensor(v, {static_cast<int64_t>(v.size())});
  } else if (ctx.has("sparse_value")) {
    ctx.unsupported("attribute sparse_value");
  } else if (ctx.has("value_string") || ctx.has("value_strings")) {
    ctx.unsupported("a string constant");
  } else {
    ctx.invalid("has no value attribute");
  }
  return [value](const std::vector<Tensor>&) { return one(value); };
}

OpFn build_constant_of_shape(const NodeContext& ctx) {
  Tensor value = ctx.has("value") ? ctx.get_tensor("value") : zeros({1}, kFloat32);
  if (value.numel() != 1) ctx.invalid("attribute 'value' must hold one element");
  std::string where = ctx.where();
  // Placed as the plan places constants: floating point on the model's device,
  // integers on the host.
  const Device device = is_floating(value.dtype()) ? ctx.device : kCPU;
  return [value, where, device](const std::vector<Tensor>& in) {
    Shape s = int_values(in[0]);
    for (int64_t d : s)
      if (d < 0) throw ShapeError(where + ": shape " + shape_str(s) + " has a negative size");
    Tensor out = empty(s, TensorOptions(value.dtype(), device));
    out.copy_(value.reshape({}).expand(s));
    return one(out);
  };
}

// Gather: slices along `axis` picked by an index tensor of any shape (negative
// indices count from the end), Ember's take().
OpFn build_gather(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", 0);
  std::string where = ctx.where();
  return [axis, where](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t a = normalize_axis(where, axis, x.dim());
    Tensor index = in[1].device() == x.device() ? in[1] : in[1].to(x.device());
    return one(take(x, a, index));
  };
}

// DepthToSpace moves blocks of channels into blocksize x blocksize patches of
// the image, SpaceToDepth the reverse: a reshape, a permute and a reshape. DCR
// (the default) takes a patch's channels depth-major, CRD channel-major.
OpFn build_depth_to_space(const NodeContext& ctx) {
  const bool to_space = ctx.op_type == "DepthToSpace";
  const int64_t b = ctx.get_int("blocksize", 0);
  if (b < 1 || b > (int64_t{1} << 31)) ctx.invalid("blocksize must be between 1 and 2^31, got " + std::to_string(b));
  const std::string mode = to_space ? ctx.get_string("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD") ctx.invalid("mode must be DCR or CRD, got '" + mode + "'");
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() != 4) throw ShapeError(where + ": the input must have 4 dims, got " + std::to_string(x.dim()));
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    if (to_space) {
      if (c % (b * b) != 0)
        throw ShapeError(where + ": " + std::to_string(c) + " channels are not a multiple of blocksize^2 (" +
                         std::to_string(b * b) + ")");
      const int64_t d = c / (b * b);
      Tensor y = mode == "DCR" ? x.reshape({n, b, b, d, h, w}).permute({0, 3, 4, 1, 5, 2})
                               : x.reshape({n, d, b, b, h, w}).permute({0, 1, 4, 2, 5, 3});
      return one(y.reshape({n, d, size_mul(h, b, where.c_str()), size_mul(w, b, where.c_str())}));
    }
    if (h % b != 0 || w % b != 0)
      throw ShapeError(where + ": the image (" + std::to_string(h) + " x " + std::to_string(w) +
                       ") is not a multiple of blocksize " + std::to_string(b));
    Tensor y = x.reshape({n, c, h / b, b, w / b, b}).permute({0, 3, 5, 1, 2, 4});
    return one(y.reshape({n, size_mul(c, b * b, where.c_str()), h / b, w / b}));
  };
}

OpFn build_range(const NodeContext& ctx) {
  std::string where = ctx.where();
  return [where](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    DType t = in[0].dtype();
    Scalar start = in[0].item(), limit = in[1].item(), delta = in[2].item();
    if (!is_floating(t)) {
      // Integers exactly: the count in 128 bits (one from doubles can exceed the true
      // count near the type's ends), then start + i * delta in wrapping unsigned
      // arithmetic, which yields the true value: every value lies in [start, limit).
      if (!start.is_integral() || !limit.is_integral() || !delta.is_integral())
        throw DTypeError(where + ": start, limit and delta must all be integers");
      const int64_t s = start.to<int64_t>(), l = limit.to<int64_t>(), st = delta.to<int64_t>();
      if (st == 0) throw ValueError(where + ": delta is 0");
      const __int128 span = static_cast<__int128>(l) - s;
      const __int128 count = span != 0 && (span > 0) == (st > 0) ? (span + st - (st > 0 ? 1 : -1)) / st : 0;
      if (count >= static_cast<__int128>(1e15)) throw ValueError(where + ": the range has too many elements");
      Tensor out = empty({static_cast<int64_t>(count)}, kInt64);
      auto* p = out.data_ptr<int64_t>();
      for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
        p[i] = static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(st));
      return one(out.to(t).to(in[0].device()));
    }
    double d = delta.to<double>();
    if (d == 0) throw ValueError(where + ": delta is 0");
    double count = std::ceil((limit.to<double>() - start.to<double>()) / d);
    if (!(count < 1e15)) throw ValueError(where + ": the range has too many elements");
    int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    // Value i is start + i * delta, computed in the output type as ONNX does.
    Tensor idx = arange(0, n, 1, TensorOptions(kInt64, in[0].device()));
    Tensor out = add(mul(idx.to(t), in[2].to(t)), in[0].to(t)).to(t);
    return one(out);
  };
}

}  // namespace

void add_shape_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"Reshape", build_reshape}, {"Flatten", build_flatten}, {"Transpose", build_transpose},
      {"Squeeze", build_squeeze}, {"Unsqueeze", build_unsqueeze}, {"Concat", build_concat},
      {"Split", build_split}, {"Slice", build_slice}, {"Expand", build_expand}, {"Tile", build_tile},
      {"Shape", build_shape}, {"Size", build_size}, {"Constant", build_constant},
      {"ConstantOfShape", build_constant_of_shape}, {"Range", build_range}, {"Gather", build_gather},
      {"DepthToSpace", build_depth_to_space}, {"SpaceToDepth", build_depth_to_space},
  });
}

}  // namespace ember::onnx
