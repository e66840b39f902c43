// Classification losses on the CPU, per sample (the front-end applies the
// reduction): cross-entropy fused over logits, and the negative log-likelihood over
// log-probabilities. Algorithm in loss.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// Inputs are [n, c] row-major; targets [n] hold class indices in [0, c) or
// ignore_index. Every function checks all targets before it writes anything and
// returns the first sample whose target is neither (the front-end raises
// IndexError), or -1 when all are valid. float32 and float64 only; any other dtype
// throws NotImplementedError.

// loss[i] = lse[i] - logits[i, t_i], where lse[i] = log(sum_j exp(logits[i, j])) is
// kept for the backward pass; loss[i] = 0 when t_i == ignore_index.
int64_t cross_entropy_forward(DType dt, int64_t n, int64_t c, const void* logits,
                              const int64_t* targets, int64_t ignore_index, void* loss,
                              void* lse);

// grad_logits[i, j] = (exp(logits[i, j] - lse[i]) - [j == t_i]) * grad_loss[i]; rows
// whose target is ignore_index are 0.
int64_t cross_entropy_backward(DType dt, int64_t n, int64_t c, const void* logits,
                               const int64_t* targets, int64_t ignore_index, const void* lse,
                               const void* grad_loss, void* grad_logits);

// loss[i] = -log_probs[i, t_i], 0 when t_i == ignore_index.
int64_t nll_loss_forward(DType dt, int64_t n, int64_t c, const void* log_probs,
                         const int64_t* targets, int64_t ignore_index, void* loss);

// grad_log_probs[i, j] = -grad_loss[i] when j == t_i (and t_i is not ignored), else 0.
int64_t nll_loss_backward(DType dt, int64_t n, int64_t c, const int64_t* targets,
                          int64_t ignore_index, const void* grad_loss, void* grad_log_probs);

}  // namespace ember::cpu
