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
Conv2dShape weight_shape(const Tensor& weight, Pair stride, int64_t groups) {
  Conv2dShape s;
  s.c_in = weight.size(1) * groups;
  s.c_out = weight.size(0);
  s.kh = weight.size(2);
  s.kw = weight.size(3);
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.groups = groups;
  return s;
}

// The packed layout's shape: [groups, c_in/groups * kh * kw, c_out/groups].
Shape packed_shape(const Shape& w, int64_t groups) { return {groups, w[1] * w[2] * w[3], w[0] / groups}; }

}  // namespace

Tensor conv2d_pack_weight(const Tensor& weight, Pair stride, int64_t groups) {
  if (weight.dim() != 4 || weight.dtype() != kFloat32 || !weight.device().is_cpu() || groups < 1 ||
      weight.size(0) % groups != 0 || weight.numel() == 0)
    return Tensor();
  const Conv2dShape s = weight_shape(weight, stride, groups);
  if (!cpu::conv2d_uses_packed_weight(DType::Float32, s)) return Tensor();
  Tensor packed = empty(packed_shape(weight.shape(), groups), {kFloat32, kCPU});
  const Tensor wc = weight.contiguous();
  cpu::conv2d_pack_weight(DType::Float32, s, wc.data_ptr(), packed.data_ptr());
  return packed;
}

Tensor conv2d_packed(const Tensor& x, const Tensor& weight, const Tensor& packed, const Tensor& bias, Pair stride,
                     Pair padding, Pair dilation, int64_t groups, bool relu) {
  // A weight or groups conv2d rejects is its error, below; a packed tensor that
  // cannot be this weight's layout is this one.
  if (packed.defined() && weight.dim() == 4 && groups >= 1 && weight.size(0) % groups == 0) {
    const Shape want = packed_shape(weight.shape(), groups);
    if (packed.dtype() != kFloat32 || !packed.device().is_cpu() || !packed.is_contiguous() || packed.shape() != want)
      throw ValueError(msg("conv2d_packed: expected packed to be conv2d_pack_weight(weight, stride, groups), a "
                           "contiguous float32 cpu tensor of shape ", shape_str(want), ", but got a ",
                           packed.is_contiguous() ? "contiguous " : "non-contiguous ", packed.dtype(),
                           " tensor of shape ", shape_str(packed.shape()), " on ", packed.device()));
  }
  const DType dt = x.dtype();
  const bool cpu = x.device().is_cpu() && weight.device().is_cpu() && (!bias.defined() || bias.device().is_cpu());
  const bool one_dtype = weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt);
  if (autocast::applies(autocast::Policy::lower, {&x, &weight, &bias}) || !cpu || !one_dtype ||
      (dt != kFloat32 && dt != kFloat64) || needs_grad({&x, &weight, &bias})) {
    Tensor y = conv2d(x, weight, bias, stride, padding, dilation, groups);
    return relu ? y.relu() : y;
  }
  check_conv2d_args(x, weight, bias, stride, padding, dilation, groups);
  const auto s = conv2d_shape(x.shape(), weight.shape(), stride, padding, dilation, groups);
  Tensor y = empty({s.n, s.c_out, s.h_out, s.w_out}, {dt, kCPU});
  if (y.numel() > 0) {
    const Tensor xc = x.contiguous(), wc = weight.contiguous(), bc = bias.defined() ? bias.contiguous() : bias;
    const void* pw = packed.defined() && dt == kFloat32 ? packed.data_ptr() : nullptr;
    cpu::conv2d_forward(dt, s, xc.data_ptr(), wc.data_ptr(), bc.defined() ? bc.data_ptr() : nullptr, y.data_ptr(),
                        relu, pw);
  }
  return y;
}

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                   Pair dilation, int64_t groups) {
  return conv2d_packed(x, weight, Tensor(), bias, stride, padding, dilation, groups, true);
}

}  // namespace ember
