// ONNX's quantize, dequantize and requantize (see quantize_linear.h). Parameters
// are read to the host once per call; the loops are kernels/cpu/quantize_linear.
#include "quant/quantize_linear.h"

#include <cmath>

#include "kernels/cpu/quantize_int8.h"
#include "kernels/cpu/quantize_linear.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::quant {
namespace {

// How parameter p spreads over data of `shape`: one value, one per index of
// `axis`, or (when `whole` allows it) one per element.
cpu::ParamLayout layout_of(const std::string& site, const char* what, const Tensor& p, const Shape& shape,
                           int64_t axis, bool whole = false) {
  if (p.numel() == 1) return {};
  if (whole && p.shape() == shape) return {p.numel(), 1};
  const int64_t rank = int64_t(shape.size());
  if (p.dim() == 1 && rank > 0) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      throw ShapeError(msg(site, ": axis ", axis, " is out of range for a rank-", rank, " input"));
    if (p.size(0) == shape[size_t(a)]) {
      int64_t inner = 1;
      for (int64_t d = a + 1; d < rank; ++d) inner *= shape[size_t(d)];
      return {p.size(0), inner};
    }
  }
  throw ShapeError(msg(site, ": the ", what, " must hold one value or one per index of axis ", axis, " of ",
                       shape_str(shape), ", got shape ", shape_str(p.shape())));
}

// The zero points as `count` int32 values on the host: undefined gives zeros, one
// value is repeated, otherwise the count must match the scale's. Their dtype is
// the codes' (`dtype`), as ONNX requires, so every value lies in the code range.
std::vector<int32_t> zero_points(const std::string& site, const Tensor& zp, const Tensor& scale, int64_t count,
                                 DType dtype) {
  if (!zp.defined()) return std::vector<int32_t>(size_t(count), 0);
  if (zp.dtype() != dtype)
    throw DTypeError(msg(site, ": the zero point must be ", dtype, " like the codes, got ", zp.dtype()));
  std::vector<int32_t> v = zp.to(kCPU, kInt32).contiguous().reshape({zp.numel()}).to_vector<int32_t>();
  if (v.size() == 1) return std::vector<int32_t>(size_t(count), v[0]);
  if (int64_t(v.size()) != count || zp.shape() != scale.shape())
    throw ShapeError(msg(site, ": the zero point's shape ", shape_str(zp.shape()), " does not match the scale's ",
                         shape_str(scale.shape())));
  return v;
}

std::vector<float> host_floats(const Tensor& t) {
  return t.to(kCPU, kFloat32).contiguous().reshape({t.numel()}).to_vector<float>();
}

void check_code_type(const std::string& site, DType dtype) {
  if (dtype != kInt8 && dtype != kUInt8)
    throw DTypeError(msg(site, ": the quantized type must be int8 or uint8, got ", dtype));
}

void check_scale(const std::string& site, const Tensor& scale) {
  if (!is_floating(scale.dtype())) throw DTypeError(msg(site, ": the scale must be floating point, got ", scale.dtype()));
}

// A parameter laid out by `layout` over `shape`, reshaped to broadcast against it.
Tensor along_axis(const Tensor& p, cpu::ParamLayout layout, const Shape& shape, int64_t axis) {
  if (layout.count == 1) return p.reshape({});
  Shape s(shape.size(), 1);
  s[size_t(axis < 0 ? axis + int64_t(shape.size()) : axis)] = layout.count;
  return p.reshape(s);
}

}  // namespace

Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis, DType dtype,
                       const std::string& site) {
  check_code_type(site, dtype);
  check_scale(site, scale);
  const DType xt = x.dtype();
  if (xt != kFloat32 && xt != kFloat16 && xt != kBFloat16 && xt != kInt32)
    throw DTypeError(msg(site, ": the input must be float32, float16, bfloat16 or int32, got ", xt));
  const cpu::ParamLayout layout = layout_of(site, "scale", scale, x.shape(), axis);
  const std::vector<float> s = host_floats(scale);
  const std::vector<int32_t> z = zero_points(site, zero_point, scale, layout.count, dtype);
  const Tensor xs = x.to(kCPU, kFloat32).contiguous();
  Tensor q = empty(x.shape(), dtype);
  cpu::quantize_linear(xs.data_ptr<float>(), xs.numel(), s.data(), z.data(), layout, dtype, q.data_ptr());
  return q.to(x.device());
}

Tensor dequantize_linear(const Tensor& q, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                         const std::string& site) {
  check_scale(site, scale);
  const DType qt = q.dtype();
  if (qt != kInt8 && qt != kUInt8 && qt != kInt32)
    throw DTypeError(msg(site, ": the input must be int8, uint8 or int32, got ", qt));
  const cpu::ParamLayout layout = layout_of(site, "scale", scale, q.shape(), axis);
  const std::vector<int32_t> z = zero_points(site, zero_point, scale, layout.count, qt);
  Tensor v = q.to(kInt32);
  if (zero_point.defined()) {
    bool zero = true;
    for (int32_t e : z) zero = zero && e == 0;
    if (qt == kInt32 && !zero) throw ValueError(msg(site, ": an int32 input's zero point must be 0"));
    // int8 and uint8 differences are exact in int32.
    // One zero point serves every index of the axis, as in quantize_linear.
    const Tensor zp = zero_point.to(q.device(), kInt32);
    if (!zero) v = sub(v, zp.numel() == 1 ? zp.reshape({}) : along_axis(zp, layout, q.shape(), axis));
  }
  const Tensor s = along_axis(scale.to(q.device(), kFloat32), layout, q.shape(), axis);
  return mul(v.to(kFloat32), s).to(scale.dtype());
}

DynamicQuantized dynamic_quantize_linear(const Tensor& x, const std::string& site) {
  if (x.dtype() != kFloat32) throw DTypeError(msg(site, ": the input must be float32, got ", x.dtype()));
  const Tensor xs = x.to(kCPU).contiguous();
  const cpu::MinMax r = cpu::min_max(xs.data_ptr<float>(), xs.numel());
  if (!r.finite) throw ValueError(msg(site, ": the input holds inf or NaN, which has no quantized value"));
  // The range is widened to hold 0, so 0 has an exact code.
  const float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
  const float scale = (hi - lo) / 255.0f;
  int32_t zp = 0;
  DynamicQuantized out;
  if (scale > 0) {
    const float z = std::nearbyint(std::min(std::max(0.0f - lo / scale, 0.0f), 255.0f));
    zp = int32_t(z);
    out.y = empty(x.shape(), kUInt8);
    cpu::quantize_linear(xs.data_ptr<float>(), xs.numel(), &scale, &zp, {}, kUInt8, out.y.data_ptr());
    out.y = out.y.to(x.device());
  } else {
    out.y = zeros(x.shape(), TensorOptions(kUInt8, x.device()));
  }
  out.scale = full({}, scale, TensorOptions(kFloat32, x.device()));
  out.zero_point = full({}, zp, TensorOptions(kUInt8, x.device()));
  return out;
}

Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zero_point, int64_t axis, DType dtype,
                  const std::string& site) {
  check_code_type(site, dtype);
  if (acc.dtype() != kInt32) throw DTypeError(msg(site, ": the sums must be int32, got ", acc.dtype()));
  const cpu::ParamLayout layout = layout_of(site, "multiplier", multiplier, acc.shape(), axis, true);
  const std::vector<float> m = host_floats(multiplier);
  if (zero_point.defined() && zero_point.numel() != 1)
    throw ShapeError(msg(site, ": the output zero point must hold one value, got shape ", shape_str(zero_point.shape())));
  const std::vector<int32_t> z = zero_points(site, zero_point, Tensor(), layout.count, dtype);
  const Tensor a = acc.to(kCPU).contiguous();
  Tensor q = empty(acc.shape(), dtype);
  cpu::requantize(a.data_ptr<int32_t>(), a.numel(), m.data(), z.data(), layout, dtype, q.data_ptr());
  return q.to(acc.device());
}

}  // namespace ember::quant
