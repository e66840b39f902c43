// quant::dequantize_sums: the float value of an integer product's int32 sums as
// ONNX Runtime's quantized graphs compute it, float(sums) * scale (+ bias), then
// ReLU if asked, in one pass over the CPU's memory (kernels/cpu/dequantize_sums.h)
// instead of the four of the Cast, Mul, Add and Relu nodes. The ONNX plan's fused
// steps call it (onnx/fuse.cpp); not installed.
#pragma once

#include "tensor/tensor.h"

namespace ember::quant {

// Whether dequantize_sums takes these operands: int32 sums on the CPU; a float32
// scale and an optional float32 bias on the CPU, each one value or varying along
// one axis of the sums (the same axis for both), with no more dims than the sums,
// so that broadcasting them leaves the sums' shape as it is.
bool dequantize_sums_in_one_pass(const Tensor& sums, const Tensor& scale, const Tensor& bias);

// relu?(float(sums) * scale (+ bias)) with numpy broadcasting, each value rounded
// as the separate ops round it (the cast, the product, the sum), so the bits are
// theirs. (One exception: where a NaN scale meets a NaN bias, which NaN's payload
// the sum keeps follows the compiler's operand order, not the Add's.) ValueError "dequantize_sums: operands it does not take in one pass" unless
// dequantize_sums_in_one_pass(sums, scale, bias).
Tensor dequantize_sums(const Tensor& sums, const Tensor& scale, const Tensor& bias, bool relu);

}  // namespace ember::quant
