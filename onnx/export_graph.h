// GraphWriter: the small vocabulary onnx::save writes an ONNX graph with. It
// hands out unique value names, appends nodes with their attributes, and turns
// tensors and small integer lists into initializers, so the lowering of each
// Ember op (export_ops.cpp) reads as the ONNX nodes it emits and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "onnx/onnx_pb.h"
#include "tensor/tensor.h"

namespace ember::onnx {

class GraphWriter {
 public:
  explicit GraphWriter(::onnx::GraphProto* graph) : graph_(graph) {}

  // A value name not used before: `stem`, or `stem`_2, _3, ...
  std::string fresh(const std::string& stem);
  // Marks `name` as taken (graph inputs, parameter names).
  void reserve(const std::string& name) { used_.insert(name); }

  // Appends a node `op_type` reading `inputs` (an empty name skips an optional
  // input) and writing `outputs`; the node is named "/<op_type>_<n>".
  ::onnx::NodeProto* node(const std::string& op_type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
  // The same with one fresh output, whose name it returns.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs);

  // An initializer holding `t` (any device, any layout) under a fresh name from
  // `stem`, or exactly `stem` (a parameter's reserved name) when `exact`.
  std::string initializer(const Tensor& t, const std::string& stem, bool exact = false);
  // A 1-D int64 initializer (shapes, axes, pads).
  std::string ints(const std::vector<int64_t>& values);
  // A 0-d initializer of dtype `dtype` holding `value`.
  std::string scalar(double value, DType dtype);

  ::onnx::GraphProto& graph() { return *graph_; }

 private:
  ::onnx::GraphProto* graph_;
  std::unordered_set<std::string> used_;
  int64_t nodes_ = 0;
};

// Attribute setters for a node the writer appended.
void set_attr(::onnx::NodeProto* node, const std::string& name, int64_t value);
void set_attr(::onnx::NodeProto* node, const std::string& name, float value);
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::string& value);
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);

}  // namespace ember::onnx
