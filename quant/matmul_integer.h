// Integer matrix products of 8-bit codes with zero points, ONNX's MatMulInteger
// (and the sums inside QLinearMatMul):
//   out[..., i, j] = sum_p (a[..., i, p] - a_zero[i]) * (b[..., p, j] - b_zero[j])
// in int32, with numpy's matmul shapes (batch dims broadcast, a 1-D operand
// lifted and its dim dropped again). On the CPU the sums run on the int8 GEMM
// (kernels/cpu/gemm_int8.h, AVX-512 VNNI where the CPU has it): a is moved to
// uint8 and b to int8 by flipping the top bit, and the zero points are applied
// to the sums afterwards from row and column sums. Elsewhere (or for more than
// 65536 products per sum) the codes are multiplied exactly in float64.
#pragma once

#include "kernels/base/export.h"

#include <memory>
#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

// A 2-D b packed once for the CPU kernel, for callers that multiply by the same
// codes many times (an ONNX model's constant weights).
struct PackedIntegerB;
std::shared_ptr<const PackedIntegerB> pack_integer_b(const Tensor& b, const std::string& site = "matmul_integer");

// a, b: int8 or uint8. a_zero: undefined, one value, or one per row of a ([M] for
// a 2-D a, or a's shape with its last dim 1); b_zero: undefined, one value, or
// one per column ([N], or b's shape with dim -2 of 1); each of its operand's
// dtype. `packed`, when given, is pack_integer_b(b) and b is then only read for
// its shape. Errors start with `site`.
Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& a_zero, const Tensor& b_zero,
                      const std::string& site = "matmul_integer", const PackedIntegerB* packed = nullptr);

}  // namespace ember::quant

EMBER_API_END
