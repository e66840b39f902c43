// Packing constant convolution weights once, at load. The stride-1 float32 Conv
// kernels with output channels in the vector lanes read the weight as [groups][taps]
// [channels] (kernels/cpu/conv2d_lanes_impl.h), not as ONNX stores it; packed per
// call, that pass only pays for itself from about six 14x14 images
// (kernels/cpu/conv2d.cpp), so batch 1 ran on other kernels. A model's weights
// never change, so the plan packs each one here and hands it to the step as an
// extra input; the step's function passes it to conv2d_packed. The plan keeps both
// layouts: calls whose output rows are too narrow for the lane tiles, and a fused
// step's fallback to its nodes one by one, read the original.
#include "onnx/prepack.h"

#include "tensor/graph.h"
#include "tensor/nn_ops.h"

namespace ember::onnx {

namespace {

// The step's strides: 1 x 1 unless its attribute says otherwise (an absent or
// malformed one is the op's own business when it runs).
Pair strides_of(const Step& step) {
  auto it = step.attrs.find("strides");
  if (it == step.attrs.end()) return {1, 1};
  const Attribute& a = it->second;
  if (a.kind != Attribute::Kind::Ints || a.ints.size() != 2) return {0, 0};
  return {a.ints[0], a.ints[1]};
}

}  // namespace

size_t prepack_weights(Plan& plan) {
  if (plan.device != kCPU) return 0;
  NoGradGuard no_grad;
  size_t packed_count = 0;
  for (Step& step : plan.steps) {
    if (step.op_type != "Conv" || step.inputs.size() < 2 || step.inputs.size() > 3) continue;
    if (step.inputs[1].kind != ValueRef::Kind::Constant) continue;
    const Tensor& w = plan.constants[step.inputs[1].index];
    const Pair stride = strides_of(step);
    if (w.dim() != 4 || stride != Pair{1, 1}) continue;
    Tensor packed = conv2d_pack_weight(w, stride, step.int_attr("group", 1));
    if (!packed.defined()) continue;
    plan.constants.push_back(std::move(packed));
    if (step.inputs.size() == 2) step.inputs.push_back({ValueRef::Kind::Absent, 0});
    step.inputs.push_back({ValueRef::Kind::Constant, uint32_t(plan.constants.size() - 1)});
    ++packed_count;
  }
  return packed_count;
}

}  // namespace ember::onnx
