// onnx::save: an Ember function as an ONNX model, by tracing. One forward pass
// runs with autograd recording on and a RecordObserver installed; every op it
// records is lowered to ONNX nodes (export_ops.cpp), inputs become graph inputs
// and every other tensor an op read becomes an initializer. The model is then
// checked (the ONNX checker, strict shape inference) and, unless told not to,
// reloaded and run against the function on two sets of inputs: a trace only sees
// the ops that ran, so a value computed outside the recording (a comparison, an
// argmax, a detach) or a size that depends on the batch would otherwise be
// silently frozen into the file.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "ember_config.h"
#include "kernels/base/error.h"
#include "nn/module.h"
#include "nn/serialize/atomic_file.h"
#include "onnx/checker.h"
#include "onnx/export_graph.h"
#include "onnx/export_ops.h"
#include "onnx/export_trace.h"
#include "onnx/onnx.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/tensor_proto.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

constexpr int64_t kOpset = 17;
constexpr int64_t kIrVersion = 8;  // the IR version of opset 17

std::string name_at(const std::vector<std::string>& given, size_t i, const std::string& stem) {
  if (i < given.size() && !given[i].empty()) return given[i];
  return i == 0 ? stem : stem + "_" + std::to_string(i);
}

void describe(::onnx::ValueInfoProto* info, const std::string& name, const Tensor& t, bool batch_open) {
  info->set_name(name);
  auto* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(dtype_to_onnx(t.dtype()));
  auto* shape = type->mutable_shape();
  for (int64_t d = 0; d < t.dim(); ++d) {
    auto* dim = shape->add_dim();
    if (d == 0 && batch_open) dim->set_dim_param("batch");
    else dim->set_dim_value(t.shape()[d]);
  }
}

// The recorded nodes the outputs depend on (ops whose results go nowhere are not written).
std::unordered_set<const Node*> needed_nodes(const std::vector<Tensor>& outputs) {
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const Tensor& t : outputs)
    if (t.defined() && t.grad_fn()) stack.push_back(t.grad_fn().get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Edge& e : n->next)
      if (e.valid() && e.fn->op != OpId::AccumulateGrad) stack.push_back(e.fn.get());
  }
  return seen;
}

void check_examples(const std::vector<Tensor>& examples, const ExportOptions& options) {
  if (examples.empty()) throw ValueError("onnx::save: no example inputs");
  for (size_t i = 0; i < examples.size(); ++i) {
    const Tensor& x = examples[i];
    if (!x.defined()) throw ValueError(msg("onnx::save: example input ", i, " is undefined"));
    if (x.device().is_meta()) throw ValueError(msg("onnx::save: example input ", i, " is on the meta device (it has no values to trace)"));
    if (options.dynamic_batch && (x.dim() == 0 || x.shape()[0] != examples[0].shape()[0]))
      throw ValueError(msg("onnx::save: dynamic_batch needs every example input to have a dim 0 of one size; input ",
                           i, " has shape ", shape_str(x.shape()), " and input 0 has shape ",
                           shape_str(examples[0].shape())));
  }
}

// The second input the verification runs: other values (floats scaled and
// shifted), and with an open batch the example followed by those rows.
Tensor second_input(const Tensor& x, bool dynamic_batch) {
  NoGradGuard no_grad;
  Tensor other = is_floating(x.dtype()) ? x * -0.5 + 0.25 : x.clone();
  return dynamic_batch ? cat({x, other}, 0) : other;
}

// The largest amount by which `got` misses `want` beyond atol + rtol * |want|
// (0 when within); float16/bfloat16 results get a wider tolerance.
double excess(const Tensor& got, const Tensor& want) {
  NoGradGuard no_grad;
  const bool half = want.dtype() == kFloat16 || want.dtype() == kBFloat16;
  const double tol = half ? 1e-2 : 1e-4;
  Tensor a = got.cpu().to(kFloat64).contiguous(), b = want.detach().cpu().to(kFloat64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::isnan(pa[i]) || std::isnan(pb[i])) {
      if (std::isnan(pa[i]) != std::isnan(pb[i])) return INFINITY;
      continue;
    }
    if (pa[i] == pb[i]) continue;  // equal infinities
    worst = std::max(worst, std::abs(pa[i] - pb[i]) - (std::abs(pb[i]) * tol + tol));
  }
  return worst;
}

void compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::vector<std::string>& names,
             const std::string& which, const std::string& hint) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].shape() != want[i].shape())
      throw ValueError(msg("onnx::save: the exported graph does not reproduce the function on ", which, ": output '",
                           names[i], "' has shape ", shape_str(got[i].shape()), " instead of ",
                           shape_str(want[i].shape()), hint));
    if (const double e = excess(got[i], want[i]); e > 0)
      throw ValueError(msg("onnx::save: the exported graph does not reproduce the function on ", which, ": output '",
                           names[i], "' is off by ", e, " beyond the tolerance", hint));
  }
}

void verify(const std::string& bytes, const TracedFunction& fn, const std::vector<Tensor>& examples,
            const std::vector<Tensor>& traced, const std::vector<std::string>& out_names, const ExportOptions& options) {
  Model model = load_from_string(bytes, kCPU);
  compare(model.run(examples), traced, out_names, "the example inputs", "");
  const std::string hint =
      std::string("; the traced function likely computes a value outside autograd's recording (a comparison, "
                  "argmax, detach, integer arithmetic), which the trace freezes as a constant") +
      (options.dynamic_batch ? ", or depends on the batch size (export with dynamic_batch = false)" : "");
  std::vector<Tensor> inputs2;
  for (const Tensor& x : examples) inputs2.push_back(second_input(x, options.dynamic_batch));
  std::vector<Tensor> want;
  {
    NoGradGuard no_grad;
    want = fn(inputs2);
  }
  std::vector<Tensor> got;
  try {
    got = model.run(inputs2);
  } catch (const Error& e) {
    throw ValueError(msg("onnx::save: the exported graph fails on a second input: ", e.what(), hint));
  }
  compare(got, want, out_names, "a second input", hint);
}

// Renames value `from` to `to` wherever a node reads or writes it.
void rename(::onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  for (auto& node : *graph.mutable_node()) {
    for (auto& in : *node.mutable_input())
      if (in == from) in = to;
    for (auto& out : *node.mutable_output())
      if (out == from) out = to;
  }
}

bool is_node_output(const ::onnx::GraphProto& graph, const std::string& name) {
  for (const auto& node : graph.node())
    for (const auto& out : node.output())
      if (out == name) return true;
  return false;
}

}  // namespace

std::string save_to_string(const TracedFunction& fn, const std::vector<Tensor>& examples,
                           const std::vector<std::pair<std::string, Tensor>>& named, const ExportOptions& options) {
  check_examples(examples, options);
  std::vector<Tensor> inputs;
  for (const Tensor& x : examples) {
    Tensor t = x.detach();
    if (is_floating(t.dtype())) t.requires_grad_(true);
    inputs.push_back(t);
  }
  // Ops are recorded only when an input requires grad: the named floating
  // tensors (parameters, buffers) are made to for the trace, so that what is
  // computed from them alone is written as ops over named initializers too.
  struct Unflag {
    std::vector<Tensor> flagged;
    ~Unflag() {
      for (Tensor& t : flagged) t.requires_grad_(false);
    }
  } unflag;
  for (const auto& [name, t] : named)
    if (t.defined() && is_floating(t.dtype()) && !t.requires_grad() && !t.grad_fn()) {
      Tensor handle = t;
      handle.requires_grad_(true);
      unflag.flagged.push_back(handle);
    }
  Tracer tracer;
  std::vector<Tensor> outputs;
  {
    RecordObserverGuard observe(&tracer);
    EnableGradGuard grad;
    outputs = fn(inputs);
  }
  if (outputs.empty()) throw ValueError("onnx::save: the function returned no outputs");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined()) throw ValueError(msg("onnx::save: output ", i, " is undefined"));

  ::onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("ember");
  model.set_producer_version(EMBER_VERSION);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  auto& graph = *model.mutable_graph();
  graph.set_name("ember");

  GraphWriter g(&graph);
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < inputs.size(); ++i) in_names.push_back(name_at(options.input_names, i, "input"));
  for (size_t i = 0; i < outputs.size(); ++i) out_names.push_back(name_at(options.output_names, i, "output"));
  for (const auto& names : {in_names, out_names})
    for (const auto& n : names) g.reserve(n);
  for (const auto& [name, t] : named) g.reserve(name);
  ValueTable values(g, named);
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.bind(inputs[i], in_names[i]);
    describe(graph.add_input(), in_names[i], inputs[i], options.dynamic_batch);
  }

  const auto needed = needed_nodes(outputs);
  for (const TracedOp& op : tracer.ops)
    if (needed.count(op.node.get())) lower(op, g, values, options.dynamic_batch);

  const int64_t batch = examples[0].dim() > 0 ? examples[0].shape()[0] : -1;
  std::unordered_map<std::string, std::string> renamed;  // value -> the output name it was given
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string v = values.value(outputs[i]);
    // An op's result becomes the output under its name; an input, a constant or
    // a value already given out under another name goes through Identity.
    if (auto it = renamed.find(v); it != renamed.end()) {
      g.node("Identity", {it->second}, {out_names[i]});
    } else if (is_node_output(graph, v)) {
      rename(graph, v, out_names[i]);
      renamed.emplace(v, out_names[i]);
    } else {
      g.node("Identity", {v}, {out_names[i]});
    }
    const bool open = options.dynamic_batch && outputs[i].dim() > 0 && outputs[i].shape()[0] == batch;
    describe(graph.add_output(), out_names[i], outputs[i], open);
  }

  try {
    ::onnx::checker::check_model(model);
    ::onnx::ModelProto inferred = model;
    ::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(true, 1));
  } catch (const std::exception& e) {
    throw FormatError(msg("onnx::save: the ONNX checker rejects the exported graph: ", e.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw FormatError("onnx::save: the model does not serialize (protobuf limits a model file to 2 GiB)");
  if (options.verify) verify(bytes, fn, examples, outputs, out_names, options);
  return bytes;
}

void save(const TracedFunction& fn, const std::vector<Tensor>& examples,
          const std::vector<std::pair<std::string, Tensor>>& named, const std::string& path,
          const ExportOptions& options) {
  const std::string bytes = save_to_string(fn, examples, named, options);
  serialize::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void save(nn::Module& module, const std::vector<Tensor>& examples, const std::string& path,
          const ExportOptions& options) {
  if (examples.size() != 1)
    throw ValueError(msg("onnx::save: a Module's forward takes one input; got ", examples.size(), " example inputs"));
  // Eval mode for the trace (dropout off, batch norm on running statistics), as
  // PyTorch's exporter does; the caller's mode comes back however this ends.
  struct Restore {
    nn::Module& m;
    bool training;
    ~Restore() { m.train(training); }
  } restore{module, module.is_training()};
  module.eval();
  std::vector<std::pair<std::string, Tensor>> named = module.named_parameters();
  for (auto& b : module.named_buffers()) named.push_back(b);
  save([&module](const std::vector<Tensor>& in) { return std::vector<Tensor>{module.forward(in[0])}; }, examples,
       named, path, options);
}

}  // namespace ember::onnx
