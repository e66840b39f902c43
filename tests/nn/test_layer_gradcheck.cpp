// gradcheck for the layer ops: conv2d, pooling, the losses, linear, batch_norm,
// dropout, and the whole seed network, in float64 against central finite
// differences (independent of the backward rules). Inputs keep away from points
// where an op is not differentiable: max pooling sees distinct values spaced 0.1
// apart, so no perturbation can change which element wins.
#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/nn.h"

using namespace ember;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
namespace F = ember::nn::functional;

namespace {

Tensor input(const Shape& shape, double lo, double hi, uint64_t seed) {
  Generator g(seed);
  return (rand(shape, kFloat64, &g) * (hi - lo) + lo).requires_grad_();
}

// The values 0.1 * (0 .. n-1) - offset in a random order: no two closer than 0.1.
Tensor distinct(const Shape& shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  for (double& x : v) x = 0.1 * x - 0.05 * static_cast<double>(n);
  return tensor(v, shape).requires_grad_();
}

Tensor labels(const std::vector<int64_t>& t) { return tensor(t); }

struct Row {
  const char* name;
  Fn f;
  std::vector<Tensor> inputs;
};

void check(const Row& row) {
  std::string why;
  INFO(row.name);
  const bool ok = autograd::gradcheck(row.f, row.inputs, {}, &why);
  INFO(why);
  CHECK(ok);
}

}  // namespace

TEST_CASE("gradcheck: conv2d with stride, padding, dilation and groups", "[nn][gradcheck][conv2d]") {
  const Tensor x = input({2, 4, 5, 5}, -1, 1, 1);
  const Tensor w = input({4, 2, 2, 2}, -1, 1, 2);
  const Tensor b = input({4}, -1, 1, 3);
  const Tensor w1 = input({3, 4, 3, 2}, -1, 1, 4);
  std::vector<Row> rows = {
      {"stride 2, padding 1, dilation 2, groups 2, bias",
       [](auto& a) { return F::conv2d(a[0], a[1], a[2], {2, 2}, {1, 1}, {2, 2}, 2); }, {x, w, b}},
      {"the same without bias", [](auto& a) { return F::conv2d(a[0], a[1], Tensor(), {2, 2}, {1, 1}, {2, 2}, 2); },
       {x, w}},
      {"non-square: stride (2, 1), padding (1, 0), dilation (1, 2)",
       [](auto& a) { return F::conv2d(a[0], a[1], a[2], {2, 1}, {1, 0}, {1, 2}, 1); },
       {x, w1, input({3}, -1, 1, 5)}},
      {"plain 3x3 through the Conv2d layer's op",
       [](auto& a) { return F::conv2d(a[0], a[1], a[2]); }, {input({1, 2, 4, 4}, -1, 1, 6), input({3, 2, 3, 3}, -1, 1, 7),
                                                            input({3}, -1, 1, 8)}},
      {"input only (weight constant)",
       [](auto& a) { return F::conv2d(a[0], a[1], Tensor(), {1, 1}, {1, 1}); },
       {input({1, 2, 3, 3}, -1, 1, 9), input({2, 2, 2, 2}, -1, 1, 10).detach()}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: max_pool2d and avg_pool2d", "[nn][gradcheck][pool]") {
  const Tensor xm = distinct({2, 2, 5, 6}, 11);
  const Tensor xa = input({2, 2, 5, 6}, -1, 1, 12);
  std::vector<Row> rows = {
      {"max 2x2", [](auto& a) { return F::max_pool2d(a[0], {2, 2}); }, {xm}},
      {"max 3x3 stride 2 padding 1 ceil_mode",
       [](auto& a) { return F::max_pool2d(a[0], {3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true); }, {xm}},
      {"max (2, 3) stride 1 dilation (2, 1)",
       [](auto& a) { return F::max_pool2d(a[0], {2, 3}, Pair{1, 1}, {0, 1}, {2, 1}); }, {xm}},
      {"avg 2x2", [](auto& a) { return F::avg_pool2d(a[0], {2, 2}); }, {xa}},
      {"avg 3x3 stride 2 padding 1, count_include_pad",
       [](auto& a) { return F::avg_pool2d(a[0], {3, 3}, Pair{2, 2}, {1, 1}, false, true); }, {xa}},
      {"avg 3x3 stride 2 padding 1, without pad",
       [](auto& a) { return F::avg_pool2d(a[0], {3, 3}, Pair{2, 2}, {1, 1}, false, false); }, {xa}},
      {"avg 3x3 stride 2 padding 1 ceil_mode, count_include_pad",
       [](auto& a) { return F::avg_pool2d(a[0], {3, 3}, Pair{2, 2}, {1, 1}, true, true); }, {xa}},
      {"avg 3x3 stride 2 padding 1 ceil_mode, without pad",
       [](auto& a) { return F::avg_pool2d(a[0], {3, 3}, Pair{2, 2}, {1, 1}, true, false); }, {xa}},
      {"avg (2, 3) stride (1, 2)", [](auto& a) { return F::avg_pool2d(a[0], {2, 3}, Pair{1, 2}); }, {xa}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: cross_entropy, nll_loss and mse_loss", "[nn][gradcheck][loss]") {
  const Tensor logits = input({4, 5}, -2, 2, 20);
  // Sample 2 is ignored (-100, the default ignore_index).
  const Tensor t = labels({1, 4, -100, 0});
  const Tensor t3 = labels({3, 3, 0, 1});
  using R = Reduction;
  std::vector<Row> rows = {
      {"cross_entropy mean", [t](auto& a) { return F::cross_entropy(a[0], t); }, {logits}},
      {"cross_entropy sum", [t](auto& a) { return F::cross_entropy(a[0], t, R::Sum); }, {logits}},
      {"cross_entropy none", [t](auto& a) { return F::cross_entropy(a[0], t, R::None); }, {logits}},
      {"cross_entropy mean, ignore_index 3",
       [t3](auto& a) { return F::cross_entropy(a[0], t3, R::Mean, 3); }, {logits}},
      {"nll_loss of log_softmax, mean", [t](auto& a) { return F::nll_loss(F::log_softmax(a[0], 1), t); }, {logits}},
      {"nll_loss of log_softmax, sum",
       [t](auto& a) { return F::nll_loss(F::log_softmax(a[0], 1), t, R::Sum); }, {logits}},
      {"nll_loss of log_softmax, none",
       [t](auto& a) { return F::nll_loss(F::log_softmax(a[0], 1), t, R::None); }, {logits}},
      {"nll_loss alone, none", [t](auto& a) { return F::nll_loss(a[0], t, R::None); }, {logits}},
      {"mse_loss mean", [](auto& a) { return F::mse_loss(a[0], a[1]); },
       {input({3, 4}, -1, 1, 21), input({3, 4}, -1, 1, 22)}},
      {"mse_loss sum", [](auto& a) { return F::mse_loss(a[0], a[1], R::Sum); },
       {input({3, 4}, -1, 1, 23), input({3, 4}, -1, 1, 24)}},
      {"mse_loss none", [](auto& a) { return F::mse_loss(a[0], a[1], R::None); },
       {input({3, 4}, -1, 1, 25), input({3, 4}, -1, 1, 26)}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: linear, batch_norm and dropout", "[nn][gradcheck]") {
  std::vector<Row> rows = {
      {"linear with bias", [](auto& a) { return F::linear(a[0], a[1], a[2]); },
       {input({3, 4}, -1, 1, 30), input({2, 4}, -1, 1, 31), input({2}, -1, 1, 32)}},
      {"linear without bias", [](auto& a) { return F::linear(a[0], a[1]); },
       {input({3, 4}, -1, 1, 33), input({2, 4}, -1, 1, 34)}},
      {"linear of a single row", [](auto& a) { return F::linear(a[0], a[1], a[2]); },
       {input({4}, -1, 1, 35), input({2, 4}, -1, 1, 36), input({2}, -1, 1, 37)}},
      {"batch_norm training, affine",
       [](auto& a) {
         Tensor rm, rv;
         return F::batch_norm(a[0], rm, rv, a[1], a[2], /*training=*/true);
       },
       {input({3, 2, 2, 2}, -2, 2, 38), input({2}, 0.5, 1.5, 39), input({2}, -1, 1, 40)}},
      {"batch_norm training, running stats updated on the side",
       [](auto& a) {
         Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
         return F::batch_norm(a[0], rm, rv, Tensor(), Tensor(), true, 0.3);
       },
       {input({4, 3, 2}, -2, 2, 41)}},
      {"batch_norm eval",
       [](auto& a) {
         Tensor rm = tensor(std::vector<double>{0.5, -0.25}), rv = tensor(std::vector<double>{2.0, 0.5});
         return F::batch_norm(a[0], rm, rv, a[1], a[2], false);
       },
       {input({2, 2, 3, 1}, -2, 2, 42), input({2}, 0.5, 1.5, 43), input({2}, -1, 1, 44)}},
      {"dropout p = 0.4 with a fixed generator",
       [](auto& a) {
         Generator g(45);  // the same mask on every call
         return F::dropout(a[0], 0.4, true, &g);
       },
       {input({4, 5}, -1, 1, 46)}},
      {"dropout eval", [](auto& a) { return F::dropout(a[0], 0.4, false) * 1.0; }, {input({4, 5}, -1, 1, 47)}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: the seed Network in float64, batch of 2", "[nn][gradcheck][network]") {
  manual_seed(50);
  auto net = std::make_shared<nn::Network>();
  net->to(kFloat64);
  // The parameters do not take part: their gradients are not checked (speed).
  for (Tensor& p : net->parameters()) p.requires_grad_(false);
  check({"d logits / d images", [net](auto& a) { return (*net)(a[0]); }, {input({2, 1, 28, 28}, 0, 1, 51)}});
  // And through a loss, with respect to the output layer's weight as well.
  for (Tensor& p : net->out->parameters()) p.requires_grad_(true);
  const Tensor t = labels({3, 7});
  check({"cross_entropy of the network, d / d out.weight",
         [net, t](auto& a) {
           Tensor h = F::relu((*net->fc2)(F::relu((*net->fc1)(a[0]))));
           return F::cross_entropy(F::linear(h, a[1], net->out->bias), t);
         },
         {input({2, 192}, 0, 1, 52), net->out->weight.detach().clone().requires_grad_()}});
}
