// DynamicQuantizedLinear (see dynamic_linear.h).
#include "quant/dynamic_linear.h"

#include <cmath>

#include "quant/qparams.h"
#include "quant/quantized_tensor.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::quant {

void check_weight_qparams(const std::string& name, const Tensor& scale, const Tensor& zero_point) {
  const std::vector<float> s = scale.to(kCPU, kFloat32).to_vector<float>();
  for (size_t c = 0; c < s.size(); ++c)
    if (!(s[c] > 0) || !std::isfinite(s[c]))
      throw ValueError(msg(name, ": weight_scale must be positive and finite, got ", s[c], " at index ", c));
  const std::vector<int32_t> z = zero_point.to(kCPU, kInt32).to_vector<int32_t>();
  for (size_t c = 0; c < z.size(); ++c)
    if (z[c] != 0)
      throw ValueError(msg(name, ": weight_zero_point must be 0 (int8 weights are quantized symmetrically), got ",
                           z[c], " at index ", c));
}

DynamicQuantizedLinear::DynamicQuantizedLinear(int64_t in, int64_t out, bool with_bias, QScheme scheme)
    : Module("DynamicQuantizedLinear"), in_features(in), out_features(out), qscheme(scheme) {
  if (in < 0 || out < 0)
    throw ValueError(msg("DynamicQuantizedLinear: features must be non-negative, got ", in, " and ", out));
  const int64_t channels = scheme == QScheme::PerChannel ? out : 1;
  weight = register_buffer("weight", zeros({out, in}, kInt8));
  weight_scale = register_buffer("weight_scale", ones({channels}, kFloat32));
  weight_zero_point = register_buffer("weight_zero_point", zeros({channels}, kInt32));
  if (with_bias) bias = register_buffer("bias", zeros({out}, kFloat32));
}

std::shared_ptr<DynamicQuantizedLinear> DynamicQuantizedLinear::from_float(const nn::Linear& linear,
                                                                           QScheme scheme) {
  const Device device = linear.weight.device();
  auto q = std::make_shared<DynamicQuantizedLinear>(linear.in_features, linear.out_features, linear.bias.defined(),
                                                    scheme);
  NoGradGuard no_grad;
  const Tensor w = linear.weight.detach().to(kCPU, kFloat32);
  QuantizedTensor qw;
  if (scheme == QScheme::PerChannel) {
    auto [scales, zps] = choose_symmetric_qparams_per_channel(w, 0);
    qw = quantize_per_channel(w, scales, zps, 0, kInt8);
  } else {
    const QParams p = choose_symmetric_qparams(w);
    qw = quantize_per_tensor(w, p.scale, p.zero_point, kInt8);
  }
  q->weight.copy_(qw.int_repr);
  q->weight_scale.copy_(qw.scale);
  q->weight_zero_point.copy_(qw.zero_point);
  if (linear.bias.defined()) q->bias.copy_(linear.bias.detach().to(kCPU, kFloat32));
  q->to(device);
  return q;
}

DynamicQuantizedLinear::Stamp DynamicQuantizedLinear::stamp(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.storage().get(), t.storage_offset(), t.version()};
}

std::array<DynamicQuantizedLinear::Stamp, 4> DynamicQuantizedLinear::stamps() const {
  return {stamp(weight), stamp(weight_scale), stamp(weight_zero_point), stamp(bias)};
}

std::shared_ptr<const PackedLinearInt8> DynamicQuantizedLinear::prepared() {
  std::lock_guard<std::mutex> lock(pack_mutex_);
  const auto now = stamps();
  if (packed_ && now == packed_stamps_) return packed_;
  if (weight.dtype() != kInt8)
    throw DTypeError(msg("DynamicQuantizedLinear: weight must be int8, got ", weight.dtype()));
  check_weight_qparams("DynamicQuantizedLinear", weight_scale, weight_zero_point);
  packed_ = std::make_shared<const PackedLinearInt8>(pack_linear_int8(weight, weight_scale, bias));
  packed_stamps_ = now;
  return packed_;
}

Tensor DynamicQuantizedLinear::forward(const Tensor& x) {
  if (weight.device().is_meta()) {
    Shape s = x.shape();
    if (!s.empty()) s.back() = out_features;
    return empty(s, TensorOptions(kFloat32, weight.device()));
  }
  // A copy of the handles (no data is copied) with this call's activation option, so
  // that concurrent calls never write to what they share.
  PackedLinearInt8 p = *prepared();
  p.reduce_range = reduce_range;
  return linear_int8_dynamic(x, p, "linear_dynamic");
}

std::string DynamicQuantizedLinear::extra_repr() const {
  return msg("in_features=", in_features, ", out_features=", out_features, ", dtype=torch.qint8, qscheme=",
             qscheme == QScheme::PerChannel ? "torch.per_channel_affine" : "torch.per_tensor_affine");
}

Tensor DynamicQuantizedLinear::dequantized_weight() const {
  QuantizedTensor q{weight.cpu(), weight_scale.cpu(), weight_zero_point.cpu(), qscheme == QScheme::PerChannel ? 0 : -1};
  return dequantize(q).to(weight.device());
}

}  // namespace ember::quant
