// The op table is assembled from one list per family file (ops_*.cpp); each
// appends its rows: op type, builder, oldest opset implemented.
#pragma once

#include <optional>

#include <string>
#include <vector>

#include "onnx/node_context.h"

namespace ember::onnx {

void add_elementwise_ops(std::vector<OpRow>& rows);
void add_shape_ops(std::vector<OpRow>& rows);
void add_nn_ops(std::vector<OpRow>& rows);
void add_reduce_ops(std::vector<OpRow>& rows);
void add_index_ops(std::vector<OpRow>& rows);
void add_resize_ops(std::vector<OpRow>& rows);
void add_host_loop_ops(std::vector<OpRow>& rows);
void add_loss_ops(std::vector<OpRow>& rows);
void add_scatter_ops(std::vector<OpRow>& rows);
void add_einsum_ops(std::vector<OpRow>& rows);
void add_recurrent_ops(std::vector<OpRow>& rows);
void add_quantized_ops(std::vector<OpRow>& rows);
void add_host_math_ops(std::vector<OpRow>& rows);
void add_normalization_ops(std::vector<OpRow>& rows);
void add_select_ops(std::vector<OpRow>& rows);
void add_grid_sample_ops(std::vector<OpRow>& rows);

// Shared by the op files.
// Conv's builder (ops_nn.cpp): 1-D to 3-D, every padding and group. ConvInteger
// and QLinearConv run it on their codes as float64 for 3-D windows, where the sums
// are exact.
OpFn build_conv(const NodeContext& ctx);
// A Gemm with transA 0, alpha 1 and beta 1 (inputs A, B, optional C) as
// linear(A, W, C), or linear_relu with relu, W being B with transB and B^T
// without: one GEMM started from C's rows on the CPU, the bits of Gemm's addmm
// with less work per call. Only for float32 or float64 matrices outside autocast
// with C absent or one value per output, all on one device (a bfloat16 linear
// rounds product and bias once, addmm twice); nullopt otherwise (ops_nn.cpp).
std::optional<Tensor> gemm_as_linear(const std::vector<Tensor>& in, bool trans_b, bool relu);
// GatherElements (ops_index.cpp): out[p] = data[p with p[axis] replaced by
// indices[p]]; `site` names the node in errors.
Tensor gather_elements(const std::string& site, const Tensor& data, const Tensor& indices, int64_t axis);
// Where those elements lie in a contiguous tensor of `shape`: a host int64 tensor
// of indices' shape (ops_index.cpp; also ScatterElements).
Tensor element_positions(const std::string& site, const Shape& shape, const Tensor& indices, int64_t axis);

}  // namespace ember::onnx
