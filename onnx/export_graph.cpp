// GraphWriter (export_graph.h): unique names, nodes, initializers.
#include "onnx/export_graph.h"

#include "onnx/tensor_proto.h"
#include "tensor/ops.h"

namespace ember::onnx {

std::string GraphWriter::fresh(const std::string& stem) {
  std::string name = stem;
  for (int64_t n = 2; used_.count(name); ++n) name = stem + "_" + std::to_string(n);
  used_.insert(name);
  return name;
}

::onnx::NodeProto* GraphWriter::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                     const std::vector<std::string>& outputs) {
  ::onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  n->set_name("/" + op_type + "_" + std::to_string(nodes_++));
  for (const auto& in : inputs) n->add_input(in);
  for (const auto& out : outputs) n->add_output(out);
  return n;
}

std::string GraphWriter::op(const std::string& op_type, const std::vector<std::string>& inputs) {
  std::string out = fresh(op_type);
  node(op_type, inputs, {out});
  return out;
}

std::string GraphWriter::initializer(const Tensor& t, const std::string& stem, bool exact) {
  std::string name = exact ? stem : fresh(stem);
  tensor_to_proto(t, name, graph_->add_initializer());
  return name;
}

std::string GraphWriter::ints(const std::vector<int64_t>& values) {
  return initializer(tensor(values, {static_cast<int64_t>(values.size())}), "ints");
}

std::string GraphWriter::scalar(double value, DType dtype) {
  return initializer(full({}, value, {dtype, kCPU}), "scalar");
}

namespace {
::onnx::AttributeProto* attr(::onnx::NodeProto* node, const std::string& name,
                             ::onnx::AttributeProto::AttributeType type) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
}  // namespace

void set_attr(::onnx::NodeProto* node, const std::string& name, int64_t value) {
  attr(node, name, ::onnx::AttributeProto::INT)->set_i(value);
}
void set_attr(::onnx::NodeProto* node, const std::string& name, float value) {
  attr(node, name, ::onnx::AttributeProto::FLOAT)->set_f(value);
}
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::string& value) {
  attr(node, name, ::onnx::AttributeProto::STRING)->set_s(value);
}
void set_attr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = attr(node, name, ::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

}  // namespace ember::onnx
