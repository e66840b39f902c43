// Embedding (see embedding.h): the lookup is ember::embedding, whose gradient
// scatter-adds into the rows that were read.
#include "nn/layers/embedding.h"

#include "nn/init.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::nn {

Embedding::Embedding(int64_t n, int64_t dim) : Module("Embedding"), num_embeddings(n), embedding_dim(dim) {
  if (n < 0 || dim < 0)
    throw ValueError(msg("Embedding: num_embeddings and embedding_dim must be non-negative, got ", n, " and ", dim));
  weight = register_parameter("weight", empty({n, dim}));
  init::normal_(weight, 0, 1);
}

Tensor Embedding::forward(const Tensor& indices) {
  check_input_device(indices, "embedding_forward");
  return ember::embedding(weight, indices);
}

std::string Embedding::extra_repr() const { return msg(num_embeddings, ", ", embedding_dim); }

}  // namespace ember::nn
