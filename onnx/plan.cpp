// Running a plan: check the inputs against the graph's declared types, walk the
// steps, release each intermediate after its last reader, and return the
// outputs. An error inside a step is re-raised with the node named in front.
#include "onnx/plan.h"

#include <unordered_set>

#include "kernels/base/error.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

std::string expected_shape(const ValueInfo& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ", ";
    s += v.shape[i] ? std::to_string(*v.shape[i]) : (v.dim_names[i].empty() ? "?" : v.dim_names[i]);
  }
  return s + "]";
}

void check_input(const ValueInfo& v, const Tensor& t) {
  if (!t.defined()) throw ValueError("ONNX model input '" + v.name + "' is an undefined tensor");
  if (t.dtype() != v.dtype)
    throw DTypeError("ONNX model input '" + v.name + "' expects dtype " + dtype_name(v.dtype) + " but got " +
                     dtype_name(t.dtype()));
  if (!v.has_shape) return;
  bool ok = static_cast<size_t>(t.dim()) == v.shape.size();
  for (size_t i = 0; ok && i < v.shape.size(); ++i) ok = !v.shape[i] || *v.shape[i] == t.size(static_cast<int64_t>(i));
  if (!ok)
    throw ShapeError("ONNX model input '" + v.name + "' expects shape " + expected_shape(v) + " but got " +
                     shape_str(t.shape()));
}

}  // namespace

// Errors an op raised itself already name the node and pass unchanged.
void rethrow_at(const std::string& where) {
  try {
    throw;
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(where, 0) == 0) throw;
  }
  std::string prefix = where + ": ";
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(prefix + e.what());
  }
  throw;  // OutOfMemoryError, CudaError, FormatError: as they are
}

int64_t Step::int_attr(const char* name, int64_t fallback) const {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == Attribute::Kind::Int ? it->second.i : fallback;
}

double Step::float_attr(const char* name, double fallback) const {
  auto it = attrs.find(name);
  return it != attrs.end() && it->second.kind == Attribute::Kind::Float ? it->second.f : fallback;
}

std::shared_ptr<const ShapeMemo::Values> ShapeMemo::find(const Key& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

void ShapeMemo::insert(const Key& key, std::shared_ptr<const Values> values) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() < kMaxEntries) entries_.emplace(key, std::move(values));
}

void Plan::finish() {
  constant_storage.clear();
  for (const Tensor& c : constants)
    if (c.defined() && c.storage()) constant_storage.insert(c.storage().get());
  has_shape_only = false;
  for (const Step& s : steps) has_shape_only |= s.shape_only;
}

std::vector<Tensor> Plan::run(const std::vector<Tensor>& given) const {
  if (given.size() != inputs.size())
    throw ValueError("ONNX model expects " + std::to_string(inputs.size()) + " inputs but got " +
                     std::to_string(given.size()));
  NoGradGuard no_grad;
  std::vector<Tensor> slots(num_slots);
  for (size_t i = 0; i < given.size(); ++i) {
    check_input(inputs[i], given[i]);
    slots[input_slots[i]] = given[i].device() == device ? given[i] : given[i].to(device);
  }
  // Shape-only values: taken from the memo when these input shapes were seen
  // before, else computed below and offered to it.
  ShapeMemo::Key key;
  std::shared_ptr<const ShapeMemo::Values> known;
  std::shared_ptr<ShapeMemo::Values> fresh;
  int64_t fresh_elements = 0;
  if (has_shape_only) {
    for (const Tensor& t : given) {
      key.push_back(t.dim());
      key.insert(key.end(), t.shape().begin(), t.shape().end());
    }
    known = memo->find(key);
    if (known)
      for (const auto& [slot, value] : *known) slots[slot] = value;
    else
      fresh = std::make_shared<ShapeMemo::Values>();
  }
  std::vector<Tensor> args;
  for (const Step& step : steps) {
    if (known && step.shape_only) {
      for (uint32_t s : step.release) slots[s] = Tensor();
      continue;
    }
    args.clear();
    for (const ValueRef& r : step.inputs)
      args.push_back(r.kind == ValueRef::Kind::Slot       ? slots[r.index]
                     : r.kind == ValueRef::Kind::Constant ? constants[r.index]
                                                          : Tensor());
    std::vector<Tensor> outs;
    try {
      outs = step.fn(args);
    } catch (const Error& e) {
      // A node fused into this step (onnx/fuse.cpp) named itself.
      for (const Step::FusedNode& f : step.fused)
        if (std::string(e.what()).rfind(f.where, 0) == 0) throw;
      rethrow_at(step.where);
    }
    if (outs.size() < step.outputs.size())
      throw FormatError(step.where + ": computed " + std::to_string(outs.size()) + " outputs but the node declares " +
                        std::to_string(step.outputs.size()));
    for (size_t j = 0; j < step.outputs.size(); ++j) {
      if (step.outputs[j] < 0) continue;
      if (fresh && step.shape_only) {
        fresh_elements += outs[j].defined() ? outs[j].numel() : 0;
        fresh->emplace_back(static_cast<uint32_t>(step.outputs[j]), outs[j]);
      }
      slots[static_cast<size_t>(step.outputs[j])] = std::move(outs[j]);
    }
    for (uint32_t s : step.release) slots[s] = Tensor();
  }
  if (fresh && fresh_elements <= ShapeMemo::kMaxElements) {
    memo->insert(key, fresh);
    known = fresh;
  }
  // An output must never share memory with the plan's constants or its memo: a
  // caller that writes into it would change the model.
  std::unordered_set<const void*> memo_storage;
  if (known)
    for (const auto& [slot, value] : *known)
      if (value.defined() && value.storage()) memo_storage.insert(value.storage().get());
  std::vector<Tensor> result;
  for (const ValueRef& r : output_refs) {
    Tensor t = r.kind == ValueRef::Kind::Slot ? slots[r.index] : constants[r.index];
    if (t.defined() && t.storage() &&
        (constant_storage.count(t.storage().get()) || memo_storage.count(t.storage().get())))
      t = t.clone();
    result.push_back(t);
  }
  return result;
}

}  // namespace ember::onnx
