// The int8 Linear front-end: weights prepared once for the kernels of their device,
// and the dynamic forward, which quantizes its input from the input's own min and
// max on every call and runs the int8 GEMM with the fused epilogue
// (kernels/cpu/gemm_int8.h, kernels/cuda/gemm_int8.h).
#pragma once

#include "kernels/base/export.h"

#include <cstdint>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

// Weights in the form the kernels read. On the CPU `packed` holds the panel layout
// of cpu::pack_int8_weights; on CUDA the int8 rows padded to a multiple of 16 bytes.
struct PackedLinearInt8 {
  int64_t in_features = 0, out_features = 0;
  bool per_channel = true;
  Device device;
  Tensor packed;    // int8, kernel layout (see above)
  Tensor row_sums;  // int32 [out]: sum of each weight row, for the zero-point correction
  Tensor scales;    // float32 [out] (per channel) or [1]
  Tensor bias;      // float32 [out], or undefined
  // Quantize activations to 7 bits ([0, 127]) as PyTorch's dynamic Linear does (its
  // fbgemm AVX2 path saturates at 16 bits otherwise). Off by default: Ember's kernels
  // never saturate, and the full 8 bits halve the activation's rounding error.
  bool reduce_range = false;
};

// Prepares weight (int8 [out, in], symmetric: zero point 0), scales (float32, [out]
// or [1]) and bias (float32 [out] or undefined) for weight's device. Shapes and dtypes
// are the caller's to check (DynamicQuantizedLinear does).
PackedLinearInt8 pack_linear_int8(const Tensor& weight, const Tensor& scales, const Tensor& bias);

// y = x W^T + b computed in int8: x (float32 [..., in]) is quantized to uint8 with
// affine parameters chosen from its min and max (range widened to include 0), then
//   y[i][j] = x_scale * w_scale[j] * sum_p (xq[i][p] - x_zero) * wq[j][p] + b[j].
// Errors (op name `op`): DeviceError when x is on another device than the weights,
// DTypeError for a non-float32 x, ShapeError when x's last dimension is not
// in_features, ValueError when x holds inf or NaN (CPU; CUDA does not check).
Tensor linear_int8_dynamic(const Tensor& x, const PackedLinearInt8& w, const char* op = "linear_dynamic");

}  // namespace ember::quant

EMBER_API_END
