// Quantize and dequantize loops on the CPU: float32 to integer codes and back with
// an affine map (value = scale * (q - zero_point)), plus the min/max scan that
// dynamic quantization uses to pick an activation's parameters per call.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// Smallest and largest of x[0, n), and whether every element is finite (an inf or
// NaN cannot be quantized). n == 0 gives min = max = 0.
struct MinMax {
  float min = 0, max = 0;
  bool finite = true;
};
MinMax min_max(const float* x, int64_t n);

// out[i] = clamp(round_half_even(x[i] * inv_scale) + zero_point, qmin, qmax) for
// `rows` rows of `cols` values (row strides in elements). out_dt is Int8 or UInt8;
// qmin <= zero_point <= qmax lie in its range. NaN maps to qmin. When padded_cols >
// cols, columns [cols, padded_cols) of each output row are set to `pad` (the int8
// GEMM reads activation rows in groups of 4 bytes).
void quantize(const float* x, int64_t rows, int64_t cols, int64_t x_rs, float inv_scale, int32_t zero_point,
              int32_t qmin, int32_t qmax, DType out_dt, void* out, int64_t out_rs, int64_t padded_cols = 0,
              int32_t pad = 0);

// out[0, n) = clamp(round_half_even(x[i] / scale) + zero_point, qmin, qmax): ONNX's
// QuantizeLinear, dividing as it says. One thread; the caller splits the work.
void quantize_divide(const float* x, int64_t n, float scale, int32_t zero_point, int32_t qmin, int32_t qmax,
                     DType out_dt, void* out);

// out[0, n) = clamp(round_half_even(float(acc[i]) * multiplier) + zero_point, qmin,
// qmax): the requantization of int32 sums. One thread, as quantize_divide.
void requantize_run(const int32_t* acc, int64_t n, float multiplier, int32_t zero_point, int32_t qmin, int32_t qmax,
                    DType out_dt, void* out);

// out[i] = scale * (q[i] - zero_point) for n contiguous codes of dtype q_dt (Int8 or UInt8).
void dequantize(const void* q, DType q_dt, int64_t n, float scale, int32_t zero_point, float* out);

}  // namespace ember::cpu
