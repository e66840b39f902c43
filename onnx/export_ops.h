// The lowering of one traced Ember op to ONNX nodes (opset 17), used by onnx::save.
#pragma once

#include "onnx/export_graph.h"
#include "onnx/export_trace.h"

namespace ember::onnx {

// Writes the nodes computing `op` and binds its outputs in `values`.
// `dynamic_batch`: dim 0 of the graph inputs is left open, so shapes written as
// data (Reshape, Expand, Slice ends) keep dim 0 open where they can.
// NotImplementedError for an op ONNX cannot express here (losses, norm with p
// other than 1 or 2, avg_pool2d's divisor_override).
void lower(const TracedOp& op, GraphWriter& g, ValueTable& values, bool dynamic_batch);

}  // namespace ember::onnx
