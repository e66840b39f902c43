// Each Ember op as the ONNX nodes that compute it (opset 17). Most are one node
// with attributes from the op's recorded OpAttrs; a few are short compositions
// (gelu through Erf, rsqrt, var). Inputs are converted to the dtype the op
// computes in, as Ember's type promotion does, because ONNX ops take one type.
#include "onnx/export_ops.h"

#include <cmath>
#include <limits>

#include "kernels/base/error.h"
#include "tensor/checks.h"
#include "tensor/ops.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {

namespace {

struct Lowering {
  const TracedOp& op;
  GraphWriter& g;
  ValueTable& values;
  bool dynamic_batch;

  const Node& node() const { return *op.node; }
  DType out_dtype(size_t i = 0) const { return node().outputs.at(i).dtype; }
  const Shape& out_shape(size_t i = 0) const { return node().outputs.at(i).shape; }
  // Input i as a graph value in the op's result dtype (or its own dtype).
  std::string in(size_t i) { return values.value(op.inputs.at(i), out_dtype()); }
  std::string in_own(size_t i) { return values.value(op.inputs.at(i)); }
  // "AddBackward0" -> a fresh "Add", "Add_2", ...
  std::string out_name() {
    const std::string name = node().name();
    return g.fresh(name.substr(0, name.find("Backward")));
  }
  // Binds output 0 to `name`.
  void result(const std::string& name) { values.bind(op.outputs.at(0), name); }
  // One node `type` over `inputs`, its output bound as the op's result.
  ::onnx::NodeProto* emit(const std::string& type, const std::vector<std::string>& inputs) {
    auto* n = g.node(type, inputs, {out_name()});
    result(n->output(0));
    return n;
  }
  std::string scalar(double v) { return g.scalar(v, out_dtype()); }
  [[noreturn]] void refuse(const std::string& why) {
    throw NotImplementedError(msg("onnx::save: ", why, " (", node().name(), ") cannot be exported"));
  }

  void unary(OpId id);
  void binary(OpId id);
  void reduce(OpId id);
  void view(OpId id);
  void layer(OpId id);
  void run();
};

// ONNX op types of the elementwise rows that are one node each.
const char* onnx_unary(OpId id) {
  switch (id) {
    case OpId::Neg: return "Neg";
    case OpId::Abs: return "Abs";
    case OpId::Relu: return "Relu";
    case OpId::Exp: return "Exp";
    case OpId::Log: return "Log";
    case OpId::Sqrt: return "Sqrt";
    case OpId::Sin: return "Sin";
    case OpId::Cos: return "Cos";
    case OpId::Tanh: return "Tanh";
    case OpId::Sigmoid: return "Sigmoid";
    case OpId::Softplus: return "Softplus";
    case OpId::Erf: return "Erf";
    default: return nullptr;
  }
}

const char* onnx_binary(OpId id) {
  switch (id) {
    case OpId::Add: return "Add";
    case OpId::Sub: return "Sub";
    case OpId::Mul: return "Mul";
    case OpId::Div: return "Div";
    case OpId::Pow: return "Pow";
    case OpId::Maximum: return "Max";
    case OpId::Minimum: return "Min";
    default: return nullptr;
  }
}

void Lowering::unary(OpId id) {
  const std::string x = in(0);
  if (const char* type = onnx_unary(id)) {
    emit(type, {x});
  } else if (id == OpId::Rsqrt) {
    emit("Reciprocal", {g.op("Sqrt", {x})});
  } else {  // Gelu, the exact form: x * 0.5 * (1 + erf(x / sqrt(2)))
    const std::string e = g.op("Erf", {g.op("Div", {x, scalar(std::sqrt(2.0))})});
    const std::string half = g.op("Mul", {g.op("Add", {e, scalar(1.0)}), scalar(0.5)});
    emit("Mul", {x, half});
  }
}

void Lowering::binary(OpId id) { emit(onnx_binary(id), {in(0), in(1)}); }

void Lowering::reduce(OpId id) {
  const std::string x = in(0);
  if (id == OpId::MaxDim || id == OpId::MinDim) {
    const auto& a = node().attrs_as<DimAttrs>();
    if (op.inputs[0].dim() == 0) {  // a 0-d input: nothing to reduce
      emit("Identity", {x});
      return;
    }
    auto* n = emit(id == OpId::MaxDim ? "ReduceMax" : "ReduceMin", {x});
    set_attr(n, "axes", std::vector<int64_t>{a.dim});
    set_attr(n, "keepdims", static_cast<int64_t>(a.keepdim));
    return;
  }
  const auto& a = node().attrs_as<ReduceAttrs>();
  if (a.dims.empty()) {  // a 0-d input: nothing to reduce
    emit("Identity", {x});
    return;
  }
  const int64_t keep = a.keepdim;
  switch (id) {
    case OpId::Sum: set_attr(emit("ReduceSum", {x, g.ints(a.dims)}), "keepdims", keep); return;
    case OpId::Mean:
    case OpId::Amax:
    case OpId::Amin: {
      auto* n = emit(id == OpId::Mean ? "ReduceMean" : id == OpId::Amax ? "ReduceMax" : "ReduceMin", {x});
      set_attr(n, "axes", a.dims);
      set_attr(n, "keepdims", keep);
      return;
    }
    case OpId::Norm: {
      if (a.p != 1 && a.p != 2) refuse(msg("norm with p=", a.p));
      auto* n = emit(a.p == 1 ? "ReduceL1" : "ReduceL2", {x});
      set_attr(n, "axes", a.dims);
      set_attr(n, "keepdims", keep);
      return;
    }
    case OpId::Var: {
      // Two passes as written: sum((x - mean)^2) / (count - correction).
      auto* m = g.node("ReduceMean", {x}, {g.fresh("mean")});
      set_attr(m, "axes", a.dims);
      set_attr(m, "keepdims", int64_t{1});
      const std::string d = g.op("Sub", {x, m->output(0)});
      auto* s = g.node("ReduceSum", {g.op("Mul", {d, d}), g.ints(a.dims)}, {g.fresh("sum_sq")});
      set_attr(s, "keepdims", keep);
      int64_t count = 1;
      for (int64_t dim : a.dims) count *= op.inputs[0].shape()[dim];
      emit("Div", {s->output(0), scalar(static_cast<double>(count - a.correction))});
      return;
    }
    default: break;
  }
}

void Lowering::view(OpId id) {
  const Tensor& x = op.inputs[0];
  const std::string xv = in_own(0);
  const Shape& out = out_shape();
  switch (id) {
    case OpId::View: {
      // Dim 0 written as 0 ("as in the input") keeps an open batch size open.
      Shape shape = out;
      bool has_zero = false;
      for (int64_t d : out) has_zero |= d == 0;
      if (dynamic_batch && !has_zero && !out.empty() && x.dim() > 0 && out[0] == x.shape()[0]) shape[0] = 0;
      auto* n = emit("Reshape", {xv, g.ints(shape)});
      if (has_zero) set_attr(n, "allowzero", int64_t{1});
      return;
    }
    case OpId::Permute: set_attr(emit("Transpose", {xv}), "perm", node().attrs_as<PermuteAttrs>().dims); return;
    case OpId::Expand: {
      // A dim the input already has at full size is written as 1, which ONNX's
      // broadcasting Expand keeps as the input's (open) size.
      Shape shape = out;
      const size_t lead = out.size() - static_cast<size_t>(x.dim());
      for (size_t i = lead; i < out.size(); ++i)
        if (x.shape()[i - lead] == out[i]) shape[i] = 1;
      emit("Expand", {xv, g.ints(shape)});
      return;
    }
    case OpId::Slice: {
      const auto& a = node().attrs_as<SliceAttrs>();
      const int64_t len = out[a.dim], size = x.shape()[a.dim];
      int64_t end = a.start + a.step * (len - 1) + 1;
      if (len == 0) end = a.start;
      else if (a.start + a.step * len >= size) end = std::numeric_limits<int64_t>::max();  // to the end
      emit("Slice", {xv, g.ints({a.start}), g.ints({end}), g.ints({a.dim}), g.ints({a.step})});
      return;
    }
    case OpId::Select: {
      const auto& a = node().attrs_as<SelectAttrs>();
      const std::string index = g.initializer(full({}, a.index, {kInt64, kCPU}), "index");
      set_attr(emit("Gather", {xv, index}), "axis", a.dim);
      return;
    }
    default: break;
  }
}

void Lowering::layer(OpId id) {
  switch (id) {
    case OpId::Conv2d:
    case OpId::Conv2dReluPool: {  // the fused op as the three nodes it stands for
      const auto& a = node().attrs_as<Conv2dAttrs>();
      const Tensor& w = op.inputs[1];
      const bool fused = id == OpId::Conv2dReluPool;
      std::vector<std::string> inputs{in(0), in(1)};
      if (a.has_bias) inputs.push_back(in(2));
      auto* n = fused ? g.node("Conv", inputs, {g.fresh("Conv")}) : emit("Conv", inputs);
      set_attr(n, "kernel_shape", std::vector<int64_t>{w.shape()[2], w.shape()[3]});
      set_attr(n, "strides", std::vector<int64_t>{a.stride[0], a.stride[1]});
      set_attr(n, "pads", std::vector<int64_t>{a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
      set_attr(n, "dilations", std::vector<int64_t>{a.dilation[0], a.dilation[1]});
      set_attr(n, "group", a.groups);
      if (!fused) return;
      auto* relu = g.node("Relu", {n->output(0)}, {g.fresh("Relu")});
      auto* pool = emit("MaxPool", {relu->output(0)});
      set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
      set_attr(pool, "strides", std::vector<int64_t>{2, 2});
      return;
    }
    case OpId::Linear: {  // Gemm with a transposed B, and the Relu of linear_relu
      const auto& a = node().attrs_as<LinearAttrs>();
      std::vector<std::string> inputs{in(0), in(1)};
      if (a.has_bias) inputs.push_back(in(2));
      auto* n = a.relu ? g.node("Gemm", inputs, {g.fresh("Gemm")}) : emit("Gemm", inputs);
      set_attr(n, "transB", int64_t{1});
      if (a.relu) emit("Relu", {n->output(0)});
      return;
    }
    case OpId::MaxPool2d: {
      const auto& a = node().attrs_as<MaxPool2dAttrs>();
      auto* n = emit("MaxPool", {in(0)});
      set_attr(n, "kernel_shape", std::vector<int64_t>{a.kernel[0], a.kernel[1]});
      set_attr(n, "strides", std::vector<int64_t>{a.stride[0], a.stride[1]});
      set_attr(n, "pads", std::vector<int64_t>{a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
      set_attr(n, "dilations", std::vector<int64_t>{a.dilation[0], a.dilation[1]});
      set_attr(n, "ceil_mode", static_cast<int64_t>(a.ceil_mode));
      return;
    }
    case OpId::AvgPool2d: {
      const auto& a = node().attrs_as<AvgPool2dAttrs>();
      if (a.divisor_override) refuse("avg_pool2d with divisor_override");
      auto* n = emit("AveragePool", {in(0)});
      set_attr(n, "kernel_shape", std::vector<int64_t>{a.kernel[0], a.kernel[1]});
      set_attr(n, "strides", std::vector<int64_t>{a.stride[0], a.stride[1]});
      set_attr(n, "pads", std::vector<int64_t>{a.padding[0], a.padding[1], a.padding[0], a.padding[1]});
      set_attr(n, "ceil_mode", static_cast<int64_t>(a.ceil_mode));
      set_attr(n, "count_include_pad", static_cast<int64_t>(a.count_include_pad));
      return;
    }
    case OpId::LayerNorm: {
      const auto& a = node().attrs_as<LayerNormAttrs>();
      const std::string scale = a.has_weight ? in(1) : g.initializer(ones(a.normalized_shape, {out_dtype(), kCPU}), "ones");
      auto* n = emit("LayerNormalization", {in(0), scale, op.inputs[2].defined() ? in(2) : std::string()});
      if (!op.inputs[2].defined()) n->mutable_input()->RemoveLast();
      set_attr(n, "axis", -static_cast<int64_t>(a.normalized_shape.size()));
      set_attr(n, "epsilon", static_cast<float>(a.eps));
      return;
    }
    case OpId::Pad: {
      const auto& a = node().attrs_as<PadAttrs>();
      std::vector<int64_t> pads(2 * a.pads.size());
      for (size_t d = 0; d < a.pads.size(); ++d) pads[d] = a.pads[d][0], pads[d + a.pads.size()] = a.pads[d][1];
      if (a.mode == PadMode::Constant) {
        set_attr(emit("Pad", {in(0), g.ints(pads), scalar(a.value)}), "mode", std::string("constant"));
      } else {
        set_attr(emit("Pad", {in(0), g.ints(pads)}), "mode", std::string(a.mode == PadMode::Reflect ? "reflect" : "edge"));
      }
      return;
    }
    case OpId::Softmax:
    case OpId::LogSoftmax:
      set_attr(emit(id == OpId::Softmax ? "Softmax" : "LogSoftmax", {in(0)}), "axis",
               node().attrs_as<DimAttrs>().dim);
      return;
    default: break;
  }
}

void Lowering::run() {
  const OpId id = node().op;
  switch (id) {
#define EMBER_X(Name, ...) case OpId::Name:
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
    return unary(id);
#define EMBER_X(Name, ...) case OpId::Name:
    EMBER_ARITH_OPS(EMBER_X)
#undef EMBER_X
    return binary(id);
    case OpId::Where: {
      const std::string cond = values.value(node().saved_tensor("condition"), kBool);
      emit("Where", {cond, in(0), in(1)});
      return;
    }
    case OpId::Sum: case OpId::Mean: case OpId::Var: case OpId::Norm: case OpId::Amax: case OpId::Amin:
    case OpId::MaxDim: case OpId::MinDim:
      return reduce(id);
    case OpId::Softmax: case OpId::LogSoftmax: case OpId::Conv2d: case OpId::MaxPool2d: case OpId::AvgPool2d:
    case OpId::Conv2dReluPool: case OpId::Linear:
    case OpId::LayerNorm: case OpId::Pad:
      return layer(id);
    case OpId::View: case OpId::Permute: case OpId::Expand: case OpId::Slice: case OpId::Select:
      return view(id);
    case OpId::Matmul: emit("MatMul", {in(0), in(1)}); return;
    case OpId::Cat: {
      std::vector<std::string> parts;
      for (size_t i = 0; i < op.inputs.size(); ++i) parts.push_back(in(i));
      set_attr(emit("Concat", parts), "axis", node().attrs_as<DimAttrs>().dim);
      return;
    }
    case OpId::ToCopy:  // a dtype change is a Cast; a device move is nothing in a graph
    case OpId::Clone:
      if (op.inputs[0].dtype() == out_dtype()) emit("Identity", {in_own(0)});
      else set_attr(emit("Cast", {in_own(0)}), "to", static_cast<int64_t>(dtype_to_onnx(out_dtype())));
      return;
    case OpId::Take: {
      const std::string index = values.value(node().saved_tensor("given_index"), kInt64);
      set_attr(emit("Gather", {in_own(0), index}), "axis", node().attrs_as<DimAttrs>().dim);
      return;
    }
    case OpId::CrossEntropy:
    case OpId::NllLoss:
      refuse("a loss");
    case OpId::AccumulateGrad: break;
  }
  refuse("this op");
}

}  // namespace

void lower(const TracedOp& op, GraphWriter& g, ValueTable& values, bool dynamic_batch) {
  Lowering{op, g, values, dynamic_batch}.run();
}

}  // namespace ember::onnx
