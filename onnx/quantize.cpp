// onnx::quantize_dynamic: a copy of a model's plan whose MatMul and Gemm steps
// with constant float32 weights run through quant's int8 Linear. The weight W
// ([out, in], as nn::Linear holds it) is B transposed for MatMul and for Gemm
// without transB; it is quantized per output channel, symmetric, exactly as
// quant::DynamicQuantizedLinear::from_float does, and packed once here.
#include "kernels/base/error.h"
#include "onnx/plan.h"
#include "quant/linear_int8.h"
#include "quant/qparams.h"
#include "quant/quantized_tensor.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

const Tensor* constant_input(const Plan& plan, const Step& step, size_t i) {
  if (i >= step.inputs.size() || step.inputs[i].kind != ValueRef::Kind::Constant) return nullptr;
  return &plan.constants[step.inputs[i].index];
}

// W [out, in] float32 -> the packed int8 Linear on `device`.
std::shared_ptr<const quant::PackedLinearInt8> pack(const Tensor& w_out_in, const Tensor& bias, Device device) {
  Tensor w = w_out_in.to(kCPU, kFloat32).contiguous();
  auto [scales, zero_points] = quant::choose_symmetric_qparams_per_channel(w, 0);
  quant::QuantizedTensor q = quant::quantize_per_channel(w, scales, zero_points, 0, kInt8);
  Tensor b = bias.defined() ? bias.to(kCPU, kFloat32).contiguous().to(device) : Tensor();
  return std::make_shared<const quant::PackedLinearInt8>(
      quant::pack_linear_int8(q.int_repr.to(device), q.scale.to(device), b));
}

}  // namespace

Model quantize_dynamic(const Model& model, size_t* rewritten) {
  if (!model.plan_) throw ValueError("onnx::quantize_dynamic: the model is empty (default-constructed, not loaded)");
  auto plan = std::make_shared<Plan>(*model.plan_);
  plan->memo = std::make_shared<ShapeMemo>();  // its own: steps are rewritten below
  NoGradGuard no_grad;
  size_t count = 0;
  for (Step& step : plan->steps) {
    const Tensor* b = constant_input(*plan, step, 1);
    if (!b || b->dtype() != kFloat32 || b->dim() != 2) continue;
    if (step.op_type == "MatMul" && step.fused.empty()) {
      auto packed = pack(b->t(), Tensor(), plan->device);
      step.fn = [packed](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{quant::linear_int8_dynamic(in[0], *packed, "MatMul")};
      };
    } else if (step.op_type == "Gemm") {
      // A Gemm step with a Relu fused into it (onnx/fuse.cpp) keeps its Relu.
      const bool relu = !step.fused.empty();
      if (relu && (step.fused.size() != 1 || step.fused[0].op_type != "Relu")) continue;
      if (step.int_attr("transA", 0) != 0 || step.float_attr("alpha", 1.0) != 1.0) continue;
      Tensor w = step.int_attr("transB", 0) ? *b : b->t();
      double beta = step.float_attr("beta", 1.0);
      // A constant 1-D C (the usual bias) goes into the packed Linear; any other C
      // is added after, scaled by beta.
      const Tensor* c = constant_input(*plan, step, 2);
      bool c_in_bias = c && beta == 1.0 && c->dtype() == kFloat32 && c->numel() == w.size(0) &&
                       (c->dim() == 1 || (c->dim() == 2 && c->size(0) == 1));
      auto packed = pack(w, c_in_bias ? c->reshape({w.size(0)}) : Tensor(), plan->device);
      step.fn = [packed, c_in_bias, beta, relu](const std::vector<Tensor>& in) {
        Tensor y = quant::linear_int8_dynamic(in[0], *packed, "Gemm");
        if (!c_in_bias && in.size() > 2 && in[2].defined() && beta != 0.0)
          y = add(y, beta == 1.0 ? in[2] : mul(in[2], beta));
        return std::vector<Tensor>{relu ? y.relu() : y};
      };
    } else {
      continue;
    }
    ++count;
  }
  if (rewritten) *rewritten = count;
  Model out;
  out.plan_ = plan;
  return out;
}

}  // namespace ember::onnx
