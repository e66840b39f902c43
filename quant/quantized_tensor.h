// A quantized tensor: integer codes plus the parameters that map them back to
// floats, per tensor (one scale and zero point) or per channel (one pair for each
// index along `axis`). Ember keeps the parts as ordinary tensors rather than adding
// quantized dtypes, so they print, save and move like any tensor.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

struct QuantizedTensor {
  Tensor int_repr;    // int8 or uint8 codes, the float tensor's shape
  Tensor scale;       // float32 [1] per tensor, [C] per channel
  Tensor zero_point;  // int32, the shape of `scale`
  int64_t axis = -1;  // the channel axis; -1 for per tensor
  bool per_channel() const { return axis >= 0; }
};

// q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax) with the dtype's
// code range (int8: [-128, 127], uint8: [0, 255]). x is float32 on the CPU.
// Errors: DTypeError for another input dtype or a dtype other than int8/uint8;
// ValueError for a scale that is not positive and finite or a zero point outside the
// code range.
QuantizedTensor quantize_per_tensor(const Tensor& x, double scale, int64_t zero_point, DType dtype);
// The same with scales[c] and zero_points[c] for each index c along `axis`;
// ShapeError when they do not hold x.size(axis) values.
QuantizedTensor quantize_per_channel(const Tensor& x, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                                     DType dtype);
// x ~ scale * (q - zero_point), float32.
Tensor dequantize(const QuantizedTensor& q);

}  // namespace ember::quant

EMBER_API_END
