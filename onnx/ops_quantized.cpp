// ONNX's quantized ops. QuantizeLinear and DequantizeLinear carry QDQ models
// (float ops between quantize/dequantize pairs); DynamicQuantizeLinear and
// MatMulInteger are what ONNX Runtime's dynamic quantization writes for MatMul;
// QLinearMatMul, QLinearConv and ConvInteger are its operator-format models.
// The arithmetic is quant/'s (quantize_linear.h, matmul_integer.h): exact
// integer sums, then one float32 multiply and a half-to-even rounding, as ONNX
// Runtime does. 1-D and 2-D convolutions of codes run quant::conv_integer (the
// int8 GEMM); 3-D ones run Conv's builder in float64, where the sums are exact too.
#include "onnx/op_families.h"
#include "onnx/window.h"

#include "kernels/base/error.h"
#include "quant/conv_integer.h"
#include "quant/matmul_integer.h"
#include "quant/quantize_linear.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

Tensor input_or_none(const std::vector<Tensor>& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

// Blocked quantization (opset 21) shares one scale between block_size
// consecutive elements; Ember supports per tensor and per axis.
void refuse_blocks(const NodeContext& ctx) {
  if (ctx.get_int("block_size", 0) != 0) ctx.unsupported("block_size (blocked quantization)");
}

OpFn build_quantize_linear(const NodeContext& ctx) {
  refuse_blocks(ctx);
  const int64_t axis = ctx.get_int("axis", 1);
  // Without a zero point the output is uint8, or output_dtype's type (opset 21).
  DType fallback = kUInt8;
  if (const int64_t t = ctx.get_int("output_dtype", 0); t == 3) fallback = kInt8;
  else if (t != 0 && t != 2) ctx.unsupported("output_dtype " + std::to_string(t));
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor zp = input_or_none(in, 2);
    return std::vector<Tensor>{quant::quantize_linear(in[0], in[1], zp, axis, zp.defined() ? zp.dtype() : fallback, site)};
  };
}

OpFn build_dequantize_linear(const NodeContext& ctx) {
  refuse_blocks(ctx);
  const int64_t axis = ctx.get_int("axis", 1);
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{quant::dequantize_linear(in[0], in[1], input_or_none(in, 2), axis, site)};
  };
}

OpFn build_dynamic_quantize_linear(const NodeContext& ctx) {
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    quant::DynamicQuantized q = quant::dynamic_quantize_linear(in[0], site);
    return std::vector<Tensor>{q.y, q.scale, q.zero_point};
  };
}

// b packed for the CPU kernel at load, when it is a 2-D constant of a CPU model.
std::shared_ptr<const quant::PackedIntegerB> packed_constant(const NodeContext& ctx, size_t b_index) {
  const Tensor* b = ctx.constant(b_index);
  if (!b || b->dim() != 2 || !ctx.device.is_cpu() || (b->dtype() != kInt8 && b->dtype() != kUInt8)) return nullptr;
  return quant::pack_integer_b(*b, ctx.where());
}

OpFn build_matmul_integer(const NodeContext& ctx) {
  const std::string site = ctx.where();
  const auto packed = packed_constant(ctx, 1);
  return [=](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const quant::PackedIntegerB* p = packed && in[0].device().is_cpu() ? packed.get() : nullptr;
    return std::vector<Tensor>{
        quant::matmul_integer(in[0], in[1], input_or_none(in, 2), input_or_none(in, 3), site, p)};
  };
}

// a_scale * b_scale / y_scale in float32 (ONNX Runtime's order), with an axis
// for requantize: one value, one per column of the sums, one per row, or (both
// per row and per column) a whole [M, N] table.
std::pair<Tensor, int64_t> matmul_multiplier(const std::string& site, const Tensor& a_scale, const Tensor& b_scale,
                                             const Tensor& y_scale, bool b_is_vector) {
  if (y_scale.numel() != 1)
    throw ShapeError(site + ": y_scale must hold one value, got shape " + shape_str(y_scale.shape()));
  const Tensor as = a_scale.to(kCPU, kFloat32), bs = b_scale.to(kCPU, kFloat32);
  const Tensor a = as.numel() == 1 ? as.reshape({}) : as.reshape({as.numel(), 1});
  const Tensor b = bs.numel() == 1 ? bs.reshape({}) : bs.reshape({bs.numel()});
  Tensor m = div(mul(a, b), y_scale.to(kCPU, kFloat32).reshape({}));
  // A 1-D b leaves no column dim in the sums: a's rows are then their last dim.
  if (m.dim() == 2 && m.size(1) == 1) return {m.reshape({m.size(0)}), b_is_vector ? -1 : -2};
  return {m, -1};
}

OpFn build_qlinear_matmul(const NodeContext& ctx) {
  const std::string site = ctx.where();
  const auto packed = packed_constant(ctx, 3);
  return [=](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const quant::PackedIntegerB* p = packed && in[0].device().is_cpu() ? packed.get() : nullptr;
    const Tensor& a = in[0];
    if (in[1].numel() != 1 && (a.dim() < 2 || in[1].numel() != a.size(-2)))
      throw ShapeError(site + ": a_scale must hold one value or one per row of a, got shape " + shape_str(in[1].shape()));
    const Tensor acc = quant::matmul_integer(a, in[3], in[2], in[5], site, p);
    if (in[4].numel() != 1 && (in[3].dim() < 2 || in[4].numel() != in[3].size(-1)))
      throw ShapeError(site + ": b_scale must hold one value or one per column of b, got shape " +
                       shape_str(in[4].shape()));
    auto [m, axis] = matmul_multiplier(site, in[1], in[4], in[6], in[3].dim() == 1);
    // Per row and per column: the table of multipliers for every sum.
    if (m.dim() == 2) m = m.expand({acc.size(-2), acc.size(-1)}).expand(acc.shape()).contiguous();
    return std::vector<Tensor>{quant::requantize(acc, m, in[7], axis, in[7].dtype(), site)};
  };
}

// The convolution of codes minus zero points in int32, bias (int32) added inside
// the sums. 1-D and 2-D windows run quant::conv_integer (the int8 GEMM on the
// CPU; a 1-D window is a 2-D one of height 1), with a constant w packed at load;
// 3-D ones run Conv's builder on float64 codes, where the sums are exact too.
struct IntegerConv {
  OpFn conv3d;
  WindowAttrs attrs;
  int64_t groups = 1;
  std::string site;
  std::shared_ptr<const quant::PackedConvWeights> packed;

  IntegerConv(const NodeContext& ctx, size_t w_index)
      : conv3d(build_conv(ctx)), attrs(window_attrs(ctx)), groups(ctx.get_int("group", 1)), site(ctx.where()) {
    const Tensor* w = ctx.constant(w_index);
    if (!w || !ctx.device.is_cpu() || (w->dtype() != kInt8 && w->dtype() != kUInt8)) return;
    if ((w->dim() != 3 && w->dim() != 4) || groups < 1 || w->size(0) % groups != 0) return;  // refused at run
    packed = quant::pack_conv_weights(w->dim() == 3 ? w->unsqueeze(2) : *w, groups, site);
  }

  Tensor operator()(const Tensor& x, const Tensor& x_zero, const Tensor& w, const Tensor& w_zero,
                    const Tensor& bias) const {
    for (const Tensor* t : {&x, &w})
      if (t->dtype() != kInt8 && t->dtype() != kUInt8)
        throw DTypeError(site + ": x and w must be int8 or uint8, got " + dtype_name(t->dtype()));
    if (w.dim() == 5) return float64_conv(x, x_zero, w, w_zero, bias);
    if (w.dim() != 3 && w.dim() != 4)
      throw NotImplementedError(site + ": a " + std::to_string(w.dim() - 2) + "-D convolution is not supported");
    const bool lifted = w.dim() == 3;
    const Tensor x2 = lifted ? x.unsqueeze(2) : x, w2 = lifted ? w.unsqueeze(2) : w;
    Shape kernel(w.shape().begin() + 2, w.shape().end());
    if (!attrs.kernel.empty() && attrs.kernel != kernel)
      throw ShapeError(site + ": kernel_shape " + shape_str(attrs.kernel) + " does not match the weight's " +
                       shape_str(kernel));
    const Window win = resolve_window(attrs, kernel, x, site);
    quant::ConvIntegerWindow q;
    q.groups = groups;
    const size_t o = lifted ? 1 : 0;  // a 1-D window fills the width only
    for (size_t d = o; d < 2; ++d) {
      q.stride[d] = win.stride[d - o];
      q.dilation[d] = win.dilation[d - o];
      q.pad_begin[d] = win.pad_begin[d - o];
      q.pad_end[d] = win.pad_end[d - o];
    }
    const quant::PackedConvWeights* p = packed && x.device().is_cpu() ? packed.get() : nullptr;
    const Tensor y = quant::conv_integer(x2, w2, x_zero, w_zero, bias, q, site, p);
    return lifted ? y.squeeze(2) : y;
  }

  // 3-D: Conv's builder on the codes minus their zero points, in float64.
  Tensor float64_conv(const Tensor& x, const Tensor& x_zero, const Tensor& w, const Tensor& w_zero,
                      const Tensor& bias) const {
    if (x_zero.defined() && x_zero.numel() != 1)
      throw ShapeError(site + ": x's zero point must hold one value, got shape " + shape_str(x_zero.shape()));
    Tensor xf = x.to(kFloat64), wf = w.to(kFloat64);
    if (x_zero.defined()) xf = sub(xf, x_zero.to(x.device(), kFloat64).reshape({}));
    if (w_zero.defined()) {
      Tensor z = w_zero.to(w.device(), kFloat64);
      if (z.numel() == 1) z = z.reshape({});
      else if (z.dim() == 1 && z.size(0) == w.size(0)) z = z.reshape({z.size(0), 1, 1, 1, 1});
      else throw ShapeError(site + ": w's zero point must hold one value or one per output channel, got shape " +
                            shape_str(w_zero.shape()));
      wf = sub(wf, z);
    }
    std::vector<Tensor> args{xf, wf};
    if (bias.defined()) {
      if (bias.dtype() != kInt32) throw DTypeError(site + ": the bias must be int32, got " + dtype_name(bias.dtype()));
      args.push_back(bias.to(x.device(), kFloat64));
    }
    // Every sum is an integer of magnitude below 2^53: exact, and int64 -> int32 wraps.
    return conv3d(args)[0].to(kInt64).to(kInt32);
  }
};

OpFn build_conv_integer(const NodeContext& ctx) {
  const IntegerConv conv(ctx, 1);
  return [=](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    return std::vector<Tensor>{conv(in[0], input_or_none(in, 2), in[1], input_or_none(in, 3), Tensor())};
  };
}

OpFn build_qlinear_conv(const NodeContext& ctx) {
  const IntegerConv conv(ctx, 3);
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const Tensor acc = conv(in[0], in[2], in[3], in[5], input_or_none(in, 8));
    if (in[1].numel() != 1) throw ShapeError(site + ": x_scale must hold one value, got shape " + shape_str(in[1].shape()));
    if (in[6].numel() != 1) throw ShapeError(site + ": y_scale must hold one value, got shape " + shape_str(in[6].shape()));
    const Tensor ws = in[4].to(kCPU, kFloat32);
    if (ws.numel() != 1 && (ws.numel() != acc.size(1)))
      throw ShapeError(site + ": w_scale must hold one value or one per output channel, got shape " +
                       shape_str(in[4].shape()));
    const Tensor m = div(mul(in[1].to(kCPU, kFloat32).reshape({}), ws.numel() == 1 ? ws.reshape({}) : ws.reshape({ws.numel()})),
                         in[6].to(kCPU, kFloat32).reshape({}));
    return std::vector<Tensor>{quant::requantize(acc, m, in[7], 1, in[7].dtype(), site)};
  };
}

}  // namespace

void add_quantized_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"QuantizeLinear", build_quantize_linear, 10}, {"DequantizeLinear", build_dequantize_linear, 10},
      {"DynamicQuantizeLinear", build_dynamic_quantize_linear, 11}, {"MatMulInteger", build_matmul_integer, 10},
      {"QLinearMatMul", build_qlinear_matmul, 10}, {"ConvInteger", build_conv_integer, 10},
      {"QLinearConv", build_qlinear_conv, 10},
  });
}

}  // namespace ember::onnx
