// The inference-only convolution front-ends, which record no autograd node and fall
// back to conv2d (then relu) wherever they would: conv2d_relu (ReLU applied as
// each image's output is made) and conv2d_packed, the same with a weight laid out
// once for many calls (conv2d_pack_weight). An ONNX plan packs its constant
// weights at load (onnx/prepack.cpp), as ONNX Runtime does, so that the channel-lane
// tiles (kernels/cpu/conv2d_lanes_impl.h) serve every batch, batch 1 included,
// instead of only batches large enough to pay for packing on each call.
#include "kernels/cpu/conv2d.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/conv_args.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {

namespace {

// The kernels' description of a layer of this weight, stride and groups; the
// packing needs no input size.
Conv2dShape weight_shape(const Shape& weight, int64_t groups, Pair stride = {1, 1}) {
  Conv2dShape s;
  s.c_in = weight[1] * groups;
  s.c_out = weight[0];
  s.kh = weight[2];
  s.kw = weight[3];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.groups = groups;
  return s;
}

// The packed layout's shape: [groups, cog / bw, c_in/groups * kh * kw, bw], with cog
// = c_out/groups in blocks of bw (cpu::conv2d_pack_block).
Shape packed_shape(const Shape& w, int64_t groups) {
  const int64_t bw = cpu::conv2d_pack_block(weight_shape(w, groups));
  return {groups, w[0] / groups / bw, w[1] * w[2] * w[3], bw};
}

}  // namespace

Tensor conv2d_pack_weight(const Tensor& weight, Pair stride, int64_t groups) {
  if (weight.dim() != 4 || weight.dtype() != kFloat32 || !weight.device().is_cpu() || groups < 1 ||
      weight.size(0) % groups != 0 || weight.numel() == 0)
    return Tensor();
  const Conv2dShape s = weight_shape(weight.shape(), groups, stride);
  if (!cpu::conv2d_uses_packed_weight(DType::Float32, s)) return Tensor();
  Tensor packed = empty(packed_shape(weight.shape(), groups), {kFloat32, kCPU});
  const Tensor wc = weight.contiguous();
  cpu::conv2d_pack_weight(DType::Float32, s, wc.data_ptr(), packed.data_ptr());
  return packed;
}

Tensor conv2d_packed(const Tensor& x, const Tensor& weight, const Tensor& packed, const Tensor& bias, Pair stride,
                     Pair padding, Pair dilation, int64_t groups, bool relu) {
  // A float32 weight on the meta device beside its packed layout: the caller keeps
  // only the packed copy (an ONNX plan, onnx/prepack.cpp), and the values come
  // from it. (A meta weight of another dtype is conv2d's device error below.)
  const bool packed_only = packed.defined() && weight.device().is_meta() && weight.dtype() == kFloat32;
  const bool fits = weight.dim() == 4 && groups >= 1 && weight.size(0) % groups == 0;
  // A weight or groups conv2d rejects is its error; a packed tensor that cannot be
  // this weight's layout is this one. Both before anything reads packed.
  if (packed_only && !fits) check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);  // throws
  if (packed.defined() && fits) {
    const Shape want = packed_shape(weight.shape(), groups);
    if (packed.dtype() != kFloat32 || !packed.device().is_cpu() || !packed.is_contiguous() || packed.shape() != want)
      throw ValueError(msg("conv2d_packed: expected packed to be conv2d_pack_weight(weight, stride, groups), a "
                           "contiguous float32 cpu tensor of shape ", shape_str(want), ", but got a ",
                           packed.is_contiguous() ? "contiguous " : "non-contiguous ", packed.dtype(),
                           " tensor of shape ", shape_str(packed.shape()), " on ", packed.device()));
  }
  const DType dt = x.dtype();
  const bool cpu = x.device().is_cpu() && (weight.device().is_cpu() || packed_only) &&
                   (!bias.defined() || bias.device().is_cpu());
  const bool one_dtype = weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt);
  if (autocast::applies(autocast::Policy::lower, {&x, &weight, &bias}) || !cpu || !one_dtype ||
      (dt != kFloat32 && dt != kFloat64) || needs_grad({&x, &weight, &bias})) {
    // The ops apart; a packed-only weight is laid back out as [c_out][c_in/groups]
    // [kh][kw] for them ([groups][blocks][K][bw] -> [groups][blocks][bw][K]).
    const Tensor w = packed_only ? packed.permute({0, 1, 3, 2}).contiguous().reshape(weight.shape()) : weight;
    Tensor y = conv2d(x, w, bias, stride, padding, dilation, groups);
    return relu ? y.relu() : y;
  }
  check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  Tensor y = empty({s.n, s.c_out, s.h_out, s.w_out}, {dt, kCPU});
  if (y.numel() > 0) {
    // Given the packed weight, the kernels read it alone (kernels/cpu/conv2d.h); an
    // empty one (no input channels) has no data, and the kernels then read neither.
    const bool use_packed = packed.defined() && dt == kFloat32;
    const void* pw = use_packed ? packed.data_ptr() : nullptr;
    const Tensor xc = x.contiguous(), wc = use_packed ? Tensor() : weight.contiguous();
    const Tensor bc = bias.defined() ? bias.contiguous() : bias;
    cpu::conv2d_forward(dt, s, xc.data_ptr(), wc.defined() ? wc.data_ptr() : nullptr,
                        bc.defined() ? bc.data_ptr() : nullptr, y.data_ptr(), relu, pw);
  }
  return y;
}

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                   Pair dilation, int64_t groups) {
  return conv2d_packed(x, weight, Tensor(), bias, stride, padding, dilation, groups, true);
}

}  // namespace ember
