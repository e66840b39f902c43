// Packing constant convolution weights once, at load. The stride-1 float32 Conv
// kernels with output channels in the vector lanes read the weight as [groups]
// [channel blocks][taps][channels] (kernels/cpu/conv2d_lanes_impl.h), not as ONNX
// stores it; packed per call, that pass only pays for itself from about six 14x14
// images (kernels/cpu/conv2d.cpp), so batch 1 ran on other kernels. A model's
// weights never change, so the plan packs each one here and hands it to the step
// as an extra input; the step's function passes it to conv2d_packed. Every
// stride-1 kernel path reads the packed copy (the grid tiles through strides), so
// a weight no other step reads, and no graph output, is then replaced by a meta
// tensor of its shape: the plan holds one copy, as ONNX Runtime frees an
// initializer it has pre-packed. (conv2d_packed lays it back out for the rare calls
// that run the ops apart: autograd, autocast.)
#include "onnx/prepack.h"

#include <map>
#include <set>
#include <utility>

#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

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

// Whether the step's function reads a packed weight: a Conv alone or fused with its
// Relu (conv2d_packed); the pooled block (conv2d_relu_pool2x2) has no use for one.
bool reads_packed(const Step& step) {
  if (step.op_type != "Conv" || step.inputs.size() < 2 || step.inputs.size() > 3) return false;
  for (const Step::FusedNode& f : step.fused)
    if (f.op_type != "Relu") return false;
  return true;
}

// Replaces each packed weight that only the steps given its packed copy read (as
// their weight, input 1) by a meta tensor of its shape: its values live on in the
// packed copy.
void drop_plain_copies(Plan& plan, const std::set<uint32_t>& packed_weights, const std::set<size_t>& packed_steps) {
  std::set<uint32_t> keep;
  for (const ValueRef& r : plan.output_refs)
    if (r.kind == ValueRef::Kind::Constant) keep.insert(r.index);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const std::vector<ValueRef>& in = plan.steps[i].inputs;
    for (size_t j = 0; j < in.size(); ++j)
      if (in[j].kind == ValueRef::Kind::Constant && !(j == 1 && packed_steps.count(i))) keep.insert(in[j].index);
  }
  for (uint32_t wi : packed_weights)
    if (!keep.count(wi)) plan.constants[wi] = empty(plan.constants[wi].shape(), {kFloat32, kMeta});
}

}  // namespace

size_t prepack_weights(Plan& plan) {
  if (plan.device != kCPU) return 0;
  NoGradGuard no_grad;
  std::map<std::pair<uint32_t, int64_t>, uint32_t> packed_of;  // (weight, groups) -> its packed constant
  std::set<uint32_t> packed_weights;
  std::set<size_t> packed_steps;
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    Step& step = plan.steps[si];
    if (!reads_packed(step) || step.inputs[1].kind != ValueRef::Kind::Constant) continue;
    const uint32_t wi = step.inputs[1].index;
    const Tensor& w = plan.constants[wi];
    const Pair stride = strides_of(step);
    const int64_t groups = step.int_attr("group", 1);
    if (w.dim() != 4 || stride != Pair{1, 1}) continue;
    auto it = packed_of.find({wi, groups});
    if (it == packed_of.end()) {
      Tensor packed = conv2d_pack_weight(w, stride, groups);
      if (!packed.defined()) continue;
      plan.constants.push_back(std::move(packed));
      it = packed_of.emplace(std::pair{wi, groups}, uint32_t(plan.constants.size() - 1)).first;
    }
    if (step.inputs.size() == 2) step.inputs.push_back({ValueRef::Kind::Absent, 0});
    step.inputs.push_back({ValueRef::Kind::Constant, it->second});
    packed_weights.insert(wi);
    packed_steps.insert(si);
  }
  drop_plain_copies(plan, packed_weights, packed_steps);
  return packed_of.size();
}

}  // namespace ember::onnx
