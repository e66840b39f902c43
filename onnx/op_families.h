// The op table is assembled from one list per family file (ops_*.cpp); each
// appends its rows: op type, builder, oldest opset implemented.
#pragma once

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

}  // namespace ember::onnx
