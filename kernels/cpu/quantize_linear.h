// ONNX's affine quantization loops on the CPU, with its exact arithmetic:
// QuantizeLinear divides by the scale (x / scale, not x * (1 / scale), which can
// land on the other side of a rounding tie) and requantization multiplies an int32
// sum by a float32 multiplier, as ONNX Runtime does. Both round half to even and
// saturate to the code range. Parameters are per tensor or per index of one axis:
// element i uses parameter (i / inner) % count.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// Where element i of a contiguous tensor finds its parameter.
struct ParamLayout {
  int64_t count = 1;  // parameters (1: per tensor)
  int64_t inner = 1;  // elements after the axis, per index of it
  int64_t of(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};

// out[i] = saturate(round_half_even(x[i] / scale[p]) + zero_point[p]) with p the
// parameter of i; out_dt Int8 or UInt8. NaN gives the code range's low end.
void quantize_linear(const float* x, int64_t n, const float* scale, const int32_t* zero_point, ParamLayout params,
                     DType out_dt, void* out);

// out[i] = saturate(round_half_even(float(acc[i]) * multiplier[p]) + zero_point[p]).
void requantize(const int32_t* acc, int64_t n, const float* multiplier, const int32_t* zero_point,
                ParamLayout params, DType out_dt, void* out);

}  // namespace ember::cpu
