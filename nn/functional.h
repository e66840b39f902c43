// nn::functional: the layer ops under PyTorch's names and defaults (F.relu,
// F.conv2d, F.cross_entropy, ...). Most forward to tensor/ front-ends; linear,
// dropout, batch_norm, mse_loss and flatten are compositions of recorded ops.
#pragma once

#include "kernels/base/export.h"

#include <optional>

#include "tensor/generator.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

EMBER_API_BEGIN

namespace ember::nn::functional {

using ember::Pair;
using ember::Reduction;

inline Tensor relu(const Tensor& x) { return x.relu(); }
inline Tensor gelu(const Tensor& x) { return x.gelu(); }
inline Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
inline Tensor tanh(const Tensor& x) { return x.tanh(); }
inline Tensor softmax(const Tensor& x, int64_t dim) { return x.softmax(dim); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return x.log_softmax(dim); }
inline Tensor flatten(const Tensor& x, int64_t start_dim = 1, int64_t end_dim = -1) {
  return x.flatten(start_dim, end_dim);
}

// y = x . weight^T + bias; weight [out, in].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// relu(linear(x, weight, bias)) (tensor/ops.h's linear_relu).
Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Pair stride = {1, 1},
              Pair padding = {0, 0}, Pair dilation = {1, 1}, int64_t groups = 1);
// max_pool2d(relu(conv2d(x, weight, bias, ...)), {2, 2}) as one op (tensor/nn_ops.h):
// the same values and gradients in one pass over the activations.
inline Tensor conv2d_relu_pool2x2(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                                  Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1},
                                  int64_t groups = 1) {
  return ember::conv2d_relu_pool2x2(x, weight, bias, stride, padding, dilation, groups);
}
// stride defaults to the kernel size, as in PyTorch.
Tensor max_pool2d(const Tensor& x, Pair kernel, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0},
                  Pair dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Pair kernel, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when
// training; the identity otherwise.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// Batch normalisation over [N, C, ...]: in training, normalises with the batch's
// statistics and updates the running ones (momentum, unbiased variance) in place.
Tensor batch_norm(const Tensor& x, Tensor& running_mean, Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5);
// F.embedding(input, weight): rows of weight [num_embeddings, dim] picked by the
// integer tensor input (PyTorch's argument order; ember::embedding takes weight first).
inline Tensor embedding(const Tensor& input, const Tensor& weight) { return ember::embedding(weight, input); }
// F.layer_norm(input, normalized_shape, weight, bias, eps).
inline Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                         const Tensor& bias = Tensor(), double eps = 1e-5) {
  return ember::layer_norm(x, normalized_shape, weight, bias, eps);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, Reduction reduction = Reduction::Mean,
                     int64_t ignore_index = -100);
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, Reduction reduction = Reduction::Mean,
                int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace ember::nn::functional

EMBER_API_END
