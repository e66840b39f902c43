// ONNX ops that Ember has no tensor op for, computed by a plain loop on the host:
// CumSum (a running sum along one axis), Mod (the remainder, with either sign
// convention), Floor, Ceil and Round, Tan and the inverse and hyperbolic trig
// functions, ReduceProd and TopK. A model on another
// device has its input copied to the host and the result copied back. They are
// exact: CumSum sums floating values in float64 and integers in int64 (wrapping
// like the ONNX reference when cast back to int32), Mod uses std::fmod (exact in
// any precision) and integer remainders, ReduceProd multiplies in float64 or
// int64. In the models that use them (position ids from an attention mask, index
// and shape arithmetic, a top-k over logits) the tensors are small.
#include "onnx/op_families.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

// Running sums of `src` along the middle dim of [outer, n, inner], into `out`.
template <class T>
void running_sums(const T* src, T* out, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  std::vector<T> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), T(0));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = reverse ? n - 1 - step : step;
      const int64_t base = (o * n + k) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const T v = src[base + j];
        if (exclusive) {
          out[base + j] = acc[size_t(j)];
          acc[size_t(j)] += v;
        } else {
          acc[size_t(j)] += v;
          out[base + j] = acc[size_t(j)];
        }
      }
    }
  }
}

OpFn build_cumsum(const NodeContext& ctx) {
  const bool exclusive = ctx.get_int("exclusive", 0) != 0, reverse = ctx.get_int("reverse", 0) != 0;
  const std::string site = ctx.where();
  return [exclusive, reverse, site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (in[1].numel() != 1) throw ShapeError(site + ": axis must hold one value, got " + std::to_string(in[1].numel()));
    if (is_floating(in[1].dtype())) throw DTypeError(site + ": axis must be an integer");
    const int64_t axis = normalize_axis(site, in[1].item<int64_t>(), std::max<int64_t>(x.dim(), 1));
    if (x.dtype() == kBool) throw DTypeError(site + ": the input must be numbers, got bool");
    // Nothing to sum; and the loops below must not walk a [2^62, 0] tensor's rows.
    if (x.numel() == 0) return std::vector<Tensor>{empty(x.shape(), TensorOptions(x.dtype(), x.device()))};
    const bool floating = is_floating(x.dtype());
    const Tensor src = x.to(kCPU, floating ? kFloat64 : kInt64).contiguous();
    Tensor out = empty(src.shape(), src.dtype());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
    for (int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
    const int64_t n = x.dim() == 0 ? 1 : x.size(axis);
    if (floating)
      running_sums(src.data_ptr<double>(), out.data_ptr<double>(), outer, n, inner, exclusive, reverse);
    else  // unsigned sums wrap like the ONNX reference's, without signed overflow
      running_sums(reinterpret_cast<const uint64_t*>(src.data_ptr<int64_t>()),
                   reinterpret_cast<uint64_t*>(out.data_ptr<int64_t>()), outer, n, inner, exclusive, reverse);
    return std::vector<Tensor>{out.to(x.dtype()).to(x.device())};
  };
}

// The remainder of a / b: with fmod, the sign of a (C's fmod and %); without, the
// sign of b (Python's %), for integers only, as ONNX requires.
double remainder_of(double a, double b, bool c_style) {
  const double r = std::fmod(a, b);
  if (c_style || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;
}

int64_t remainder_of(int64_t a, int64_t b, bool c_style) {
  if (b == -1) return 0;  // INT64_MIN % -1 would overflow
  const int64_t r = a % b;
  if (c_style || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;
}

OpFn build_mod(const NodeContext& ctx) {
  const bool c_style = ctx.get_int("fmod", 0) != 0;
  const std::string site = ctx.where();
  return [c_style, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const DType type = promote_types(in[0].dtype(), in[1].dtype());
    const bool floating = is_floating(type);
    if (type == kBool) throw DTypeError(site + ": the inputs must be numbers, got bool");
    if (floating && !c_style) throw ValueError(site + ": fmod must be 1 for floating-point inputs");
    const Shape shape = broadcast_shapes(in[0].shape(), in[1].shape());
    const DType work = floating ? kFloat64 : kInt64;
    const Tensor a = in[0].to(kCPU, work).expand(shape).contiguous();
    const Tensor b = in[1].to(kCPU, work).expand(shape).contiguous();
    Tensor out = empty(shape, work);
    const int64_t count = out.numel();
    if (floating) {
      const double *pa = a.data_ptr<double>(), *pb = b.data_ptr<double>();
      double* po = out.data_ptr<double>();
      for (int64_t i = 0; i < count; ++i) po[i] = remainder_of(pa[i], pb[i], true);
    } else {
      const int64_t *pa = a.data_ptr<int64_t>(), *pb = b.data_ptr<int64_t>();
      int64_t* po = out.data_ptr<int64_t>();
      for (int64_t i = 0; i < count; ++i) {
        if (pb[i] == 0) throw ValueError(site + ": integer remainder by zero");
        po[i] = remainder_of(pa[i], pb[i], c_style);
      }
    }
    return std::vector<Tensor>{out.to(type).to(in[0].device())};
  };
}

// A function of each floating value computed in float64 and rounded back once.
// Floor, Ceil and Round (half to even, as ONNX says): the results are whole
// numbers, so this is exact. Tan, the inverse and the hyperbolic trig functions:
// the C library's float64 functions, so float32 results are correctly rounded
// almost always (within 1 ulp), which Ember's own tensor ops have no kernels for.
template <double (*F)(double)>
OpFn build_float64_map(const NodeContext& ctx) {
  const std::string site = ctx.where();
  return [site](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (!is_floating(x.dtype()))
      throw DTypeError(site + ": the input must be floating point, got " + std::string(dtype_name(x.dtype())));
    Tensor v = x.to(kCPU, kFloat64).contiguous().clone();
    double* p = v.data_ptr<double>();
    for (int64_t i = 0; i < v.numel(); ++i) p[i] = F(p[i]);
    return std::vector<Tensor>{v.to(x.dtype()).to(x.device())};
  };
}

double round_half_even(double v) { return std::nearbyint(v); }  // the default rounding mode: to nearest, ties to even
double floor_of(double v) { return std::floor(v); }
double ceil_of(double v) { return std::ceil(v); }
double tan_of(double v) { return std::tan(v); }
double asin_of(double v) { return std::asin(v); }
double acos_of(double v) { return std::acos(v); }
double atan_of(double v) { return std::atan(v); }
double sinh_of(double v) { return std::sinh(v); }
double cosh_of(double v) { return std::cosh(v); }
double asinh_of(double v) { return std::asinh(v); }
double acosh_of(double v) { return std::acosh(v); }
double atanh_of(double v) { return std::atanh(v); }

// x with the dims in `dims` moved last and flattened: [kept..., reduced].
Tensor reduced_last(const Tensor& x, const Shape& dims, Shape& kept_shape, Shape& kept_dims) {
  std::vector<int64_t> order;
  int64_t reduced = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      order.push_back(d);
      kept_shape.push_back(x.size(d));
      kept_dims.push_back(d);
    }
  for (int64_t d : dims) {
    order.push_back(d);
    reduced *= x.size(d);
  }
  int64_t kept = 1;
  for (int64_t s : kept_shape) kept *= s;
  return x.permute(order).contiguous().reshape({kept, reduced});
}

template <class T>
void row_products(const T* src, T* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T acc = 1;
    for (int64_t c = 0; c < cols; ++c) acc *= src[r * cols + c];
    out[r] = acc;
  }
}

// ReduceProd: axes an attribute before opset 18, an optional input from 18.
OpFn build_reduce_prod(const NodeContext& ctx) {
  const bool keep = ctx.get_int("keepdims", 1) != 0, noop = ctx.get_int("noop_with_empty_axes", 0) != 0;
  const bool axes_input = ctx.opset >= 18;
  const Shape attr_axes = ctx.get_ints("axes");
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape axes = axes_input ? (in.size() > 1 && in[1].defined() ? int_values(in[1]) : Shape{}) : attr_axes;
    if (axes.empty() && noop) return std::vector<Tensor>{x};
    Shape dims;
    for (int64_t a : axes) {
      const int64_t d = normalize_axis(site, a, std::max<int64_t>(x.dim(), 1));
      if (std::find(dims.begin(), dims.end(), d) != dims.end()) throw ShapeError(site + ": axes repeat a dim");
      dims.push_back(d);
    }
    if (dims.empty())
      for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
    if (x.dtype() == kBool) throw DTypeError(site + ": the input must be numbers, got bool");
    const bool floating = is_floating(x.dtype());
    Shape kept_shape, kept_dims;
    const Tensor flat = reduced_last(x.to(kCPU, floating ? kFloat64 : kInt64), dims, kept_shape, kept_dims);
    Tensor out = empty({flat.size(0)}, flat.dtype());
    if (floating) row_products(flat.data_ptr<double>(), out.data_ptr<double>(), flat.size(0), flat.size(1));
    else  // wrapping, as the type's own multiplication would
      row_products(reinterpret_cast<const uint64_t*>(flat.data_ptr<int64_t>()),
                   reinterpret_cast<uint64_t*>(out.data_ptr<int64_t>()), flat.size(0), flat.size(1));
    Shape shape = kept_shape;
    if (keep) {
      shape.assign(static_cast<size_t>(x.dim()), 1);
      for (size_t i = 0; i < kept_dims.size(); ++i) shape[size_t(kept_dims[i])] = kept_shape[i];
    }
    return std::vector<Tensor>{out.reshape(shape).to(x.dtype()).to(x.device())};
  };
}

// The order TopK gives the n values of one row: indices of the largest (or
// smallest) first, equal values by index, NaN as the largest value.
template <class T>
void top_order(const T* row, int64_t n, bool largest, std::vector<int64_t>& order) {
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const auto nan = [](T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
    else return false;
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const T u = row[i], v = row[j];
    if (nan(u) || nan(v)) return largest ? nan(u) && !nan(v) : !nan(u) && nan(v);
    return largest ? u > v : u < v;
  });
}

// TopK: the k largest (or smallest) values along an axis and their indices, in
// order. The indices are found on the host; the values are then picked from the
// input itself (gather_elements), so they keep its exact type.
OpFn build_top_k(const NodeContext& ctx) {
  if (ctx.opset < 10 && !ctx.has("k")) ctx.invalid("attribute 'k' is missing");
  const bool k_input = ctx.opset >= 10;
  const int64_t attr_k = k_input ? 0 : ctx.get_int("k", 0);
  const int64_t axis = ctx.get_int("axis", -1);
  const bool largest = ctx.get_int("largest", 1) != 0;
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t k = attr_k;
    if (k_input) {
      if (in.size() < 2 || in[1].numel() != 1) throw ShapeError(site + ": K must hold one value");
      k = int_values(in[1].reshape({1}))[0];
    }
    if (x.dim() == 0) throw ShapeError(site + ": the input has no dims");
    const int64_t a = normalize_axis(site, axis, x.dim());
    const int64_t n = x.size(a);
    if (k < 0 || k > n)
      throw ShapeError(site + ": k is " + std::to_string(k) + " but the axis has " + std::to_string(n) + " values");
    if (x.dtype() == kBool) throw DTypeError(site + ": the input must be numbers, got bool");
    if (x.numel() == 0) {  // no values to order (and no rows to walk, however many)
      Shape shape = x.shape();
      shape[size_t(a)] = k;
      return std::vector<Tensor>{empty(shape, TensorOptions(x.dtype(), x.device())),
                                 empty(shape, TensorOptions(kInt64, x.device()))};
    }
    const bool floating = is_floating(x.dtype());
    Shape kept_shape, kept_dims;
    const Tensor rows = reduced_last(x.to(kCPU, floating ? kFloat64 : kInt64), {a}, kept_shape, kept_dims);  // [m, n]
    const int64_t m = rows.size(0);
    Tensor indices = empty({m, k}, kInt64);
    int64_t* out = indices.data_ptr<int64_t>();
    std::vector<int64_t> order;
    for (int64_t r = 0; r < m; ++r) {
      if (floating) top_order(rows.data_ptr<double>() + r * n, n, largest, order);
      else top_order(rows.data_ptr<int64_t>() + r * n, n, largest, order);
      std::copy(order.begin(), order.begin() + k, out + r * k);
    }
    // Back to x's layout: [kept..., k], then the axis moved back in place.
    Shape shape = kept_shape;
    shape.push_back(k);
    std::vector<int64_t> back(static_cast<size_t>(x.dim()));
    for (int64_t d = 0, j = 0; d < x.dim(); ++d) back[size_t(d)] = d == a ? int64_t(shape.size()) - 1 : j++;
    Tensor idx = indices.reshape(shape).permute(back).contiguous();
    Tensor values = gather_elements(site, x, idx.to(x.device()), a);
    return std::vector<Tensor>{values, idx.to(x.device())};
  };
}

}  // namespace

void add_host_loop_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"CumSum", build_cumsum, 11}, {"Mod", build_mod, 10},
                           {"Floor", build_float64_map<floor_of>}, {"Ceil", build_float64_map<ceil_of>},
                           {"Round", build_float64_map<round_half_even>, 11}, {"ReduceProd", build_reduce_prod},
                           {"TopK", build_top_k}, {"Tan", build_float64_map<tan_of>, 7},
                           {"Asin", build_float64_map<asin_of>, 7}, {"Acos", build_float64_map<acos_of>, 7},
                           {"Atan", build_float64_map<atan_of>, 7}, {"Sinh", build_float64_map<sinh_of>, 9},
                           {"Cosh", build_float64_map<cosh_of>, 9}, {"Asinh", build_float64_map<asinh_of>, 9},
                           {"Acosh", build_float64_map<acosh_of>, 9}, {"Atanh", build_float64_map<atanh_of>, 9}});
}

}  // namespace ember::onnx
