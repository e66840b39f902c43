// ONNX's elementwise ops: unary math and activations, binary arithmetic and
// comparisons with NumPy broadcasting (and the explicit `broadcast`/`axis`
// attributes of opsets before 7), the variadic Max/Min/Sum/Mean, Where, Clip,
// Cast and CastLike, and the tests IsNaN and IsInf. Each is one or a few of
// Ember's tensor ops.
#include "onnx/op_families.h"

#include <cmath>
#include <limits>

#include "kernels/base/error.h"
#include "onnx/tensor_proto.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

using Fn1 = Tensor (*)(const Tensor&);

// A unary op that is exactly one Ember op.
template <Fn1 F>
OpFn unary(const NodeContext&) {
  return [](const std::vector<Tensor>& in) { return std::vector<Tensor>{F(in[0])}; };
}

Tensor reciprocal(const Tensor& x) { return div(1.0, x); }
Tensor softsign(const Tensor& x) { return div(x, add(abs(x), 1.0)); }
Tensor identity(const Tensor& x) { return x; }

OpFn build_dropout(const NodeContext& ctx) {
  // Inference: the output is the input; the optional mask is all true. Opset 12
  // makes training_mode an input, which must be absent or false.
  if (ctx.opset < 7) ctx.require_default("is_test", 1);
  bool want_mask = ctx.num_outputs > 1;
  const Tensor* training = ctx.constant(2);
  if (ctx.has_input(2) && (!training || training->to(kBool).item<bool>())) ctx.unsupported("training_mode");
  return [want_mask](const std::vector<Tensor>& in) {
    std::vector<Tensor> out{in[0]};
    if (want_mask) out.push_back(ones(in[0].shape(), TensorOptions(kBool, in[0].device())));
    return out;
  };
}

OpFn build_leaky_relu(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 0.01);
  return [alpha](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{where(ge(x, 0.0), x, mul(x, alpha))};
  };
}

OpFn build_elu(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 1.0);
  return [alpha](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{where(gt(x, 0.0), x, mul(sub(exp(x), 1.0), alpha))};
  };
}

OpFn build_selu(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 1.67326319217681884765625);
  double gamma = ctx.get_float("gamma", 1.05070102214813232421875);
  return [alpha, gamma](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{mul(where(gt(x, 0.0), x, mul(sub(exp(x), 1.0), alpha)), gamma)};
  };
}

OpFn build_hard_sigmoid(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 0.2), beta = ctx.get_float("beta", 0.5);
  return [alpha, beta](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{clamp(add(mul(in[0], alpha), beta), 0.0, 1.0)};
  };
}

OpFn build_prelu(const NodeContext&) {
  // The slope broadcasts to X from the right (opset 7+); in PyTorch's exports of
  // older opsets it is [C] or [C, 1, ...] against [N, C, ...], which the rule
  // below also aligns: a 1-D slope of length C is matched to dim 1.
  return [](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);  // an integer slope (opset 16) is a host constant
    const Tensor& x = in[0];
    Tensor slope = in[1];
    if (slope.dim() == 1 && x.dim() > 2 && slope.size(0) == x.size(1) && slope.size(0) != x.size(-1)) {
      Shape s(static_cast<size_t>(x.dim() - 1), 1);
      s[0] = slope.size(0);
      slope = slope.reshape(s);
    }
    return std::vector<Tensor>{where(ge(x, 0.0), x, mul(x, slope))};
  };
}

OpFn build_clip(const NodeContext& ctx) {
  if (ctx.opset < 11) {
    std::optional<Scalar> lo, hi;
    if (ctx.has("min")) lo = ctx.get_float("min", 0);
    if (ctx.has("max")) hi = ctx.get_float("max", 0);
    return [lo, hi](const std::vector<Tensor>& in) { return std::vector<Tensor>{clamp(in[0], lo, hi)}; };
  }
  return [](const std::vector<Tensor>& in) {
    Tensor y = in[0];
    if (in.size() > 1 && in[1].defined()) y = maximum(y, in[1].to(y.device(), y.dtype()));
    if (in.size() > 2 && in[2].defined()) y = minimum(y, in[2].to(y.device(), y.dtype()));
    return std::vector<Tensor>{y};
  };
}

OpFn build_thresholded_relu(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 1.0);
  return [alpha](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{where(gt(in[0], alpha), in[0], 0)};
  };
}

OpFn build_hard_swish(const NodeContext&) {
  return [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{mul(x, clamp(add(div(x, 6.0), 0.5), 0.0, 1.0))};
  };
}

OpFn build_celu(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 1.0);
  if (alpha == 0) ctx.invalid("alpha must not be 0");
  return [alpha](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{where(gt(x, 0.0), x, mul(sub(exp(div(x, alpha)), 1.0), alpha))};
  };
}

// Values within lambd of zero become 0; the others move towards zero by bias.
// The result keeps the input's type (an int8 input stays int8).
OpFn build_shrink(const NodeContext& ctx) {
  double lambd = ctx.get_float("lambd", 0.5), bias = ctx.get_float("bias", 0.0);
  return [lambd, bias](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor y = where(lt(x, -lambd), add(x, bias), where(gt(x, lambd), sub(x, bias), zeros_like(x)));
    return std::vector<Tensor>{y.to(x.dtype())};
  };
}

// -1, 0 or 1 in the input's type; NaN stays NaN.
Tensor onnx_sign(const Tensor& x) {
  Tensor s = sub(gt(x, 0).to(x.dtype()), lt(x, 0).to(x.dtype()));
  return is_floating(x.dtype()) ? where(ne(x, x), x, s) : s;
}

Tensor is_nan(const Tensor& x) { return ne(x, x); }

OpFn build_is_inf(const NodeContext& ctx) {
  bool positive = ctx.get_int("detect_positive", 1) != 0, negative = ctx.get_int("detect_negative", 1) != 0;
  return [positive, negative](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    const double inf = std::numeric_limits<double>::infinity();
    Tensor y = positive && negative ? eq(abs(x), inf) : positive ? eq(x, inf) : negative ? eq(x, -inf)
                                                                                     : zeros(x.shape(), TensorOptions(kBool, x.device()));
    return std::vector<Tensor>{y};
  };
}

OpFn build_cast_like(const NodeContext& ctx) {
  ctx.require_default("saturate", 1);
  return [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].to(in[1].dtype())}; };
}

OpFn build_cast(const NodeContext& ctx) {
  if (!ctx.has("to")) ctx.invalid("attribute 'to' is missing");
  DType to = dtype_from_onnx(static_cast<int32_t>(ctx.get_int("to", 0)), ctx.where());
  return [to](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].to(to)}; };
}

// Opsets before 7 broadcast only when the attribute says so, and then B aligns
// with A at `axis` (default: B's trailing dims match A's).
Tensor align_legacy(bool legacy, int64_t axis, const Tensor& a, const Tensor& b) {
  if (!legacy || axis < 0 || b.dim() == 0) return b;
  int64_t trailing = a.dim() - axis - b.dim();
  if (trailing <= 0) return b;
  Shape s = b.shape();
  s.insert(s.end(), static_cast<size_t>(trailing), 1);
  return b.reshape(s);
}

using Fn2 = Tensor (*)(const Tensor&, const Tensor&);

template <Fn2 F>
OpFn binary(const NodeContext& ctx) {
  bool legacy = ctx.opset < 7 && ctx.get_int("broadcast", 0) != 0;
  int64_t axis = legacy && ctx.has("axis") ? ctx.get_int("axis", 0) : -1;
  return [legacy, axis](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    Tensor b = align_legacy(legacy, axis, in[0], in[1]);
    return std::vector<Tensor>{F(in[0], b)};
  };
}

// Integer Div truncates toward zero in ONNX; Ember's div is true division.
Tensor onnx_div(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype()) || is_floating(b.dtype())) return div(a, b);
  DType t = promote_types(a.dtype(), b.dtype());
  if (eq(b, 0).to(kInt64).sum().item<int64_t>() != 0) throw ValueError("integer division by zero");
  // Exact through float64 for |values| below 2^53 (every int32, most int64).
  return div(a.to(kFloat64), b.to(kFloat64)).to(t);
}

// Pow keeps the base's type (ONNX), where Ember promotes.
Tensor onnx_pow(const Tensor& a, const Tensor& b) {
  if (is_floating(a.dtype())) return pow(a, b.to(a.dtype()));
  return pow(a.to(kFloat64), b.to(kFloat64)).to(a.dtype());
}

Tensor logical_and(const Tensor& a, const Tensor& b) { return mul(a.to(kBool), b.to(kBool)).to(kBool); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return ne(add(a.to(kInt32), b.to(kInt32)), 0); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return ne(a.to(kBool), b.to(kBool)); }

template <Fn2 F>
OpFn variadic(const NodeContext& ctx) {
  if (ctx.present.empty()) ctx.invalid("needs at least one input");
  return [](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    Tensor acc = in[0];
    for (size_t i = 1; i < in.size(); ++i) acc = F(acc, in[i]);
    return std::vector<Tensor>{acc};
  };
}

OpFn build_mean(const NodeContext& ctx) {
  if (ctx.present.empty()) ctx.invalid("needs at least one input");
  return [](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    Tensor acc = in[0];
    for (size_t i = 1; i < in.size(); ++i) acc = add(acc, in[i]);
    return std::vector<Tensor>{div(acc, static_cast<double>(in.size()))};
  };
}

OpFn build_not(const NodeContext&) {
  return [](const std::vector<Tensor>& in) { return std::vector<Tensor>{eq(in[0].to(kBool), false)}; };
}

OpFn build_where(const NodeContext&) {
  return [](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    return std::vector<Tensor>{where(in[0].to(kBool), in[1], in[2])};
  };
}

OpFn build_sum1(const NodeContext& ctx) { return variadic<add>(ctx); }

}  // namespace

void add_elementwise_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"Abs", unary<abs>}, {"Neg", unary<neg>}, {"Relu", unary<relu>}, {"Exp", unary<exp>},
      {"Log", unary<log>}, {"Sqrt", unary<sqrt>}, {"Sin", unary<sin>}, {"Cos", unary<cos>},
      {"Tanh", unary<tanh>}, {"Erf", unary<erf>}, {"Sigmoid", unary<sigmoid>}, {"Softplus", unary<softplus>},
      {"Reciprocal", unary<reciprocal>}, {"Softsign", unary<softsign>}, {"Identity", unary<identity>},
      {"Dropout", build_dropout}, {"LeakyRelu", build_leaky_relu}, {"Elu", build_elu}, {"Selu", build_selu},
      {"HardSigmoid", build_hard_sigmoid}, {"PRelu", build_prelu}, {"Clip", build_clip}, {"Cast", build_cast},
      {"Add", binary<add>}, {"Sub", binary<sub>}, {"Mul", binary<mul>}, {"Div", binary<onnx_div>},
      {"Pow", binary<onnx_pow>}, {"Equal", binary<eq>}, {"Less", binary<lt>}, {"Greater", binary<gt>},
      {"LessOrEqual", binary<le>}, {"GreaterOrEqual", binary<ge>}, {"And", binary<logical_and>},
      {"Or", binary<logical_or>}, {"Xor", binary<logical_xor>}, {"Not", build_not},
      {"Max", variadic<maximum>}, {"Min", variadic<minimum>}, {"Sum", build_sum1}, {"Mean", build_mean},
      {"Where", build_where}, {"ThresholdedRelu", build_thresholded_relu, 10}, {"HardSwish", build_hard_swish, 14},
      {"Celu", build_celu, 12}, {"Shrink", build_shrink, 9}, {"Sign", unary<onnx_sign>, 9},
      {"IsNaN", unary<is_nan>, 9}, {"IsInf", build_is_inf, 10}, {"CastLike", build_cast_like, 15},
  });
}

}  // namespace ember::onnx
