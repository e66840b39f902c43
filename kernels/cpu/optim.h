// Fused optimizer updates on the CPU: one pass over a parameter and its state per
// step instead of a chain of elementwise ops (each of which would read and write
// the whole tensor). All arrays are contiguous and of dtype `dt`; half types
// compute in float32.
#pragma once

#include <cstdint>

#include "kernels/base/optim_params.h"
#include "kernels/base/scalar.h"

namespace ember::cpu {

// The hyperparameter structs live in kernels/base/optim_params.h (the CUDA kernels
// take the same ones).
using ember::AdamParams;
using ember::SgdParams;

// PyTorch's SGD: d = g + wd*p; buf = momentum*buf + (1-dampening)*d (buf = d at
// first); d = nesterov ? d + momentum*buf : buf; p -= lr*d. buf may be null when
// momentum == 0.
void sgd_step(DType dt, int64_t n, void* param, const void* grad, void* momentum_buffer, const SgdParams& h);

// PyTorch's Adam/AdamW update; max_exp_avg_sq may be null unless amsgrad.
void adam_step(DType dt, int64_t n, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
               void* max_exp_avg_sq, const AdamParams& h);

}  // namespace ember::cpu
