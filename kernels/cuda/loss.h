// Classification losses on CUDA, per sample (the front-end applies the reduction):
// cross-entropy fused over logits and the negative log-likelihood over
// log-probabilities, with the semantics of kernels/cpu/loss.h. Plain C++: the
// front-end includes it from .cpp files. Algorithm in loss.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// Inputs are [n, c] row-major device arrays; targets [n] (device) hold class
// indices in [0, c) or ignore_index. float32 and float64 only; any other dtype
// throws NotImplementedError. Work is queued on `stream`.
//
// The forward functions check every target before they write anything: they copy
// the first sample whose target is neither a class nor ignore_index back to the
// host (this synchronizes `stream`) and return it, leaving the outputs untouched
// (the front-end raises IndexError), or return -1 and queue the loss kernel
// without waiting for it. The backward functions trust the targets the forward
// pass checked (a bad one still never indexes out of bounds) and do not
// synchronize.

// loss[i] = (m_i - logits[i, t_i]) + s_i, where m_i is the row's max (0 for a row
// of -inf) and s_i = log(sum_j exp(logits[i, j] - m_i)); stats [n, 2] keeps (m_i, s_i)
// for the backward pass. loss[i] = 0 when t_i == ignore_index.
int64_t cross_entropy_forward(DType dt, int64_t n, int64_t c, const void* logits,
                              const int64_t* targets, int64_t ignore_index, void* loss,
                              void* stats, cudaStream_t stream);

// grad_logits[i, j] = (exp((logits[i, j] - m_i) - s_i) - [j == t_i]) * grad_loss[i],
// from the forward pass's stats, with grad_loss a vector [n] (one gradient per
// sample); rows whose target is ignore_index are 0.
void cross_entropy_backward(DType dt, int64_t n, int64_t c, const void* logits,
                            const int64_t* targets, int64_t ignore_index, const void* stats,
                            const void* grad_loss, void* grad_logits, cudaStream_t stream);

// loss[i] = -log_probs[i, t_i], 0 when t_i == ignore_index.
int64_t nll_loss_forward(DType dt, int64_t n, int64_t c, const void* log_probs,
                         const int64_t* targets, int64_t ignore_index, void* loss,
                         cudaStream_t stream);

// grad_log_probs[i, j] = -grad_loss[i] when j == t_i (and t_i is not ignored), else 0;
// grad_loss is a vector [n].
void nll_loss_backward(DType dt, int64_t n, int64_t c, const int64_t* targets,
                       int64_t ignore_index, const void* grad_loss, void* grad_log_probs,
                       cudaStream_t stream);

}  // namespace ember::cuda
