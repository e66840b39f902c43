// Building small ONNX models in tests with protobuf: graph inputs and outputs,
// nodes, float initializers, and the bytes load_from_string reads.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ember_test {

// A graph value named `name` of element type `elem`, with fixed sizes or symbols
// ("N") per dim.
inline void set_input(::onnx::ValueInfoProto* v, const std::string& name,
                      std::vector<std::variant<int64_t, std::string>> dims, int elem = ::onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d)) dim->set_dim_value(std::get<int64_t>(d));
    else dim->set_dim_param(std::get<std::string>(d));
  }
}

inline ::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                                   std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op : name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

// A model with no nodes yet: IR version 8, the default domain at `opset`.
inline ::onnx::ModelProto new_model(const std::string& name, int64_t opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name(name);
  return m;
}

// An initializer of any element type from its little-endian bytes.
template <class T>
void add_raw_initializer(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims, int elem,
                         const std::vector<T>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

// A float32 initializer of `dims` holding `values`.
inline void add_initializer(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

inline std::string bytes_of(const ::onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

}  // namespace ember_test
