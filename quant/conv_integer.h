// Integer 2-D convolution of 8-bit codes with zero points, ONNX's ConvInteger
// (and the sums inside QLinearConv):
//   out[n, m, y, x] = bias[m] + sum_{c, ky, kx} (x[n, c, iy, ix] - x_zero) * (w[m, c, ky, kx] - w_zero[m])
// in int32, where padding reads x_zero (so it adds nothing). On the CPU each group
// of layers large enough to gain is one product on the int8 GEMM (kernels/cpu/conv_int8.h: the patches
// as rows of channels-last runs, AVX-512 VNNI where the CPU has it); elsewhere,
// or for more than 65536 products per sum, the codes are convolved exactly in
// float64.
#pragma once

#include "kernels/base/export.h"

#include <array>
#include <memory>
#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

// The window: strides, dilations (each >= 1), padding before and after each
// spatial dim (>= 0; they may differ, as ONNX's pads do), and the group count.
struct ConvIntegerWindow {
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1}, pad_begin{0, 0}, pad_end{0, 0};
  int64_t groups = 1;
};

// w [M, C / groups, kH, kW] packed once for the CPU kernel, for callers that
// convolve with the same codes many times (an ONNX model's constant weights).
struct PackedConvWeights;
std::shared_ptr<const PackedConvWeights> pack_conv_weights(const Tensor& w, int64_t groups,
                                                           const std::string& site = "conv_integer");

// Which arithmetic runs on the CPU. Auto takes the int8 GEMM where it beats
// Ember's float64 convolution (see conv_integer.cpp): at least 8 output channels
// per group and window rows of at least 16 bytes (channels per group x kW).
// Int8Gemm takes it whenever it can: on the CPU, up to 65536 products per sum.
// Float64 always convolves in float64. The sums are the same on every path.
enum class ConvIntegerPath { Auto, Int8Gemm, Float64 };

// x [N, C, H, W] and w [M, C / groups, kH, kW]: int8 or uint8 codes. x_zero:
// undefined or one value of x's dtype; w_zero: undefined, one value, or one per
// output channel ([M]), of w's dtype; bias: undefined or int32 [M]. Returns int32
// [N, M, H_out, W_out], on x's device. `packed`, when given, is
// pack_conv_weights(w, window.groups) and w is then only read for its shape.
// Errors start with `site`.
Tensor conv_integer(const Tensor& x, const Tensor& w, const Tensor& x_zero, const Tensor& w_zero, const Tensor& bias,
                    const ConvIntegerWindow& window, const std::string& site = "conv_integer",
                    const PackedConvWeights* packed = nullptr, ConvIntegerPath path = ConvIntegerPath::Auto);

}  // namespace ember::quant

EMBER_API_END
