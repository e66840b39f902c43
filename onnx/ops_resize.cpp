// ONNX Resize (opset 10 on) and the older Upsample: nearest, linear and cubic
// interpolation along any axes, with every coordinate transformation mode of
// opset 13 (half_pixel, pytorch_half_pixel, align_corners, asymmetric,
// tf_half_pixel_for_nn, tf_crop_and_resize).
//
// Interpolation is separable, so each resized axis is done on its own: the host
// works out, per output position, which input positions it reads (the taps) and
// with what weights, in float64 as the ONNX reference does; the device then
// takes those positions along the axis (`take`) and sums them with their weights.
// Nearest is one take, linear two, cubic four. Axes whose plan is the identity
// (the N and C of an image upsampled in H and W) are skipped. This is built from
// tensor ops and runs on any device; a dedicated kernel would read the input once
// per output instead of once per tap and axis.
#include "onnx/op_families.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn, TfCropAndResize };
enum class Rounding { PreferFloor, PreferCeil, Floor, Ceil };

struct ResizeAttrs {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  Rounding rounding = Rounding::PreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// The input coordinate output position i of an axis samples (ONNX's
// coordinate_transformation_mode). `out_len` is in_len * scale unrounded, as the
// spec defines align_corners and tf_crop_and_resize on it; [roi_start, roi_end]
// is tf_crop_and_resize's box, in units of the axis (0 to 1).
double source_coordinate(Coord c, int64_t i, double scale, int64_t in_len, double out_len, double roi_start,
                         double roi_end) {
  const double x = static_cast<double>(i), len = static_cast<double>(in_len);
  switch (c) {
    case Coord::HalfPixel: return (x + 0.5) / scale - 0.5;
    case Coord::PytorchHalfPixel: return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::AlignCorners: return out_len == 1 ? 0.0 : x * (len - 1) / (out_len - 1);
    case Coord::Asymmetric: return x / scale;
    case Coord::TfHalfPixelForNn: return (x + 0.5) / scale;
    case Coord::TfCropAndResize:
      return out_len > 1 ? roi_start * (len - 1) + x * (roi_end - roi_start) * (len - 1) / (out_len - 1)
                         : 0.5 * (roi_start + roi_end) * (len - 1);
  }
  return x;
}

// Keys' cubic convolution weight at distance d, with its parameter a.
double cubic_weight(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// One axis's plan: output position i reads input positions index[t][i] with
// weights weight[t][i], t < taps; outside[i] marks positions outside
// tf_crop_and_resize's box, which get the extrapolation value. Host tensors, so
// that a hostile output length meets the CPU allocator and its limit.
struct AxisPlan {
  int taps = 1;
  Tensor index;    // int64 [taps, out_len]
  Tensor weight;   // float64 [taps, out_len]
  Tensor outside;  // bool [out_len]
  bool any_outside = false;
  bool identity = true;
};

AxisPlan plan_axis(const ResizeAttrs& a, int64_t in_len, int64_t out_len, double scale, double roi_start,
                   double roi_end) {
  AxisPlan p;
  p.taps = a.mode == Mode::Nearest ? 1 : a.mode == Mode::Linear ? 2 : 4;
  p.index = empty({p.taps, out_len}, kInt64);
  p.weight = empty({p.taps, out_len}, kFloat64);
  p.outside = zeros({out_len}, kBool);
  int64_t* index = p.index.data_ptr<int64_t>();
  double* weight = p.weight.data_ptr<double>();
  bool* outside = p.outside.data_ptr<bool>();
  const double out_len_exact = scale * static_cast<double>(in_len);
  const double last = static_cast<double>(in_len - 1);
  p.identity = out_len == in_len;
  for (int64_t i = 0; i < out_len; ++i) {
    const double x = source_coordinate(a.coord, i, scale, in_len, out_len_exact, roi_start, roi_end);
    int64_t idx[4];
    double w[4];
    if (a.coord == Coord::TfCropAndResize && !(x >= 0 && x <= last)) outside[i] = p.any_outside = true;
    if (a.mode == Mode::Nearest) {
      double r = a.rounding == Rounding::PreferFloor ? std::ceil(x - 0.5)
                 : a.rounding == Rounding::PreferCeil ? std::floor(x + 0.5)
                 : a.rounding == Rounding::Floor      ? std::floor(x)
                                                      : std::ceil(x);
      r = std::clamp(std::isnan(r) ? 0.0 : r, 0.0, last);  // clamped first, so the cast is defined
      idx[0] = static_cast<int64_t>(r);
      w[0] = 1;
    } else {
      // Beyond a few positions past either end every tap clamps to the same edge.
      const double xc = std::clamp(std::isnan(x) ? 0.0 : x, -4.0, last + 4);
      const double fx = std::floor(xc), t = xc - fx;
      const int64_t first = static_cast<int64_t>(fx) - (a.mode == Mode::Cubic ? 1 : 0);
      double sum = 0;
      for (int k = 0; k < p.taps; ++k) {
        const int64_t at = first + k;
        w[k] = a.mode == Mode::Linear ? (k == 0 ? 1 - t : t) : cubic_weight(t - static_cast<double>(k - 1), a.cubic_a);
        if (a.exclude_outside && (at < 0 || at >= in_len)) w[k] = 0;
        idx[k] = std::clamp<int64_t>(at, 0, in_len - 1);
        sum += w[k];
      }
      if (a.exclude_outside && sum != 0)
        for (int k = 0; k < p.taps; ++k) w[k] /= sum;
    }
    // The identity: every weighted tap reads position i and the weights sum to 1.
    double on_i = 0;
    for (int k = 0; k < p.taps; ++k) {
      index[k * out_len + i] = idx[k];
      weight[k * out_len + i] = w[k];
      if (w[k] != 0 && idx[k] != i) p.identity = false;
      if (idx[k] == i) on_i += w[k];
    }
    if (on_i != 1 || outside[i]) p.identity = false;
  }
  return p;
}

// A vector of n values along dim `dim` of a rank-`rank` tensor (size 1 elsewhere).
Shape along(int64_t n, int64_t dim, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[static_cast<size_t>(dim)] = n;
  return s;
}

// x resized along `dim` by the plan: one take per tap, weighted and summed.
Tensor resize_axis(const Tensor& x, int64_t dim, int64_t out_len, const AxisPlan& p) {
  Tensor y;
  for (int k = 0; k < p.taps; ++k) {
    Tensor w = p.weight.select(0, k);
    if (y.defined() && eq(w, 0).to(kInt64).sum().item<int64_t>() == out_len) continue;  // a tap nothing reads
    Tensor picked = take(x, dim, p.index.select(0, k).to(x.device()));
    if (p.taps == 1) return picked;
    Tensor term = mul(picked, w.to(x.device(), x.dtype()).reshape(along(out_len, dim, x.dim())));
    y = y.defined() ? add(y, term) : term;
  }
  return y;
}

// The Resize/Upsample run: `scales` or `sizes` (exactly one non-empty) and, for
// tf_crop_and_resize, `roi`, all read on the host when the node runs.
Tensor resize(const std::string& site, const ResizeAttrs& a, const Tensor& x, const Tensor& roi, const Tensor& scales,
              const Tensor& sizes) {
  const int64_t rank = x.dim();
  const bool by_scales = scales.defined() && scales.numel() > 0;
  const bool by_sizes = sizes.defined() && sizes.numel() > 0;
  if (by_scales == by_sizes) throw ShapeError(site + ": exactly one of scales and sizes must be given");
  std::vector<double> roi_values;
  if (a.coord == Coord::TfCropAndResize) {
    if (!roi.defined() || roi.numel() != 2 * rank)
      throw ShapeError(site + ": tf_crop_and_resize needs a roi of " + std::to_string(2 * rank) + " values, got " +
                       std::to_string(roi.defined() ? roi.numel() : 0));
    roi_values = roi.to(kCPU, kFloat64).reshape({2 * rank}).to_vector<double>();
  }
  if (by_sizes && sizes.dtype() != kInt64)
    throw DTypeError(site + ": sizes must be int64, got " + std::string(dtype_name(sizes.dtype())));
  std::vector<double> scale(static_cast<size_t>(rank));
  Shape out(static_cast<size_t>(rank));
  const std::vector<double> given =
      by_scales ? scales.to(kCPU, kFloat64).reshape({scales.numel()}).to_vector<double>()
                : sizes.to(kCPU, kFloat64).reshape({sizes.numel()}).to_vector<double>();
  if (static_cast<int64_t>(given.size()) != rank)
    throw ShapeError(site + ": " + (by_scales ? "scales" : "sizes") + " has " + std::to_string(given.size()) +
                     " values for a rank-" + std::to_string(rank) + " input");
  for (int64_t d = 0; d < rank; ++d) {
    const double in_len = static_cast<double>(x.size(d)), g = given[size_t(d)];
    const double box = roi_values.empty() ? 1.0 : roi_values[size_t(rank + d)] - roi_values[size_t(d)];
    double n;
    if (by_scales) {
      if (!(g > 0)) throw ValueError(site + ": scales must be positive, got " + Scalar(g).str());
      scale[size_t(d)] = g;
      n = std::floor(in_len * box * g);
    } else {
      if (!(g >= 0)) throw ValueError(site + ": sizes must not be negative, got " + Scalar(int64_t(g)).str());  // int64 values
      n = g;
      scale[size_t(d)] = in_len > 0 ? g / in_len : 1.0;
    }
    if (!(n >= 0 && n < 9.2e18))
      throw ShapeError(site + ": the output would be " + Scalar(n).str() + " long in dim " + std::to_string(d));
    out[size_t(d)] = static_cast<int64_t>(n);
  }
  if (std::find(out.begin(), out.end(), 0) != out.end() || x.numel() == 0) {  // nothing to plan (an empty output may still have one huge dim)
    for (int64_t d = 0; d < rank; ++d)
      if (out[size_t(d)] > 0 && x.size(d) == 0)
        throw ShapeError(site + ": dim " + std::to_string(d) + " of the input is empty, there is nothing to resize");
    return empty(out, TensorOptions(x.dtype(), x.device()));
  }
  const bool interpolate = a.mode != Mode::Nearest;
  if (interpolate && !is_floating(x.dtype()))
    throw NotImplementedError(site + ": " + (a.mode == Mode::Linear ? "linear" : "cubic") + " mode on " +
                              dtype_name(x.dtype()) + " input is not supported");
  // Weights apply in float32 (float64 for float64 input), so half types are widened.
  Tensor y = interpolate && x.dtype() != kFloat64 && x.dtype() != kFloat32 ? x.to(kFloat32) : x;
  std::vector<Tensor> outside_masks;
  for (int64_t d = 0; d < rank; ++d) {
    const double r0 = roi_values.empty() ? 0.0 : roi_values[size_t(d)];
    const double r1 = roi_values.empty() ? 1.0 : roi_values[size_t(rank + d)];
    AxisPlan p = plan_axis(a, x.size(d), out[size_t(d)], scale[size_t(d)], r0, r1);
    if (p.identity) continue;
    y = resize_axis(y, d, out[size_t(d)], p);
    if (p.any_outside) outside_masks.push_back(p.outside.to(y.device()).reshape(along(out[size_t(d)], d, rank)));
  }
  for (const Tensor& m : outside_masks) y = where(m, a.extrapolation, y);
  return y.to(x.dtype()).contiguous();
}

ResizeAttrs resize_attrs(const NodeContext& ctx) {
  ResizeAttrs a;
  const std::string mode = ctx.get_string("mode", "nearest");
  if (mode == "nearest") a.mode = Mode::Nearest;
  else if (mode == "linear" || mode == "bilinear") a.mode = Mode::Linear;  // Upsample-7 spells it bilinear
  else if (mode == "cubic" && ctx.op_type == "Resize" && ctx.opset >= 11) a.mode = Mode::Cubic;
  else if (mode == "cubic") ctx.invalid("mode 'cubic' is only in Resize from opset 11");
  else ctx.invalid("mode must be nearest, linear or cubic, got '" + mode + "'");
  if (ctx.op_type == "Upsample" || ctx.opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    a.coord = Coord::Asymmetric;
    a.rounding = Rounding::Floor;
    return a;
  }
  const std::string coord = ctx.get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") a.coord = Coord::HalfPixel;
  else if (coord == "pytorch_half_pixel") a.coord = Coord::PytorchHalfPixel;
  else if (coord == "align_corners") a.coord = Coord::AlignCorners;
  else if (coord == "asymmetric") a.coord = Coord::Asymmetric;
  else if (coord == "tf_half_pixel_for_nn") a.coord = Coord::TfHalfPixelForNn;
  else if (coord == "tf_crop_and_resize") a.coord = Coord::TfCropAndResize;
  else if (coord == "half_pixel_symmetric") ctx.unsupported("coordinate_transformation_mode 'half_pixel_symmetric'");
  else ctx.invalid("coordinate_transformation_mode '" + coord + "' is not one of ONNX's");
  const std::string rounding = ctx.get_string("nearest_mode", "round_prefer_floor");
  if (rounding == "round_prefer_floor") a.rounding = Rounding::PreferFloor;
  else if (rounding == "round_prefer_ceil") a.rounding = Rounding::PreferCeil;
  else if (rounding == "floor") a.rounding = Rounding::Floor;
  else if (rounding == "ceil") a.rounding = Rounding::Ceil;
  else ctx.invalid("nearest_mode '" + rounding + "' is not one of ONNX's");
  a.cubic_a = ctx.get_float("cubic_coeff_a", -0.75);
  a.exclude_outside = ctx.get_int("exclude_outside", 0) != 0;
  a.extrapolation = ctx.get_float("extrapolation_value", 0.0);
  // Opset 18's additions.
  ctx.require_default("antialias", 0);
  ctx.require_absent("axes");
  if (ctx.get_string("keep_aspect_ratio_policy", "stretch") != "stretch") ctx.unsupported("keep_aspect_ratio_policy");
  return a;
}

OpFn build_resize(const NodeContext& ctx) {
  const ResizeAttrs a = resize_attrs(ctx);
  const std::string site = ctx.where();
  if (ctx.op_type == "Upsample" && ctx.opset < 9) {  // scales is an attribute
    if (!ctx.has("scales")) ctx.invalid("attribute 'scales' is missing");
    const std::vector<double> s = ctx.get_floats("scales");
    return [a, site, s](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{resize(site, a, in[0], Tensor(), tensor(s), Tensor())};
    };
  }
  const bool roi_input = ctx.op_type == "Resize" && ctx.opset >= 11;  // X, roi, scales, sizes; else X, scales
  return [a, site, roi_input](const std::vector<Tensor>& in) {
    const auto input = [&in](size_t i) { return i < in.size() ? in[i] : Tensor(); };
    return std::vector<Tensor>{roi_input ? resize(site, a, in[0], input(1), input(2), input(3))
                                         : resize(site, a, in[0], Tensor(), input(1), Tensor())};
  };
}

}  // namespace

void add_resize_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"Resize", build_resize, 10}, {"Upsample", build_resize, 7}});
}

}  // namespace ember::onnx
