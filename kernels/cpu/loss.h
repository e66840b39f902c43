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

// loss[i] = (m_i - logits[i, t_i]) + s_i, where m_i is the row's max (0 for a row
// of -inf) and s_i = log(sum_j exp(logits[i, j] - m_i)); stats [n, 2] keeps (m_i, s_i)
// for the backward pass. loss[i] = 0 when t_i == ignore_index.
int64_t cross_entropy_forward(DType dt, int64_t n, int64_t c, const void* logits,
                              const int64_t* targets, int64_t ignore_index, void* loss,
                              void* stats);

// grad_logits[i, j] = (exp((logits[i, j] - m_i) - s_i) - [j == t_i]) * grad_loss[i],
// from the forward pass's stats; rows whose target is ignore_index are 0.
int64_t cross_entropy_backward(DType dt, int64_t n, int64_t c, const void* logits,
                               const int64_t* targets, int64_t ignore_index, const void* stats,
                               const void* grad_loss, void* grad_logits);

// loss[i] = -log_probs[i, t_i], 0 when t_i == ignore_index.
int64_t nll_loss_forward(DType dt, int64_t n, int64_t c, const void* log_probs,
                         const int64_t* targets, int64_t ignore_index, void* loss);

// grad_log_probs[i, j] = -grad_loss[i] when j == t_i (and t_i is not ignored), else 0.
int64_t nll_loss_backward(DType dt, int64_t n, int64_t c, const int64_t* targets,
                          int64_t ignore_index, const void* grad_loss, void* grad_log_probs);

}  // namespace ember::cpu
