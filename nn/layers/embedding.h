// Embedding: a table of num_embeddings vectors of embedding_dim, looked up by
// integer indices (PyTorch's nn.Embedding without padding_idx, max_norm or sparse
// gradients).
#pragma once

#include "kernels/base/export.h"

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn {

class Embedding : public Module {
 public:
  // weight [num_embeddings, embedding_dim] ~ N(0, 1), PyTorch's default.
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  // indices: int64 or int32 of any shape, in [0, num_embeddings); the result is
  // indices.shape + [embedding_dim].
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  Tensor weight;
  const int64_t num_embeddings, embedding_dim;
};

}  // namespace ember::nn

EMBER_API_END
