// Fusing a plan's steps: exporters write a convolution block as Conv -> Relu
// (-> MaxPool) and a hidden layer as Gemm -> Relu, and ONNX Runtime's quantizer writes
// each int8 layer's float end as MatMulInteger (or ConvInteger) -> Cast -> Mul ->
// Add (-> Relu): chains of steps that each allocate an output and make one more
// pass over it. At batch 1 that glue costs more than the arithmetic
// (docs/performance.md, the seed CNN's breakdown); at batch 1000 the passes do.
// Where nothing else reads the values between, the chain becomes one step that
// runs Ember's fused op: conv2d_relu or conv2d_relu_pool2x2 (ReLU, and the 2x2
// pooling, applied as the convolution's output is made), linear_relu (ReLU on the GEMM's
// output in place) or quant::dequantize_sums (the integer sums to floats in one
// pass). Each gives the values of the separate ops.
//
// What is fixed at load (the ops, their attributes, who reads what) is checked
// here; what depends on the inputs (ranks, auto_pad's padding, shapes, dtypes,
// devices) on every call, and a call the fused op does not cover runs the original
// steps one after the other, each naming its own node in errors.
#include "onnx/fuse.h"

#include "onnx/op_families.h"
#include "onnx/window.h"
#include "quant/dequantize_sums.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

// One original step, kept for calls the fused op does not cover. args: per input
// of the node, -1 for the value the previous part made, else the index of the
// fused step's input it reads.
struct Part {
  OpFn fn;
  std::string where;
  std::vector<int> args;
};

// Runs parts[from...] on the fused step's inputs `in`, starting from `value` (the
// outputs of parts[from - 1]; unused when from is 0).
std::vector<Tensor> run_parts(const std::vector<Part>& parts, const std::vector<Tensor>& in, size_t from = 0,
                              std::vector<Tensor> value = {}) {
  std::vector<Tensor> args;
  for (size_t i = from; i < parts.size(); ++i) {
    args.clear();
    for (int a : parts[i].args) args.push_back(a < 0 ? value.at(0) : in[size_t(a)]);
    if (i == 0) {  // the first node's errors: the fused step's own where
      value = parts[i].fn(args);
      continue;
    }
    try {
      value = parts[i].fn(args);
    } catch (const Error&) {
      rethrow_at(parts[i].where);
    }
  }
  return value;
}

const Attribute* attr(const Step& s, const char* name) {
  auto it = s.attrs.find(name);
  return it == s.attrs.end() ? nullptr : &it->second;
}

// An ints attribute equal to `want`, or absent (and then its default is `want`).
bool ints_are(const Step& s, const char* name, const std::vector<int64_t>& want, bool absent_ok) {
  const Attribute* a = attr(s, name);
  if (!a) return absent_ok;
  return a->kind == Attribute::Kind::Ints && a->ints == want;
}

// MaxPool with a 2x2 window of stride 2, no padding, no dilation, floor rounding
// and one output: what conv2d_relu_pool2x2 pools.
bool pools_2x2(const Step& s) {
  const Attribute* pad = attr(s, "auto_pad");
  const bool no_auto_pad = !pad || (pad->kind == Attribute::Kind::String && (pad->s == "NOTSET" || pad->s == "VALID"));
  return s.op_type == "MaxPool" && s.outputs.size() == 1 && no_auto_pad && ints_are(s, "kernel_shape", {2, 2}, false) &&
         ints_are(s, "strides", {2, 2}, false) && ints_are(s, "pads", {0, 0, 0, 0}, true) &&
         ints_are(s, "dilations", {1, 1}, true) && s.int_attr("ceil_mode", 0) == 0 &&
         s.int_attr("storage_order", 0) == 0;
}

// Conv -> Relu [-> MaxPool(2x2)]: one conv2d_relu (pool false) or
// conv2d_relu_pool2x2 when the convolution is 2-D with its padding the same on both
// sides (after auto_pad) and, with the pool, its output at least one window wide;
// the steps one by one otherwise.
OpFn conv_relu(const Step& conv, std::vector<Part> parts, bool pool) {
  NodeContext ctx;
  ctx.op_type = conv.op_type;
  ctx.attrs = conv.attrs;
  const WindowAttrs attrs = window_attrs(ctx);
  const std::optional<FixedWindow2d> fixed = fixed_window_2d(attrs);  // resolved once where it can be
  const int64_t groups = conv.int_attr("group", 1);
  const std::string where = conv.where;
  return [attrs, fixed, groups, where, pool, parts = std::move(parts)](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const Tensor& w = in[1];
    const Tensor b = in.size() > 2 ? in[2] : Tensor();
    const Tensor packed = in.size() > 3 ? in[3] : Tensor();  // onnx/prepack.cpp
    // The steps one by one. The Conv node gets the packed weight as well, its
    // values where the plan keeps no plain copy (w is then a meta tensor).
    auto apart = [&] {
      if (!packed.defined()) return run_parts(parts, in);
      return run_parts(parts, in, 1, parts[0].fn({x, w, b, packed}));
    };
    if (x.dim() != 4 || w.dim() != 4) return apart();
    Pair stride{}, pad{}, dilation{};
    if (fixed && w.size(2) == fixed->kernel[0] && w.size(3) == fixed->kernel[1]) {
      stride = fixed->stride, pad = fixed->pad, dilation = fixed->dilation;
    } else {
      const Shape kernel{w.size(2), w.size(3)};
      if (!attrs.kernel.empty() && attrs.kernel != kernel) return apart();
      const Window win = resolve_window(attrs, kernel, x, where);
      if (!win.symmetric()) return apart();
      stride = {win.stride[0], win.stride[1]}, pad = {win.pad_begin[0], win.pad_begin[1]};
      dilation = {win.dilation[0], win.dilation[1]};
    }
    // The output's size along spatial dim i; 0 when it is below one or the
    // attributes overflow (then the steps apart raise the Conv's own error).
    auto out_size = [&](int i) {
      int64_t span = 0, padded = 0, room = 0;
      if (__builtin_mul_overflow(dilation[i], w.size(i + 2) - 1, &span) ||
          __builtin_mul_overflow(pad[i], int64_t(2), &padded) || __builtin_add_overflow(x.size(i + 2), padded, &padded) ||
          __builtin_sub_overflow(padded, span + 1, &room))
        return int64_t(0);
      return room < 0 ? int64_t(0) : room / stride[i] + 1;
    };
    const int64_t least = pool ? 2 : 1;
    if (out_size(0) < least || out_size(1) < least) return apart();
    if (!pool) return std::vector<Tensor>{conv2d_packed(x, w, packed, b, stride, pad, dilation, groups, true)};
    return std::vector<Tensor>{conv2d_relu_pool2x2(x, w, b, stride, pad, dilation, groups)};
  };
}

// Gemm (transA 0, alpha 1, beta 1) -> Relu: linear_relu where gemm_as_linear
// takes the inputs (float32 or float64 matrices outside autocast, C absent or one
// value per output); the two steps otherwise.
OpFn gemm_relu(const Step& gemm, std::vector<Part> parts) {
  const bool tb = gemm.int_attr("transB", 0) != 0;
  return [tb, parts = std::move(parts)](const std::vector<Tensor>& in) {
    if (std::optional<Tensor> y = gemm_as_linear(in, tb, true)) return std::vector<Tensor>{std::move(*y)};
    return run_parts(parts, in);
  };
}

// MatMulInteger or ConvInteger -> Cast(float) -> Mul -> [Add] -> [Relu]: the
// integer op, then quant::dequantize_sums on its sums where it takes the scale and
// bias it is given (mul_arg, add_arg: their indices in the fused step's inputs; -1
// for no Add); the steps after the integer op one by one otherwise.
OpFn integer_epilogue(std::vector<Part> parts, int mul_arg, int add_arg, bool relu) {
  return [parts = std::move(parts), mul_arg, add_arg, relu](const std::vector<Tensor>& in) {
    const Part& integer_op = parts[0];  // reads the fused step's first inputs, in order
    std::vector<Tensor> sums = integer_op.fn({in.begin(), in.begin() + std::ptrdiff_t(integer_op.args.size())});
    const Tensor& scale = in[size_t(mul_arg)];
    const Tensor bias = add_arg >= 0 ? in[size_t(add_arg)] : Tensor();
    if (quant::dequantize_sums_in_one_pass(sums.at(0), scale, bias))
      return std::vector<Tensor>{quant::dequantize_sums(sums[0], scale, bias, relu)};
    return run_parts(parts, in, 1, std::move(sums));
  };
}

}  // namespace

size_t fuse_steps(Plan& plan) {
  // Who reads each slot: the number of step inputs naming it, plus 2 for a graph
  // output (which must stay a value of its own).
  std::vector<int> readers(plan.num_slots, 0);
  for (const Step& s : plan.steps)
    for (const ValueRef& r : s.inputs)
      if (r.kind == ValueRef::Kind::Slot) ++readers[r.index];
  for (const ValueRef& r : plan.output_refs)
    if (r.kind == ValueRef::Kind::Slot) readers[r.index] += 2;
  std::vector<int64_t> reader_of(plan.num_slots, -1);  // the step reading a slot that has one reader
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (const ValueRef& r : plan.steps[i].inputs)
      if (r.kind == ValueRef::Kind::Slot && readers[r.index] == 1) reader_of[r.index] = static_cast<int64_t>(i);

  std::vector<bool> dropped(plan.steps.size(), false);  // merged into a fused step already
  // The step of type `op` that alone reads `from`'s one output, and where among
  // its inputs it reads it; not one that an earlier chain took (its Add may read
  // this chain's value as its other operand).
  auto next = [&](size_t from, const char* op) -> std::pair<int64_t, size_t> {
    const Step& f = plan.steps[from];
    if (f.outputs.size() != 1 || f.outputs[0] < 0 || f.shape_only) return {-1, 0};
    const int64_t r = reader_of[static_cast<size_t>(f.outputs[0])];
    if (r < 0 || dropped[size_t(r)] || !plan.steps[size_t(r)].fused.empty()) return {-1, 0};
    if (plan.steps[size_t(r)].op_type != op || plan.steps[size_t(r)].shape_only) return {-1, 0};
    const Step& n = plan.steps[size_t(r)];
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k].kind == ValueRef::Kind::Slot && n.inputs[k].index == uint32_t(f.outputs[0])) return {r, k};
    return {-1, 0};
  };
  auto only_input = [&](size_t from, const char* op) -> int64_t {
    auto [r, k] = next(from, op);
    return r >= 0 && plan.steps[size_t(r)].inputs.size() == 1 ? r : -1;
  };

  size_t removed = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step& first = plan.steps[i];
    if (dropped[i] || !first.fused.empty() || first.shape_only) continue;
    const std::string& op = first.op_type;
    std::vector<size_t> chain{i};  // the steps merged, in order
    Step fused;
    fused.inputs = first.inputs;
    std::vector<Part> parts;
    auto part = [&](size_t s, std::vector<int> args) { parts.push_back({plan.steps[s].fn, plan.steps[s].where, std::move(args)}); };
    std::vector<int> own(first.inputs.size());
    for (size_t k = 0; k < own.size(); ++k) own[k] = int(k);
    if ((op == "Conv" || op == "Gemm") && first.inputs.size() >= 2 && first.inputs.size() <= 3) {
      const int64_t relu = only_input(i, "Relu");
      if (relu < 0) continue;
      part(i, own);
      part(size_t(relu), {-1});
      chain.push_back(size_t(relu));
      if (op == "Conv") {
        const int64_t pool = only_input(size_t(relu), "MaxPool");
        const bool pooled = pool >= 0 && pools_2x2(plan.steps[size_t(pool)]);
        if (pooled) {
          part(size_t(pool), {-1});
          chain.push_back(size_t(pool));
        }
        fused.fn = conv_relu(first, std::move(parts), pooled);
      } else {
        if (first.int_attr("transA", 0) != 0 || first.float_attr("alpha", 1.0) != 1.0 ||
            first.float_attr("beta", 1.0) != 1.0)
          continue;
        fused.fn = gemm_relu(first, std::move(parts));
      }
    } else if (op == "MatMulInteger" || op == "ConvInteger") {
      const int64_t cast = only_input(i, "Cast");
      if (cast < 0 || plan.steps[size_t(cast)].int_attr("to", 0) != 1) continue;  // to float32
      // Mul and Add broadcast as numpy does: no legacy broadcast/axis attributes.
      auto binary = [&](int64_t s) { return plan.steps[size_t(s)].inputs.size() == 2 && plan.steps[size_t(s)].attrs.empty(); };
      auto [mul, mul_at] = next(size_t(cast), "Mul");
      if (mul < 0 || !binary(mul)) continue;
      part(i, own);
      part(size_t(cast), {-1});
      chain.push_back(size_t(cast));
      const int mul_arg = int(fused.inputs.size());
      fused.inputs.push_back(plan.steps[size_t(mul)].inputs[1 - mul_at]);
      part(size_t(mul), mul_at == 0 ? std::vector<int>{-1, mul_arg} : std::vector<int>{mul_arg, -1});
      chain.push_back(size_t(mul));
      int add_arg = -1;
      if (auto [add, add_at] = next(size_t(mul), "Add"); add >= 0 && binary(add)) {
        add_arg = int(fused.inputs.size());
        fused.inputs.push_back(plan.steps[size_t(add)].inputs[1 - add_at]);
        part(size_t(add), add_at == 0 ? std::vector<int>{-1, add_arg} : std::vector<int>{add_arg, -1});
        chain.push_back(size_t(add));
      }
      const int64_t relu = only_input(chain.back(), "Relu");
      if (relu >= 0) {
        part(size_t(relu), {-1});
        chain.push_back(size_t(relu));
      }
      fused.fn = integer_epilogue(std::move(parts), mul_arg, add_arg, relu >= 0);
    } else {
      continue;
    }
    // The fused step takes the last step's place, where every input of the chain
    // has been made, and writes its output.
    const size_t last = chain.back();
    fused.outputs = plan.steps[last].outputs;
    fused.where = first.where;
    fused.op_type = first.op_type;
    fused.attrs = first.attrs;
    for (size_t k = 1; k < chain.size(); ++k) fused.fused.push_back({plan.steps[chain[k]].op_type, plan.steps[chain[k]].where});
    for (size_t k = 0; k + 1 < chain.size(); ++k) dropped[chain[k]] = true;
    removed += chain.size() - 1;
    plan.steps[last] = std::move(fused);
  }
  std::vector<Step> kept;
  kept.reserve(plan.steps.size() - removed);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (!dropped[i]) kept.push_back(std::move(plan.steps[i]));
  plan.steps = std::move(kept);
  return removed;
}

}  // namespace ember::onnx
