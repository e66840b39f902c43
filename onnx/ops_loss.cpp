// ONNX's training losses, as exported training graphs contain them:
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (log_softmax over the
// class axis, then the same), over inputs [N, C] or [N, C, d1, ..., dk], with
// optional per-class weights, ignore_index and reduction none, sum or mean.
// Each is composed of Ember's ops: the input at each target's class is picked
// with GatherElements, weighted, negated and reduced.
#include "onnx/op_families.h"

#include <string>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Reduction { None, Sum, Mean };

struct LossAttrs {
  Reduction reduction = Reduction::Mean;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

LossAttrs loss_attrs(const NodeContext& ctx) {
  LossAttrs a;
  const std::string r = ctx.get_string("reduction", "mean");
  if (r == "none") a.reduction = Reduction::None;
  else if (r == "sum") a.reduction = Reduction::Sum;
  else if (r == "mean") a.reduction = Reduction::Mean;
  else ctx.invalid("reduction must be none, sum or mean, got '" + r + "'");
  a.has_ignore = ctx.has("ignore_index");
  a.ignore_index = ctx.get_int("ignore_index", 0);
  return a;
}

// The negative log-likelihood of log-probabilities `x` [N, C, d...] at the classes
// `target` [N, d...], weighted by `weight` [C] (or undefined: all 1).
Tensor nll(const std::string& site, const LossAttrs& a, const Tensor& x, const Tensor& target_in,
           const Tensor& weight) {
  if (x.dim() < 2) throw ShapeError(site + ": the input has " + std::to_string(x.dim()) + " dims, fewer than 2");
  if (is_floating(target_in.dtype()) || target_in.dtype() == kBool)
    throw DTypeError(site + ": the target must be integers, got " + std::string(dtype_name(target_in.dtype())));
  Shape want = x.shape();
  want.erase(want.begin() + 1);
  if (target_in.shape() != want)
    throw ShapeError(site + ": a target of shape " + shape_str(target_in.shape()) + " does not fit an input of shape " +
                     shape_str(x.shape()));
  const int64_t classes = x.size(1);
  if (weight.defined() && (weight.dim() != 1 || weight.size(0) != classes))
    throw ShapeError(site + ": the weight must have shape [" + std::to_string(classes) + "], got " +
                     shape_str(weight.shape()));
  const Tensor target = target_in.to(kInt64);
  Tensor valid = a.has_ignore ? ne(target, a.ignore_index) : ones(target.shape(), TensorOptions(kBool, target.device()));
  Tensor safe = where(valid, target, 0);
  // GatherElements would take a negative class as counted from the end; a loss must not.
  if (safe.numel() > 0 && amin(safe).item<int64_t>() < 0)
    throw IndexError(site + ": a target of " + std::to_string(amin(safe).item<int64_t>()) + " is not a class (0 to " +
                     std::to_string(classes - 1) + ")");
  Tensor picked = gather_elements(site, x, safe.unsqueeze(1), 1).squeeze(1);
  Tensor w = weight.defined() ? take(weight.to(x.dtype()), 0, safe) : ones(safe.shape(), TensorOptions(x.dtype(), x.device()));
  w = where(valid, w, zeros({}, TensorOptions(x.dtype(), x.device())));
  Tensor loss = neg(mul(picked, w));
  switch (a.reduction) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return div(sum(loss), sum(w));
  }
  return loss;
}

OpFn build_nll_loss(const NodeContext& ctx) {
  const LossAttrs a = loss_attrs(ctx);
  const std::string site = ctx.where();
  return [a, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    return std::vector<Tensor>{nll(site, a, in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
  };
}

OpFn build_softmax_cross_entropy(const NodeContext& ctx) {
  const LossAttrs a = loss_attrs(ctx);
  const bool want_log_prob = ctx.num_outputs > 1;
  const std::string site = ctx.where();
  return [a, want_log_prob, site](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    if (in[0].dim() < 2) throw ShapeError(site + ": the input has " + std::to_string(in[0].dim()) + " dims, fewer than 2");
    Tensor log_prob = log_softmax(in[0], 1);
    std::vector<Tensor> out{nll(site, a, log_prob, in[1], in.size() > 2 ? in[2] : Tensor())};
    if (want_log_prob) out.push_back(log_prob);
    return out;
  };
}

}  // namespace

void add_loss_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"NegativeLogLikelihoodLoss", build_nll_loss, 12},
                           {"SoftmaxCrossEntropyLoss", build_softmax_cross_entropy, 12}});
}

}  // namespace ember::onnx
