// The tracer and the value table of onnx::save (export_trace.h).
#include "onnx/export_trace.h"

#include "onnx/tensor_proto.h"

namespace ember::onnx {

void Tracer::on_record(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                       const std::vector<Tensor*>& outputs) {
  TracedOp op{node, {}, {}};
  for (const Tensor* t : inputs) op.inputs.push_back(*t);
  for (const Tensor* t : outputs) op.outputs.push_back(*t);
  ops.push_back(std::move(op));
}

ValueTable::ValueTable(GraphWriter& writer, const std::vector<std::pair<std::string, Tensor>>& named) : g_(writer) {
  for (const auto& [name, t] : named)
    if (t.defined() && !t.device().is_meta()) named_.emplace(key_of(t), name);
}

ValueTable::Key ValueTable::key_of(const Tensor& t) {
  return {t.storage().get(), t.storage_offset(), t.shape(), t.stride(), t.dtype()};
}

void ValueTable::bind(const Tensor& t, const std::string& name) {
  by_impl_[&t.impl()] = name;
  by_key_[key_of(t)] = name;
  keep_.push_back(t);
}

bool ValueTable::is_bound(const Tensor& t) const {
  return by_impl_.count(&t.impl()) || by_key_.count(key_of(t));
}

std::string ValueTable::constant(const Tensor& t) {
  const Key key = key_of(t);
  if (auto it = constants_.find(key); it != constants_.end()) return it->second;
  std::string stem = "const";
  const auto it = named_.find(key);
  if (it != named_.end()) stem = it->second;
  else if (t.is_wrapped_number()) stem = "scalar";
  std::string name = g_.initializer(t, stem, it != named_.end());
  constants_.emplace(key, name);
  keep_.push_back(t);
  return name;
}

std::string ValueTable::value(const Tensor& t, DType dtype) {
  if (!t.defined()) return "";
  std::string name;
  if (auto it = by_impl_.find(&t.impl()); it != by_impl_.end()) name = it->second;
  else if (auto k = by_key_.find(key_of(t)); k != by_key_.end()) name = k->second;
  if (name.empty()) {
    // An unnamed constant of another dtype is written already converted (the
    // scalar 0.5 of `x * 0.5` becomes a float16 0.5 in a float16 graph).
    if (t.dtype() != dtype && !named_.count(key_of(t))) {
      std::string& c = converted_constants_[{key_of(t), dtype}];
      if (c.empty()) c = constant(t.to(dtype));
      return c;
    }
    name = constant(t);
  }
  if (t.dtype() == dtype) return name;
  std::string& cast = converted_[{name, dtype}];
  if (cast.empty()) {
    auto* node = g_.node("Cast", {name}, {g_.fresh(name + "_" + dtype_name(dtype))});
    set_attr(node, "to", static_cast<int64_t>(dtype_to_onnx(dtype)));
    cast = node->output(0);
  }
  return cast;
}

}  // namespace ember::onnx
