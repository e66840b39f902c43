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
  std::vector<Tensor> args;
  for (const Step& step : steps) {
    args.clear();
    for (const ValueRef& r : step.inputs)
      args.push_back(r.kind == ValueRef::Kind::Slot       ? slots[r.index]
                     : r.kind == ValueRef::Kind::Constant ? constants[r.index]
                                                          : Tensor());
    std::vector<Tensor> outs;
    try {
      outs = step.fn(args);
    } catch (const Error&) {
      rethrow_at(step.where);
    }
    if (outs.size() < step.outputs.size())
      throw FormatError(step.where + ": computed " + std::to_string(outs.size()) + " outputs but the node declares " +
                        std::to_string(step.outputs.size()));
    for (size_t j = 0; j < step.outputs.size(); ++j)
      if (step.outputs[j] >= 0) slots[static_cast<size_t>(step.outputs[j])] = std::move(outs[j]);
    for (uint32_t s : step.release) slots[s] = Tensor();
  }
  // An output must never share memory with the plan's constants: a caller that
  // writes into it would change the model.
  std::unordered_set<const void*> constant_storage;
  for (const Tensor& c : constants) constant_storage.insert(c.storage().get());
  std::vector<Tensor> result;
  for (const ValueRef& r : output_refs) {
    Tensor t = r.kind == ValueRef::Kind::Slot ? slots[r.index] : constants[r.index];
    if (t.defined() && t.storage() && constant_storage.count(t.storage().get())) t = t.clone();
    result.push_back(t);
  }
  return result;
}

}  // namespace ember::onnx
