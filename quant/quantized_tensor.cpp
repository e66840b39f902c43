// quantize_per_tensor, quantize_per_channel and dequantize (see quantized_tensor.h).
// Per-channel work moves the channel axis to the front so each channel is one
// contiguous row for the kernels in kernels/cpu/quantize_int8.
#include "quant/quantized_tensor.h"

#include <cmath>

#include "kernels/cpu/quantize_int8.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::quant {
namespace {

struct CodeRange {
  int32_t qmin, qmax;
};

CodeRange code_range(const char* op, DType dtype) {
  if (dtype == kInt8) return {-128, 127};
  if (dtype == kUInt8) return {0, 255};
  throw DTypeError(msg(op, ": dtype must be int8 or uint8, got ", dtype));
}

void check_input(const char* op, const Tensor& x) {
  if (x.dtype() != kFloat32) throw DTypeError(msg(op, ": expected a float32 tensor, got ", x.dtype()));
  if (!x.device().is_cpu()) throw_no_kernel(op, x);
}

void check_params(const char* op, double scale, int64_t zero_point, DType dtype, CodeRange r) {
  if (!(scale > 0) || !std::isfinite(float(scale)))
    throw ValueError(msg(op, ": scale must be positive and finite, got ", scale));
  if (zero_point < r.qmin || zero_point > r.qmax)
    throw ValueError(msg(op, ": zero_point ", zero_point, " is outside the range [", r.qmin, ", ", r.qmax, "] of ",
                         dtype));
}

}  // namespace

QuantizedTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype) {
  const char* op = "quantize_per_tensor";
  check_input(op, x);
  const CodeRange r = code_range(op, dtype);
  check_params(op, scale, zero_point, dtype, r);
  const Tensor c = x.contiguous();
  QuantizedTensor q;
  q.int_repr = empty(x.shape(), dtype);
  cpu::quantize(c.data_ptr<float>(), 1, c.numel(), c.numel(), 1.0f / float(scale), int32_t(zero_point), r.qmin,
                r.qmax, dtype, q.int_repr.data_ptr(), c.numel());
  q.scale = full({1}, float(scale), kFloat32);
  q.zero_point = full({1}, int32_t(zero_point), kInt32);
  return q;
}

QuantizedTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                                     DType dtype) {
  const char* op = "quantize_per_channel";
  check_input(op, x);
  const CodeRange r = code_range(op, dtype);
  axis = wrap_dim(axis, x.dim());
  const int64_t channels = x.size(axis);
  if (scales.numel() != channels || zero_points.numel() != channels)
    throw ShapeError(msg(op, ": expected ", channels, " scales and zero points for axis ", axis, " of shape ",
                         shape_str(x.shape()), ", got ", scales.numel(), " and ", zero_points.numel()));
  const std::vector<double> s = scales.to(kFloat64).to_vector<double>();
  const std::vector<int64_t> z = zero_points.to(kInt64).to_vector<int64_t>();
  for (int64_t c = 0; c < channels; ++c) check_params(op, s[size_t(c)], z[size_t(c)], dtype, r);
  // Channel-major copy: row c holds channel c's values; the codes are moved back after.
  const Tensor rows = x.transpose(0, axis).contiguous();
  Tensor codes = empty(rows.shape(), dtype);
  const int64_t per = channels ? rows.numel() / channels : 0;
  const float* src = rows.data_ptr<float>();
  auto* dst = static_cast<char*>(codes.data_ptr());
  for (int64_t c = 0; c < channels; ++c)
    cpu::quantize(src + c * per, 1, per, per, 1.0f / float(s[size_t(c)]), int32_t(z[size_t(c)]), r.qmin, r.qmax,
                  dtype, dst + c * per, per);
  QuantizedTensor q;
  q.int_repr = codes.transpose(0, axis).contiguous();
  q.scale = scales.to(kFloat32).contiguous().reshape({channels});
  q.zero_point = zero_points.to(kInt32).contiguous().reshape({channels});
  q.axis = axis;
  return q;
}

Tensor dequantize(const QuantizedTensor& q) {
  const char* op = "dequantize";
  const Tensor& codes = q.int_repr;
  code_range(op, codes.dtype());
  if (!codes.device().is_cpu()) throw_no_kernel(op, codes);
  const std::vector<float> s = q.scale.cpu().to(kFloat32).to_vector<float>();
  const std::vector<int32_t> z = q.zero_point.cpu().to(kInt32).to_vector<int32_t>();
  if (!q.per_channel()) {
    if (s.size() != 1 || z.size() != 1)
      throw ShapeError(msg(op, ": a per-tensor quantized tensor needs one scale and one zero point, got ", s.size(),
                           " and ", z.size()));
    const Tensor c = codes.contiguous();
    Tensor out = empty(codes.shape(), kFloat32);
    cpu::dequantize(c.data_ptr(), c.dtype(), c.numel(), s[0], z[0], out.data_ptr<float>());
    return out;
  }
  const int64_t axis = wrap_dim(q.axis, codes.dim());
  const int64_t channels = codes.size(axis);
  if (int64_t(s.size()) != channels || int64_t(z.size()) != channels)
    throw ShapeError(msg(op, ": expected ", channels, " scales and zero points for axis ", axis, ", got ", s.size(),
                         " and ", z.size()));
  const Tensor rows = codes.transpose(0, axis).contiguous();
  Tensor out = empty(rows.shape(), kFloat32);
  const int64_t per = channels ? rows.numel() / channels : 0;
  const auto* src = static_cast<const char*>(rows.data_ptr());
  for (int64_t c = 0; c < channels; ++c)
    cpu::dequantize(src + c * per, rows.dtype(), per, s[size_t(c)], z[size_t(c)], out.data_ptr<float>() + c * per);
  return out.transpose(0, axis).contiguous();
}

}  // namespace ember::quant
