// Fused optimizer updates on the CPU: one pass over a parameter and its state per
// step instead of a chain of elementwise ops (each of which would read and write
// the whole tensor). All arrays are contiguous and of dtype `dt`; half types
// compute in float32.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

struct SgdParams {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer is initialised to the gradient
};
// PyTorch's SGD: d = g + wd*p; buf = momentum*buf + (1-dampening)*d (buf = d at
// first); d = nesterov ? d + momentum*buf : buf; p -= lr*d. buf may be null when
// momentum == 0.
void sgd_step(DType dt, int64_t n, void* param, const void* grad, void* momentum_buffer, const SgdParams& h);

struct AdamParams {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;  // AdamW: p *= 1 - lr*wd instead of adding wd*p to the gradient
  bool amsgrad;
  int64_t step;    // after incrementing: 1 on the first step
};
// PyTorch's Adam/AdamW update; max_exp_avg_sq may be null unless amsgrad.
void adam_step(DType dt, int64_t n, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
               void* max_exp_avg_sq, const AdamParams& h);

}  // namespace ember::cpu
