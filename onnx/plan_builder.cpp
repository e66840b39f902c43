// From a model file's bytes to a plan: parse the ModelProto, let the ONNX
// project's checker validate it, read the initializers, order the nodes by
// their dependencies (Kahn's algorithm, so a cycle or a dangling name is named
// rather than looped over), build each node's function through the op table,
// run the nodes whose inputs are all constants once, now, and keep the rest as
// steps, chains of them fused where Ember has the fused op (onnx/fuse.cpp). Finally, place the constants on the model's device and work out where
// each intermediate is read for the last time.
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kernels/base/error.h"
#include "onnx/checker.h"
#include "onnx/fuse.h"
#include "onnx/prepack.h"
#include "onnx/onnx_pb.h"
#include "onnx/plan.h"
#include "onnx/tensor_proto.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw FormatError(where + ": " + what); }

ValueInfo value_info(const ::onnx::ValueInfoProto& v, const std::string& where) {
  ValueInfo info;
  info.name = v.name();
  if (!v.type().has_tensor_type())
    throw NotImplementedError(where + ": graph value '" + v.name() + "' is not a tensor, which is not supported");
  const auto& tt = v.type().tensor_type();
  info.dtype = dtype_from_onnx(tt.elem_type(), where + ": graph value '" + v.name() + "'");
  info.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) bad(where, "graph value '" + v.name() + "' has a negative dimension");
      info.shape.emplace_back(d.dim_value());
    } else {
      info.shape.emplace_back(std::nullopt);
    }
    info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return info;
}

Attribute attribute(const ::onnx::AttributeProto& a, const std::string& where) {
  using AP = ::onnx::AttributeProto;
  Attribute out;
  switch (a.type()) {
    case AP::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
    case AP::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
    case AP::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
    case AP::TENSOR:
      out.kind = Attribute::Kind::Tensor;
      out.t = tensor_from_proto(a.t(), where + ": attribute '" + a.name() + "'", "");
      break;
    case AP::FLOATS:
      out.kind = Attribute::Kind::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AP::INTS: out.kind = Attribute::Kind::Ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AP::STRINGS: out.kind = Attribute::Kind::Strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    default: out.kind = Attribute::Kind::Other; break;
  }
  return out;
}

// Whether running a node with constant inputs at load is bounded work. The ops
// that make data out of shape values (ConstantOfShape, Expand, Tile, Range) could
// make load() fill gigabytes from a few bytes of model; above 16M elements they
// stay steps and run, like any op, when the model runs.
bool foldable(const NodeContext& ctx) {
  constexpr double kMaxFolded = 16.0 * 1024 * 1024;
  auto numel = [](const Tensor& t) { return static_cast<double>(t.numel()); };
  auto product = [](const Tensor& t) {
    if (t.dtype() != kInt64 && t.dtype() != kInt32) return 0.0;
    double p = 1;
    for (int64_t v : t.to(kInt64).contiguous().to_vector<int64_t>()) p *= static_cast<double>(v < 0 ? 0 : v);
    return p;
  };
  const Tensor* a = ctx.constant(0);
  const Tensor* b = ctx.constant(1);
  if (ctx.op_type == "ConstantOfShape") return a && product(*a) <= kMaxFolded;
  if (ctx.op_type == "Expand") return a && b && product(*b) * std::max(numel(*a), 1.0) <= kMaxFolded;
  if (ctx.op_type == "Tile") return a && b && product(*b) * numel(*a) <= kMaxFolded;
  if (ctx.op_type == "Range") {
    const Tensor* d = ctx.constant(2);
    if (!a || !b || !d || a->numel() != 1 || b->numel() != 1 || d->numel() != 1) return false;
    double start = a->to(kFloat64).item<double>(), limit = b->to(kFloat64).item<double>(),
           delta = d->to(kFloat64).item<double>();
    double count = (limit - start) / delta;
    return std::isfinite(count) && count <= kMaxFolded;
  }
  return true;
}

// Ops whose output shape depends on the values of their inputs after the first
// (a target shape, pads, axes, repeats, split sizes), or, for ConstantOfShape
// and Range, on the values of all of them. The output shape of any other op
// follows from its inputs' shapes.
bool shaped_by_values(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "ConstantOfShape", "Range", "Expand", "Pad", "Reshape", "Slice", "Split", "Squeeze", "Unsqueeze", "Tile",
      "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "ReduceSumSquare"};
  return ops.count(op) > 0;
}

// What a name in the graph refers to while building.
struct Value {
  ValueRef ref;
  bool constant() const { return ref.kind == ValueRef::Kind::Constant; }
};

}  // namespace

std::shared_ptr<const Plan> build_plan(const std::string& bytes, Device device, const std::string& folder,
                                       const std::string& where, bool from_file) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) bad(where, "not an ONNX model (the protobuf message does not parse)");
  // Where initializers keep their data elsewhere, the location is checked here
  // first: the checker would otherwise look for the file itself.
  for (const auto& init : model.graph().initializer())
    if (init.data_location() == ::onnx::TensorProto::EXTERNAL)
      check_external_location(init, where + ": initializer '" + init.name() + "'", folder);
  try {
    // The checker resolves external data against the model's folder only when it
    // reads the file itself.
    if (from_file) ::onnx::checker::check_model(where);
    else ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    bad(where, std::string("the ONNX checker rejects the model: ") + e.what());
  }
  auto plan = std::make_shared<Plan>();
  plan->device = device;
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") plan->opset = op.version();
  // A model of other domains only (training ops, ML ops) has opset 0 here; its
  // nodes are refused one by one as ops of a domain Ember does not run.
  const auto& graph = model.graph();

  std::unordered_map<std::string, Value> values;
  auto add_constant = [&](const std::string& name, Tensor t) {
    plan->constants.push_back(std::move(t));
    values[name] = Value{{ValueRef::Kind::Constant, static_cast<uint32_t>(plan->constants.size() - 1)}};
  };
  for (const auto& init : graph.initializer()) {
    if (init.name().empty()) bad(where, "an initializer has no name");
    if (values.count(init.name())) bad(where, "initializer '" + init.name() + "' is defined twice");
    add_constant(init.name(), tensor_from_proto(init, where + ": initializer '" + init.name() + "'", folder));
  }
  if (graph.sparse_initializer_size()) throw NotImplementedError(where + ": sparse initializers are not supported");
  std::vector<bool> shape_only_slot;   // per slot: computed from the input shapes alone (Step::shape_only)
  std::vector<bool> shape_known_slot;  // per slot: its shape (not its values) follows from the input shapes
  // Graph inputs; one that has an initializer (older exporters list weights as
  // inputs) is a constant, not something the caller passes.
  for (const auto& in : graph.input()) {
    if (values.count(in.name())) continue;
    ValueInfo info = value_info(in, where);
    uint32_t slot = static_cast<uint32_t>(plan->num_slots++);
    values[in.name()] = Value{{ValueRef::Kind::Slot, slot}};
    shape_only_slot.push_back(false);
    shape_known_slot.push_back(true);
    plan->inputs.push_back(info);
    plan->input_slots.push_back(slot);
  }

  // Order the nodes: a node is ready once every input it names is defined.
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : graph.node(i).output()) {
      if (o.empty()) continue;
      if (values.count(o) || producer.count(o)) bad(where, "value '" + o + "' is defined more than once");
      producer[o] = i;
    }
  std::vector<int> waiting(static_cast<size_t>(n), 0);
  std::unordered_map<std::string, std::vector<int>> readers;
  for (int i = 0; i < n; ++i)
    for (const auto& name : graph.node(i).input()) {
      if (name.empty() || values.count(name)) continue;
      if (!producer.count(name))
        bad(where, "node '" + graph.node(i).name() + "' (" + graph.node(i).op_type() + ") reads '" + name +
                       "', which no node, input or initializer defines");
      ++waiting[static_cast<size_t>(i)];
      readers[name].push_back(i);
    }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i)
    if (!waiting[static_cast<size_t>(i)]) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (const auto& o : graph.node(i).output())
      for (int r : readers[o])
        if (--waiting[static_cast<size_t>(r)] == 0) ready.push_back(r);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (waiting[static_cast<size_t>(i)])
        bad(where, "the graph has a cycle through node '" + graph.node(i).name() + "' (" + graph.node(i).op_type() + ")");
  }

  // Build each node; fold the ones whose inputs are all constants.
  NoGradGuard no_grad;
  for (int i : order) {
    const auto& node = graph.node(i);
    NodeContext ctx;
    ctx.op_type = node.op_type();
    ctx.name = node.name().empty() ? std::string("#") + std::to_string(i) : node.name();
    ctx.opset = plan->opset;
    ctx.device = device;
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      throw NotImplementedError("ONNX op '" + node.op_type() + "' of domain '" + node.domain() + "' (node '" +
                                ctx.name + "') is not supported");
    const OpRow* row = find_op(node.op_type());
    if (!row) ctx.unsupported("the op");
    for (const auto& a : node.attribute()) ctx.attrs[a.name()] = attribute(a, where + ": node '" + ctx.name + "'");
    std::vector<ValueRef> refs;
    bool all_constant = true;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        refs.push_back({ValueRef::Kind::Absent, 0});
        ctx.present.push_back(false);
        ctx.constants.emplace_back(std::nullopt);
        continue;
      }
      const Value& v = values.at(name);
      refs.push_back(v.ref);
      ctx.present.push_back(true);
      if (v.constant()) ctx.constants.emplace_back(plan->constants[v.ref.index]);
      else {
        ctx.constants.emplace_back(std::nullopt);
        all_constant = false;
      }
    }
    ctx.num_outputs = static_cast<size_t>(node.output_size());
    OpFn fn = row->build(ctx);
    if (all_constant && foldable(ctx)) {
      std::vector<Tensor> args;
      for (const auto& c : ctx.constants) args.push_back(c ? *c : Tensor());
      std::vector<Tensor> outs;
      try {
        outs = fn(args);
      } catch (const Error&) {
        rethrow_at(ctx.where());
      }
      if (outs.size() < static_cast<size_t>(node.output_size()))
        bad(where, ctx.where() + " computed " + std::to_string(outs.size()) + " outputs but declares " +
                       std::to_string(node.output_size()));
      for (int j = 0; j < node.output_size(); ++j)
        if (!node.output(j).empty()) add_constant(node.output(j), outs[static_cast<size_t>(j)].contiguous());
      continue;
    }
    Step step;
    // Shape-only: Shape or Size of a value whose shape follows from the input
    // shapes, or an op reading only constants and shape-only values.
    bool reads_shape_only = false, reads_data = false, args_shape_only = true, all_known = true;
    for (size_t k = 0; k < refs.size(); ++k) {
      if (refs[k].kind != ValueRef::Kind::Slot) continue;
      const bool so = shape_only_slot[refs[k].index];
      (so ? reads_shape_only : reads_data) = true;
      if (k > 0) args_shape_only &= so;
      all_known &= shape_known_slot[refs[k].index];
    }
    const bool first_known = !refs.empty() && (refs[0].kind != ValueRef::Kind::Slot || shape_known_slot[refs[0].index]);
    step.shape_only = ((ctx.op_type == "Shape" || ctx.op_type == "Size") && all_known) ||
                      (reads_shape_only && !reads_data);
    const bool by_all_values = ctx.op_type == "ConstantOfShape" || ctx.op_type == "Range";
    const bool out_known = step.shape_only || (by_all_values              ? !reads_data
                                               : shaped_by_values(ctx.op_type) ? first_known && args_shape_only
                                                                               : all_known);
    step.fn = std::move(fn);
    step.inputs = std::move(refs);
    step.where = ctx.where();
    step.op_type = ctx.op_type;
    step.attrs = ctx.attrs;
    for (const auto& o : node.output()) {
      if (o.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      uint32_t slot = static_cast<uint32_t>(plan->num_slots++);
      values[o] = Value{{ValueRef::Kind::Slot, slot}};
      shape_only_slot.push_back(step.shape_only);
      shape_known_slot.push_back(out_known);
      step.outputs.push_back(slot);
    }
    plan->steps.push_back(std::move(step));
  }

  for (const auto& out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) bad(where, "graph output '" + out.name() + "' is not defined by any node");
    ValueInfo info = value_info(out, where);
    plan->outputs.push_back(info);
    plan->output_refs.push_back(it->second.ref);
  }

  fuse_steps(*plan);

  // Release each slot after its last reader; graph outputs are never released.
  std::vector<int64_t> last(plan->num_slots, -1);
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (const auto& r : plan->steps[s].inputs)
      if (r.kind == ValueRef::Kind::Slot) last[r.index] = static_cast<int64_t>(s);
  for (const auto& r : plan->output_refs)
    if (r.kind == ValueRef::Kind::Slot) last[r.index] = -2;
  for (size_t slot = 0; slot < last.size(); ++slot)
    if (last[slot] >= 0) plan->steps[static_cast<size_t>(last[slot])].release.push_back(static_cast<uint32_t>(slot));
  // Steps whose outputs nobody reads drop them at once.
  for (auto& step : plan->steps)
    for (int64_t& o : step.outputs)
      if (o >= 0 && last[static_cast<size_t>(o)] == -1) o = -1;

  // Floating-point constants (weights) live on the model's device; integer and
  // bool ones (shapes, axes, indices) stay on the host, where the ops that read
  // them as numbers need them.
  if (device != kCPU)
    for (auto& c : plan->constants)
      if (is_floating(c.dtype())) c = c.to(device);
  prepack_weights(*plan);
  plan->finish();
  return plan;
}

}  // namespace ember::onnx
