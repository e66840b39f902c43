// Layer normalisation over the last `cols` elements of each of `rows` rows of a
// contiguous input: forward (with the per-row mean and 1/std it saves for backward)
// and backward (input, weight and bias gradients). Algorithm in layer_norm.cpp.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// float32 and float64 only (the front-end computes float16/bfloat16 in float32);
// other dtypes throw NotImplementedError. Every array is contiguous in dtype dt.

// mean[r] = sum_j x[r, j] / cols, var = sum_j (x[r, j] - mean)^2 / cols (biased),
// rstd[r] = 1 / sqrt(var + eps), y[r, j] = (x[r, j] - mean[r]) * rstd[r] * w[j] + b[j];
// weight and bias may be null (1 and 0). A row of cols == 0 gets mean 0 and rstd
// 1/sqrt(eps).
void layer_norm_forward(DType dt, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                        double eps, void* y, void* mean, void* rstd);

// With xhat = (x - mean) * rstd and gxhat = grad_y * w:
//   grad_x[r, j] = rstd[r] * (gxhat - mean_j(gxhat) - xhat * mean_j(gxhat * xhat)),
//   grad_weight[j] = sum_r grad_y * xhat, grad_bias[j] = sum_r grad_y.
// Any output pointer may be null (not computed); the sums over rows run in
// increasing r.
void layer_norm_backward(DType dt, int64_t rows, int64_t cols, const void* grad_y, const void* x, const void* mean,
                         const void* rstd, const void* weight, void* grad_x, void* grad_weight, void* grad_bias);

}  // namespace ember::cpu
