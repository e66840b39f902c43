// nn::Embedding: its parameter (name, shape, N(0, 1) initialisation), the lookup
// against the weight's rows read directly, the gradient (each row gets the sum of
// the output gradients of the positions that read it), and the device error.
#include <cmath>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/nn.h"

using namespace ember;

TEST_CASE("Embedding: one parameter 'weight' [num_embeddings, embedding_dim], N(0, 1)", "[nn][layers][embedding]") {
  manual_seed(7);
  nn::Embedding emb(1000, 20);
  auto params = emb.named_parameters();
  REQUIRE(params.size() == 1);
  CHECK(params[0].first == "weight");
  CHECK(emb.weight.shape() == Shape{1000, 20});
  CHECK(emb.weight.requires_grad());
  // 20,000 draws: the sample mean is within 4 standard errors (0.028) of 0 and the
  // sample standard deviation within 0.03 of 1.
  const auto w = emb.weight.detach().to_vector<float>();
  double sum = 0, sq = 0;
  for (float v : w) sum += v, sq += double(v) * v;
  const double mean = sum / w.size(), sd = std::sqrt(sq / w.size() - mean * mean);
  CHECK(std::abs(mean) < 0.028);
  CHECK(std::abs(sd - 1) < 0.03);
  CHECK(emb.str() == "Embedding(1000, 20)");
}

TEST_CASE("Embedding looks up rows; its gradient sums per row", "[nn][layers][embedding]") {
  nn::Embedding emb(4, 3);
  const auto w = emb.weight.detach().to_vector<float>();
  const std::vector<int64_t> ids{2, 0, 2, 3, 2, 1};
  Tensor y = emb.forward(tensor(ids, {2, 3}));
  REQUIRE(y.shape() == Shape{2, 3, 3});
  const auto yv = y.detach().to_vector<float>();
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t c = 0; c < 3; ++c) CHECK(yv[p * 3 + c] == w[ids[p] * 3 + c]);
  // d sum(y * k) / d weight[r, c] = sum of k over the positions p with ids[p] == r,
  // with k[p, c] = p + 1 (distinct per position, so a misrouted row shows).
  std::vector<float> k(ids.size() * 3);
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t c = 0; c < 3; ++c) k[p * 3 + c] = static_cast<float>(p + 1) * (c + 1);
  (y * tensor(k, {2, 3, 3})).sum().backward();
  std::vector<float> want(12, 0.0f);
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t c = 0; c < 3; ++c) want[ids[p] * 3 + c] += k[p * 3 + c];
  CHECK(emb.weight.grad().to_vector<float>() == want);
}

TEST_CASE("Embedding: indices on another device raise the layer device error", "[nn][layers][embedding][errors]") {
  nn::Embedding emb(4, 3);
  CHECK_THROWS_MATCHES(emb.forward(zeros({2}, {kInt64, kMeta})), DeviceError,
                       Catch::Message("Expected object of device type cpu but got device type meta for argument #1 "
                                      "'self' in call to embedding_forward"));
  CHECK_THROWS_MATCHES(nn::Embedding(-1, 3), ValueError,
                       Catch::Message("Embedding: num_embeddings and embedding_dim must be non-negative, got -1 and 3"));
}
