// Hyperparameters of the fused optimizer steps, shared by the CPU and CUDA kernels
// (kernels/cpu/optim.h, kernels/cuda/optim.h) so that both read the same struct the
// front-end fills in nn/optim/optimizer.cpp.
#pragma once

#include <cstdint>

namespace ember {

// PyTorch's SGD: d = g + wd*p; buf = momentum*buf + (1-dampening)*d (buf = d at
// first); d = nesterov ? d + momentum*buf : buf; p -= lr*d.
struct SgdParams {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer is initialised to the gradient
};

// PyTorch's Adam and AdamW (decoupled weight decay), with optional amsgrad.
struct AdamParams {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;  // AdamW: p *= 1 - lr*wd instead of adding wd*p to the gradient
  bool amsgrad;
  int64_t step;    // after incrementing: 1 on the first step
};

}  // namespace ember
