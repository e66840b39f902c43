// The float epilogue of an integer product, in one pass: out = float(sums) * scale
// + bias, then ReLU if asked, with the scale and the bias each one value or one per
// channel. ONNX Runtime's quantized graphs write it as Cast, Mul, Add and Relu
// nodes, four passes over the output; quant/dequantize_sums.h says when it runs.
#pragma once

#include <cstdint>

namespace ember::cpu {

// sums, out: [outer, channels, inner], contiguous. scale and bias: `channels`
// values, or one when *_per_channel is false; bias may be null (nothing added).
// Each value rounds as the separate ops round it: the int32 to float, the product,
// the sum (no fused multiply-add), then ReLU (NaN kept).
void dequantize_sums(const int32_t* sums, int64_t outer, int64_t channels, int64_t inner, const float* scale,
                     bool scale_per_channel, const float* bias, bool bias_per_channel, bool relu, float* out);

}  // namespace ember::cpu
