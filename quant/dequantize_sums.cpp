// quant::dequantize_sums (dequantize_sums.h): works out the axis along which the
// scale and the bias vary, views the sums as [outer, channels, inner] around it, and
// runs the kernel's one pass.
#include "quant/dequantize_sums.h"

#include "kernels/base/error.h"
#include "kernels/cpu/dequantize_sums.h"
#include "tensor/ops.h"

namespace ember::quant {

namespace {

constexpr int64_t kOneValue = -1, kOther = -2;

// The one axis of `shape` along which v, broadcast to it, varies; kOneValue when
// v holds one value, kOther when it broadcasts any other way (or adds dims).
int64_t varying_axis(const Tensor& v, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (v.dim() > rank) return kOther;
  int64_t axis = kOneValue;
  for (int64_t i = 0; i < v.dim(); ++i) {
    const int64_t a = rank - v.dim() + i;
    if (v.size(i) == 1) continue;
    if (v.size(i) != shape[size_t(a)] || axis != kOneValue) return kOther;
    axis = a;
  }
  return axis;
}

bool float32_on_cpu(const Tensor& t) { return t.dtype() == kFloat32 && t.device().is_cpu(); }

}  // namespace

bool dequantize_sums_in_one_pass(const Tensor& sums, const Tensor& scale, const Tensor& bias) {
  if (!sums.defined() || sums.dtype() != kInt32 || !sums.device().is_cpu()) return false;
  if (!scale.defined() || !float32_on_cpu(scale)) return false;
  if (bias.defined() && !float32_on_cpu(bias)) return false;
  const int64_t s = varying_axis(scale, sums.shape());
  const int64_t b = bias.defined() ? varying_axis(bias, sums.shape()) : kOneValue;
  return s != kOther && b != kOther && (s == kOneValue || b == kOneValue || s == b);
}

Tensor dequantize_sums(const Tensor& sums, const Tensor& scale, const Tensor& bias, bool relu) {
  if (!dequantize_sums_in_one_pass(sums, scale, bias))
    throw ValueError("dequantize_sums: operands it does not take in one pass");
  const Shape& shape = sums.shape();
  const int64_t s = varying_axis(scale, shape);
  const int64_t b = bias.defined() ? varying_axis(bias, shape) : kOneValue;
  // The channel axis: where either varies, else the last (one run per row).
  int64_t axis = s != kOneValue ? s : b;
  if (axis == kOneValue) axis = static_cast<int64_t>(shape.size()) - 1;
  int64_t outer = 1, channels = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    (i < axis ? outer : i == axis ? channels : inner) *= shape[size_t(i)];
  Tensor out = empty(shape, {kFloat32, kCPU});
  const Tensor sc = sums.contiguous(), scv = scale.contiguous(), bv = bias.defined() ? bias.contiguous() : bias;
  cpu::dequantize_sums(sc.data_ptr<int32_t>(), outer, channels, inner, scv.data_ptr<float>(), s != kOneValue,
                       bv.defined() ? bv.data_ptr<float>() : nullptr, b != kOneValue, relu, out.data_ptr<float>());
  return out;
}

}  // namespace ember::quant
