// The instruction-set-specific half of quantize_int8.cpp: the per-row quantize loops
// and the min/max scan, one table per instruction set (quantize_int8_<isa>.cpp
// compiles quantize_int8_impl.h for its set). Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/cpu/quantize_int8.h"

namespace ember::cpu::quantize_detail {

// o[0, cols) = clamp(round_half_even(x * inv_scale) + zp, qmin, qmax).
template <class Q>
using QuantizeRow = void (*)(const float* x, int64_t cols, float inv_scale, int32_t zp, int32_t qmin,
                             int32_t qmax, Q* o);

// The same from int32 sums, multiplied (the requantization ending QLinearMatMul).
template <class Q>
using RequantizeRow = void (*)(const int32_t* acc, int64_t cols, float multiplier, int32_t zp, int32_t qmin,
                               int32_t qmax, Q* o);

struct QuantizeKernels {
  const char* name;
  QuantizeRow<uint8_t> row_u8;
  QuantizeRow<int8_t> row_s8;
  MinMax (*min_max)(const float* x, int64_t n);  // one thread, n >= 1
  // o[0, cols) = clamp(round_half_even(x / scale) + zp, qmin, qmax) (ONNX's division).
  QuantizeRow<uint8_t> divide_row_u8;
  QuantizeRow<int8_t> divide_row_s8;
  // o[0, cols) = clamp(round_half_even(float(acc) * multiplier) + zp, qmin, qmax).
  RequantizeRow<uint8_t> requantize_row_u8;
  RequantizeRow<int8_t> requantize_row_s8;
};

// nullptr when this build cannot emit that instruction set.
const QuantizeKernels* quantize_kernels_avx512();
const QuantizeKernels* quantize_kernels_avx2();
const QuantizeKernels* quantize_kernels_generic();

}  // namespace ember::cpu::quantize_detail
