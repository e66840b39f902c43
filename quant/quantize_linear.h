// ONNX's affine quantization as tensor functions: QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear and the requantization that ends
// QLinearMatMul and QLinearConv. Unlike quantize_per_tensor (quantized_tensor.h),
// which serves Ember's own int8 layers, these follow ONNX's arithmetic exactly:
// x / scale rounded half to even, saturating, scales and zero points given as
// tensors holding one value or one per index of `axis`.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

// saturate(round_half_even(x / scale) + zero_point) as `dtype` (int8 or uint8),
// computed in float32 (x may be float32, float16, bfloat16 or int32). scale:
// floating, one value or x.size(axis) values; zero_point: undefined (0), one
// value, or the same count, of dtype `dtype`. NaN gives the low end of the code range. The
// work is done on the host; the result goes to x's device. `site` starts every
// error message.
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point, int64_t axis, DType dtype,
                       const std::string& site = "quantize_linear");

// (q - zero_point) * scale in float32, returned in scale's dtype, on q's device.
// q: int8, uint8 or int32 (whose zero point must be 0); zero_point undefined or
// q's dtype.
Tensor dequantize_linear(const Tensor& q, const Tensor& scale, const Tensor& zero_point, int64_t axis,
                         const std::string& site = "dequantize_linear");

// DynamicQuantizeLinear: x (float32) to uint8 with scale = (max(x, 0) - min(x, 0))
// / 255 and zero point round(-min(x, 0) / scale) saturated to [0, 255], all in
// float32. An all-zero (or empty) x gives scale 0, zero point 0 and zero codes,
// which dequantize to x exactly; so does a range too small for a float32 scale
// (a few subnormals), which then dequantizes to zeros. ValueError when x holds
// inf or NaN.
struct DynamicQuantized {
  Tensor y;           // uint8, x's shape
  Tensor scale;       // float32 scalar
  Tensor zero_point;  // uint8 scalar
};
DynamicQuantized dynamic_quantize_linear(const Tensor& x, const std::string& site = "dynamic_quantize_linear");

// saturate(round_half_even(float(acc) * multiplier) + zero_point) as `dtype`:
// acc int32; multiplier float32 holding one value, acc.size(axis) values, or
// acc's whole shape; zero_point undefined or one value of dtype `dtype`.
Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zero_point, int64_t axis, DType dtype,
                  const std::string& site = "requantize");

}  // namespace ember::quant

EMBER_API_END
