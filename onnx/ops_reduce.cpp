// ONNX's reductions (ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp), ArgMax/ArgMin and
// Hardmax (an ArgMax made one-hot).
// Axes are an attribute, except for ReduceSum from opset 13, where they are an
// optional input; no axes means every axis (or none, with noop_with_empty_axes).
#include "onnx/op_families.h"

#include <algorithm>
#include <limits>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Kind { Mean, Sum, Max, Min, L1, L2, SumSquare, LogSum, LogSumExp };

Tensor reduce(Kind k, const Tensor& x, const Shape& dims, bool keep) {
  switch (k) {
    case Kind::Mean: return mean(x, dims, keep);
    case Kind::Sum: return sum(x, dims, keep);
    case Kind::Max: return amax(x, dims, keep);
    case Kind::Min: return amin(x, dims, keep);
    case Kind::L1: return sum(abs(x), dims, keep);
    case Kind::L2: return sqrt(sum(mul(x, x), dims, keep));
    case Kind::SumSquare: return sum(mul(x, x), dims, keep);
    case Kind::LogSum: return log(sum(x, dims, keep));
    case Kind::LogSumExp: {
      // A row of -inf (or with +inf) has an infinite max; shifting by 0 there
      // gives log(sum(exp(x))) = -inf (or inf) instead of inf - inf = NaN.
      Tensor m = amax(x, dims, true);
      m = where(eq(abs(m), std::numeric_limits<double>::infinity()), zeros_like(m), m);
      Tensor s = log(sum(exp(sub(x, m)), dims, true));
      Tensor y = add(s, m);
      if (!keep) {
        Shape d = dims;
        if (d.empty())
          for (int64_t i = 0; i < x.dim(); ++i) d.push_back(i);
        std::sort(d.rbegin(), d.rend());
        for (int64_t i : d) y = y.squeeze(i);
      }
      return y;
    }
  }
  return x;
}

template <Kind K>
OpFn build_reduce(const NodeContext& ctx) {
  bool keep = ctx.get_int("keepdims", 1) != 0;
  bool noop = ctx.get_int("noop_with_empty_axes", 0) != 0;
  bool axes_input = K == Kind::Sum ? ctx.opset >= 13 : ctx.opset >= 18;
  Shape attr_axes = ctx.get_ints("axes");
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape axes = axes_input ? (in.size() > 1 && in[1].defined() ? int_values(in[1]) : Shape{}) : attr_axes;
    if (axes.empty() && noop) return std::vector<Tensor>{x};
    Shape dims;
    for (int64_t a : axes) dims.push_back(normalize_axis(where, a, std::max<int64_t>(x.dim(), 1)));
    if (x.dim() == 0) return std::vector<Tensor>{reduce(K, x, {}, false)};
    if (dims.empty())
      for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
    return std::vector<Tensor>{reduce(K, x, dims, keep)};
  };
}

// ArgMax/ArgMin pick the first extreme along the axis; with select_last_index
// they pick the last, found as the first of the axis reversed.
OpFn build_arg(const NodeContext& ctx) {
  bool is_max = ctx.op_type == "ArgMax";
  int64_t axis = ctx.get_int("axis", 0);
  bool keep = ctx.get_int("keepdims", 1) != 0;
  bool last = ctx.get_int("select_last_index", 0) != 0;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t a = normalize_axis(where, axis, x.dim());
    if (!last) return std::vector<Tensor>{is_max ? argmax(x, a, keep) : argmin(x, a, keep)};
    const int64_t n = x.size(a);
    Tensor reversed = take(x, a, arange(n - 1, -1, -1, TensorOptions(kInt64, x.device())));
    Tensor first = is_max ? argmax(reversed, a, keep) : argmin(reversed, a, keep);
    return std::vector<Tensor>{sub(n - 1, first)};
  };
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before opset 13
// the input is seen as 2-D, flattened at the axis, as Softmax does.
OpFn build_hardmax(const NodeContext& ctx) {
  bool legacy = ctx.opset < 13;
  int64_t axis = ctx.get_int("axis", legacy ? 1 : -1);
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() == 0) throw ShapeError(where + ": the input has no dims");
    int64_t a = normalize_axis(where, axis, x.dim());
    if (x.numel() == 0) return std::vector<Tensor>{zeros_like(x)};
    Tensor v = x;
    if (legacy) {
      v = flatten_at(x, a);
      a = 1;
    }
    Shape along(static_cast<size_t>(v.dim()), 1);
    along[static_cast<size_t>(a)] = v.size(a);
    Tensor positions = arange(0, v.size(a), 1, TensorOptions(kInt64, v.device())).reshape(along);
    return std::vector<Tensor>{eq(argmax(v, a, true), positions).to(x.dtype()).reshape(x.shape())};
  };
}

}  // namespace

void add_reduce_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"ReduceMean", build_reduce<Kind::Mean>}, {"ReduceSum", build_reduce<Kind::Sum>},
      {"ReduceMax", build_reduce<Kind::Max>}, {"ReduceMin", build_reduce<Kind::Min>},
      {"ReduceL1", build_reduce<Kind::L1>}, {"ReduceL2", build_reduce<Kind::L2>},
      {"ReduceSumSquare", build_reduce<Kind::SumSquare>}, {"ReduceLogSum", build_reduce<Kind::LogSum>},
      {"ReduceLogSumExp", build_reduce<Kind::LogSumExp>}, {"ArgMax", build_arg}, {"ArgMin", build_arg},
      {"Hardmax", build_hardmax},
  });
}

}  // namespace ember::onnx
