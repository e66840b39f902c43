// Classification losses: cross_entropy (fused log-softmax + NLL) and nll_loss over
// [N, C] inputs and int64 class indices [N]. The recorded node produces the
// per-sample losses (CrossEntropy saves logits, targets and each row's max and log sum;
// NllLoss saves targets; both keep LossAttrs); the reduction is done with ordinary
// recorded ops, so its gradient needs no rule of its own.
#include "kernels/cpu/loss.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {
namespace {

void check_loss_args(const char* op, const Tensor& input, const Tensor& targets) {
  check_same_device(input, targets);
  if (input.dim() != 2)
    throw ShapeError(msg(op, ": expected input of shape [N, C], got ", shape_str(input.shape())));
  if (targets.dtype() != kInt64)
    throw DTypeError(msg(op, ": expected targets of dtype int64 (class indices), got ", targets.dtype()));
  if (targets.dim() > 1) throw ShapeError("0D or 1D target tensor expected, multi-target not supported");
  // A 0-dim target has batch size 0 in PyTorch's message.
  if (targets.dim() != 1 || targets.shape()[0] != input.shape()[0])
    throw ShapeError(msg("Expected input batch_size (", input.shape()[0], ") to match target batch_size (",
                         targets.dim() == 1 ? targets.shape()[0] : 0, ")."));
  if (!is_floating(input.dtype())) throw DTypeError(msg(op, ": expected a floating point input, got ", input.dtype()));
}

[[noreturn]] void bad_target(const Tensor& targets, int64_t i) {
  // targets is a contiguous CPU tensor here (the kernels only run on the CPU).
  throw IndexError(msg("Target ", targets[i].item<int64_t>(), " is out of bounds."));
}

Tensor reduce(const Tensor& per_sample, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  switch (reduction) {
    case Reduction::None: return per_sample;
    case Reduction::Sum: return per_sample.sum();
    case Reduction::Mean: {
      const int64_t valid = (targets != ignore_index).sum().item<int64_t>();
      return per_sample.sum() / static_cast<double>(valid);  // 0/0 = NaN when all are ignored, as PyTorch
    }
  }
  return per_sample;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  if (auto r = autocast::run(autocast::Policy::fp32,
                             [&](const Tensor& x) { return cross_entropy(x, targets, reduction, ignore_index); }, logits))
    return *r;
  check_loss_args("cross_entropy", logits, targets);
  if (is_half(logits.dtype()))  // accumulate in float32; the loss comes back in float32 (autocast's policy)
    return cross_entropy(logits.to(kFloat32), targets, reduction, ignore_index);
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  Tensor loss = empty({n}, {logits.dtype(), logits.device()});
  Tensor stats = empty({n, 2}, {logits.dtype(), logits.device()});  // (max, log sum exp(x - max))
  Tensor x = logits.detach().contiguous(), t = targets.contiguous();
  if (const OpBackend backend = backend_of("cross_entropy", logits); backend != Backend::None && n > 0) {
    const int64_t bad =
        backend == Backend::CPU
            ? cpu::cross_entropy_forward(logits.dtype(), n, c, x.data_ptr(), t.data_ptr<int64_t>(), ignore_index,
                                         loss.data_ptr(), stats.data_ptr())
            : EMBER_CUDA_OR(cuda::cross_entropy_forward(logits.dtype(), n, c, x.data_ptr(), t.data_ptr<int64_t>(),
                                                        ignore_index, loss.data_ptr(), stats.data_ptr(), stream_of(x)),
                            -1);
    if (bad >= 0) bad_target(t, bad);
  }
  if (needs_grad({&logits})) {
    auto node = record(OpId::CrossEntropy, {&logits}, {&loss});
    node->save("logits", x);
    node->save("targets", t);
    node->save("stats", stats);
    node->attrs = LossAttrs{ignore_index};
  }
  return reduce(loss, t, reduction, ignore_index);
}

Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& targets,
                              const Tensor& stats, int64_t ignore_index) {
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  Tensor g = grad_loss.contiguous();
  Tensor out = empty(logits.shape(), {logits.dtype(), logits.device()});
  const OpBackend backend = backend_of("cross_entropy_backward", logits);
  if (backend == Backend::CPU && n > 0)
    cpu::cross_entropy_backward(logits.dtype(), n, c, logits.data_ptr(), targets.data_ptr<int64_t>(), ignore_index,
                                stats.data_ptr(), g.data_ptr(), out.data_ptr());
  if (backend == Backend::CUDA && n > 0)
    EMBER_CUDA(cuda::cross_entropy_backward(logits.dtype(), n, c, logits.data_ptr(), targets.data_ptr<int64_t>(),
                                            ignore_index, stats.data_ptr(), g.data_ptr(), out.data_ptr(),
                                            stream_of(logits)));
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction, int64_t ignore_index) {
  if (auto r = autocast::run(autocast::Policy::fp32,
                             [&](const Tensor& x) { return nll_loss(x, targets, reduction, ignore_index); }, log_probs))
    return *r;
  check_loss_args("nll_loss", log_probs, targets);
  if (is_half(log_probs.dtype())) return nll_loss(log_probs.to(kFloat32), targets, reduction, ignore_index);
  const int64_t n = log_probs.shape()[0], c = log_probs.shape()[1];
  Tensor loss = empty({n}, {log_probs.dtype(), log_probs.device()});
  Tensor x = log_probs.detach().contiguous(), t = targets.contiguous();
  if (const OpBackend backend = backend_of("nll_loss", log_probs); backend != Backend::None && n > 0) {
    const int64_t bad =
        backend == Backend::CPU
            ? cpu::nll_loss_forward(log_probs.dtype(), n, c, x.data_ptr(), t.data_ptr<int64_t>(), ignore_index,
                                    loss.data_ptr())
            : EMBER_CUDA_OR(cuda::nll_loss_forward(log_probs.dtype(), n, c, x.data_ptr(), t.data_ptr<int64_t>(),
                                                   ignore_index, loss.data_ptr(), stream_of(x)),
                            -1);
    if (bad >= 0) bad_target(t, bad);
  }
  if (needs_grad({&log_probs})) {
    auto node = record(OpId::NllLoss, {&log_probs}, {&loss});
    node->save("targets", t);
    node->attrs = LossAttrs{ignore_index};
  }
  return reduce(loss, t, reduction, ignore_index);
}

Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& targets, const Shape& input_shape,
                         int64_t ignore_index) {
  const int64_t n = input_shape[0], c = input_shape[1];
  Tensor g = grad_loss.contiguous();
  Tensor out = empty(input_shape, {grad_loss.dtype(), grad_loss.device()});
  const OpBackend backend = backend_of("nll_loss_backward", grad_loss);
  if (backend == Backend::CPU && n > 0)
    cpu::nll_loss_backward(grad_loss.dtype(), n, c, targets.data_ptr<int64_t>(), ignore_index, g.data_ptr(),
                           out.data_ptr());
  if (backend == Backend::CUDA && n > 0)
    EMBER_CUDA(cuda::nll_loss_backward(grad_loss.dtype(), n, c, targets.data_ptr<int64_t>(), ignore_index,
                                       g.data_ptr(), out.data_ptr(), stream_of(grad_loss)));
  return out;
}

}  // namespace ember
