// gradcheck for every differentiable op: one row per op, run on random float64
// inputs away from points where the op is not differentiable (abs and relu at 0,
// ties in max). The reference is central finite differences, independent of the
// backward rules.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>

#include "ember.h"

using namespace ember;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {

Tensor input(const Shape& shape, double lo, double hi, uint64_t seed) {
  Generator g(seed);
  return (rand(shape, kFloat64, &g) * (hi - lo) + lo).requires_grad_();
}

// Values in [lo, hi] whose magnitude is at least `gap` (away from a kink at 0).
Tensor away_from_zero(const Shape& shape, double gap, uint64_t seed) {
  Generator g(seed), s(seed + 1);
  Tensor mag = rand(shape, kFloat64, &g) + gap;
  Tensor sign = where(rand(shape, kFloat64, &s) > 0.5, 1.0, -1.0);
  return (mag * sign).detach().requires_grad_();
}

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

// Inputs from a row's domain (kernels/base/ops.def.h), in float64 and away from the
// points where the op is not differentiable.
Tensor input_from(const char* domain, const Shape& s, uint64_t seed) {
  const std::string d = domain;
  if (d == "positive") return input(s, 0.5, 3, seed);
  if (d == "away_from_zero") return away_from_zero(s, 0.1, seed);
  if (d == "divisor" || d == "pow_base") return input(s, 0.5, 2, seed);
  if (d == "pow_exponent") return input(s, -1, 2, seed);
  return input(s, -2, 2, seed);  // any_sign, wide, ties (random floats do not tie)
}

// One row per unary op of kernels/base/ops.def.h.
std::vector<Row> unary_rows() {
  std::vector<Row> rows;
  uint64_t seed = 1;
#define EMBER_X(Name, name, kind, saves, autocast, dom, ...) \
  rows.push_back({#name, [](auto& x) { return ember::name(x[0]); }, {input_from(#dom, {3, 4}, seed++)}});
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  return rows;
}

// One row per binary op with a gradient, b broadcast along a's first dim.
std::vector<Row> binary_rows() {
  std::vector<Row> rows;
  uint64_t seed = 20;
#define EMBER_X(Name, name, kind, saves, autocast, dom_a, dom_b)                      \
  rows.push_back({#name, [](auto& x) { return ember::name(x[0], x[1]); },             \
                  {input_from(#dom_a, {3, 4}, seed), input_from(#dom_b, {4}, seed + 1)}}); \
  seed += 2;
  EMBER_ARITH_OPS(EMBER_X)
#undef EMBER_X
  // Broadcasting both ways, C++ numbers on either side, and the ops composed of them.
  rows.push_back({"sub both broadcast", [](auto& x) { return x[0] - x[1]; }, {input({3, 1}, -1, 1, 22), input({2, 1, 4}, -1, 1, 23)}});
  rows.push_back({"add scalar", [](auto& x) { return x[0] + 2.5; }, {input({3}, -1, 1, 34)}});
  rows.push_back({"scalar div", [](auto& x) { return 2.0 / x[0]; }, {input({3}, 0.5, 2, 35)}});
  rows.push_back({"pow scalar", [](auto& x) { return pow(x[0], 3); }, {input({3}, -2, 2, 36)}});
  rows.push_back({"where", [](auto& x) { return where(x[0] > 0, x[0], x[1]); }, {away_from_zero({3, 4}, 0.1, 37), input({4}, -1, 1, 38)}});
  rows.push_back({"clamp", [](auto& x) { return x[0].clamp(-0.5, 0.5); }, {input({20}, -1, 1, 39)}});
  rows.push_back({"in-place add_ on a non-leaf", [](auto& x) { Tensor t = x[0] * 2; t.add_(x[1]); return t; },
                  {input({3}, -1, 1, 40), input({3}, -1, 1, 41)}});
  rows.push_back({"in-place mul_ keeps the old value for backward",
                  [](auto& x) { Tensor t = x[0] * 1; t.mul_(x[1]); return t * x[0]; },
                  {input({3}, -1, 1, 42), input({3}, -1, 1, 43)}});
  return rows;
}

std::vector<Row> reduction_rows() {
  const Shape s{3, 4, 2};
  return {
      {"sum all", [](auto& x) { return x[0].sum(); }, {input(s, -1, 1, 50)}},
      {"sum dims", [](auto& x) { return x[0].sum({0, 2}); }, {input(s, -1, 1, 51)}},
      {"sum keepdim", [](auto& x) { return x[0].sum({-1}, true); }, {input(s, -1, 1, 52)}},
      {"mean", [](auto& x) { return x[0].mean({1}); }, {input(s, -1, 1, 53)}},
      {"var", [](auto& x) { return x[0].var({1}); }, {input(s, -1, 1, 54)}},
      {"var correction 0 keepdim", [](auto& x) { return x[0].var({0, 2}, 0, true); }, {input(s, -1, 1, 55)}},
      {"norm", [](auto& x) { return x[0].norm(); }, {input(s, -1, 1, 63)}},
      {"norm p=1 dims", [](auto& x) { return x[0].norm(1, {0, 2}); }, {input(s, -1, 1, 64)}},
      {"norm p=3 keepdim", [](auto& x) { return x[0].norm(3, {1}, true); }, {input(s, -1, 1, 65)}},
      {"norm p=0.5", [](auto& x) { return x[0].norm(0.5, {2}); }, {input(s, -1, 1, 66)}},
      {"norm p=-1.5", [](auto& x) { return x[0].norm(-1.5, {1}); }, {input(s, -1, 1, 67)}},
      {"norm p=inf", [](auto& x) { return x[0].norm(INFINITY, {1}); }, {input(s, -1, 1, 68)}},
      {"norm p=-inf all", [](auto& x) { return x[0].norm(-INFINITY); }, {input(s, -1, 1, 69)}},
      {"amax", [](auto& x) { return x[0].amax({1}); }, {input(s, -1, 1, 56)}},
      {"amin all", [](auto& x) { return x[0].amin(); }, {input(s, -1, 1, 57)}},
      {"max(dim) values", [](auto& x) { return std::get<0>(x[0].max(1)); }, {input(s, -1, 1, 58)}},
      {"min(dim) keepdim", [](auto& x) { return std::get<0>(x[0].min(2, true)); }, {input(s, -1, 1, 59)}},
      {"max()", [](auto& x) { return x[0].max(); }, {input(s, -1, 1, 60)}},
      {"softmax", [](auto& x) { return x[0].softmax(1); }, {input(s, -2, 2, 61)}},
      {"log_softmax last", [](auto& x) { return x[0].log_softmax(-1); }, {input({3, 5}, -2, 2, 62)}},
  };
}

std::vector<Row> other_rows() {
  return {
      {"matmul 2-D", [](auto& x) { return matmul(x[0], x[1]); }, {input({3, 4}, -1, 1, 70), input({4, 2}, -1, 1, 71)}},
      {"matmul batched broadcast", [](auto& x) { return matmul(x[0], x[1]); },
       {input({2, 1, 3, 4}, -1, 1, 72), input({3, 4, 2}, -1, 1, 73)}},
      {"matmul 1-D . 2-D", [](auto& x) { return matmul(x[0], x[1]); }, {input({4}, -1, 1, 74), input({4, 3}, -1, 1, 75)}},
      {"matmul 2-D . 1-D", [](auto& x) { return matmul(x[0], x[1]); }, {input({3, 4}, -1, 1, 76), input({4}, -1, 1, 77)}},
      {"dot", [](auto& x) { return matmul(x[0], x[1]); }, {input({4}, -1, 1, 78), input({4}, -1, 1, 79)}},
      {"matmul with transpose", [](auto& x) { return matmul(x[0], x[1].t()); }, {input({3, 4}, -1, 1, 80), input({2, 4}, -1, 1, 81)}},
      {"view/reshape", [](auto& x) { return x[0].view({4, 3}).reshape({2, 6}) * 2; }, {input({3, 4}, -1, 1, 82)}},
      {"permute", [](auto& x) { return x[0].permute({2, 0, 1}) * x[0].permute({2, 0, 1}); }, {input({2, 3, 4}, -1, 1, 83)}},
      {"transpose then contiguous", [](auto& x) { return x[0].transpose(0, 1).contiguous().view({-1}); }, {input({3, 4}, -1, 1, 84)}},
      {"expand", [](auto& x) { return x[0].expand({2, 3, 4}) * 3; }, {input({3, 1}, -1, 1, 85)}},
      {"slice with step", [](auto& x) { return x[0].slice(1, 1, 4, 2); }, {input({3, 5}, -1, 1, 86)}},
      {"narrow", [](auto& x) { return x[0].narrow(0, 1, 2); }, {input({3, 5}, -1, 1, 87)}},
      {"select", [](auto& x) { return x[0].select(1, -1); }, {input({3, 5}, -1, 1, 88)}},
      {"squeeze/unsqueeze/flatten", [](auto& x) { return x[0].unsqueeze(0).squeeze().flatten(); }, {input({3, 1, 4}, -1, 1, 89)}},
      {"cat", [](auto& x) { return cat({x[0], x[1]}, 1); }, {input({2, 3}, -1, 1, 90), input({2, 2}, -1, 1, 91)}},
      {"stack", [](auto& x) { return stack({x[0], x[1]}, 0); }, {input({2, 3}, -1, 1, 92), input({2, 3}, -1, 1, 93)}},
      {"clone", [](auto& x) { return x[0].clone() * x[0]; }, {input({3}, -1, 1, 94)}},
      {"to float32 and back", [](auto& x) { return x[0].to(kFloat32).to(kFloat64) * 1; }, {input({3}, -1, 1, 95)}},
      {"take: 2-D index, repeated and negative positions", [](auto& x) {
         return take(x[0], 1, tensor(std::vector<int64_t>{3, -1, 0, 0}, {2, 2})); },
       {input({2, 4, 3}, -1, 1, 97)}},
      {"index_select", [](auto& x) { return index_select(x[0], 0, tensor(std::vector<int32_t>{2, 2, 1})); },
       {input({3, 2}, -1, 1, 98)}},
      {"embedding", [](auto& x) { return embedding(x[0], tensor(std::vector<int64_t>{1, 4, 1, 0, 2, 1}, {3, 2})); },
       {input({5, 3}, -1, 1, 107)}},
      {"copy_ into a non-leaf", [](auto& x) { Tensor t = zeros({2, 3}, kFloat64) * 1; t.copy_(x[0]); return t * 2; },
       {input({3}, -1, 1, 96)}},
  };
}

// The layer ops of tensor/nn_ops.h, small (tests/nn/test_layer_gradcheck.cpp has more shapes).
std::vector<Row> layer_rows() {
  return {
      {"conv2d stride, padding, dilation, groups, bias", [](auto& x) {
         return conv2d(x[0], x[1], x[2], {2, 1}, {1, 0}, {1, 2}, 2); },
       {input({2, 4, 5, 6}, -1, 1, 100), input({4, 2, 3, 2}, -1, 1, 101), input({4}, -1, 1, 102)}},
      // Inputs shifted up so that most windows' maxima are positive and gradients flow.
      {"conv2d_relu_pool2x2: padding, odd output, bias", [](auto& x) {
         return conv2d_relu_pool2x2(x[0], x[1], x[2], {1, 1}, {1, 0}); },
       {input({2, 2, 5, 6}, -0.5, 1, 117), input({3, 2, 2, 3}, -0.5, 1, 118), input({3}, -0.2, 0.5, 119)}},
      {"conv2d_relu_pool2x2: stride 2, no bias", [](auto& x) {
         return conv2d_relu_pool2x2(x[0], x[1], Tensor(), {2, 2}); },
       {input({1, 2, 9, 9}, -0.5, 1, 120), input({2, 2, 2, 2}, -0.5, 1, 121)}},
      // One Linear node (tensor/linear.cpp); inputs shifted so that most ReLU outputs pass.
      {"linear: bias", [](auto& x) { return linear(x[0], x[1], x[2]); },
       {input({4, 3}, -1, 1, 122), input({5, 3}, -1, 1, 123), input({5}, -1, 1, 124)}},
      {"linear_relu: bias", [](auto& x) { return linear_relu(x[0], x[1], x[2]); },
       {input({4, 3}, -0.2, 1, 125), input({5, 3}, -0.2, 1, 126), input({5}, -0.2, 0.5, 127)}},
      {"linear_relu: no bias, x a transposed view", [](auto& x) {
         return linear_relu(x[0].t(), x[1]); },
       {input({3, 4}, -0.2, 1, 128), input({2, 3}, -0.2, 1, 129)}},
      {"max_pool2d", [](auto& x) { return std::get<0>(max_pool2d_with_indices(x[0], {2, 2}, {2, 2}, {0, 0}, {1, 1}, false)); },
       {input({1, 2, 4, 4}, -1, 1, 103)}},
      {"avg_pool2d", [](auto& x) { return avg_pool2d(x[0], {3, 2}, {2, 2}, {1, 0}, true, false); },
       {input({1, 2, 5, 4}, -1, 1, 104)}},
      {"layer_norm: weight and bias, two normalised dims", [](auto& x) { return layer_norm(x[0], {2, 3}, x[1], x[2]); },
       {input({4, 2, 3}, -2, 2, 108), input({2, 3}, 0.5, 2, 109), input({2, 3}, -1, 1, 110)}},
      {"layer_norm: no weight or bias", [](auto& x) { return layer_norm(x[0], {5}, Tensor(), Tensor(), 1e-3); },
       {input({3, 5}, -2, 2, 111)}},
      {"layer_norm: weight only", [](auto& x) { return layer_norm(x[0], {4}, x[1]); },
       {input({2, 4}, -2, 2, 112), input({4}, 0.5, 2, 113)}},
      {"pad constant with a crop", [](auto& x) { return pad(x[0], {{1, -1}, {2, 0}}, PadMode::Constant, 0.5); },
       {input({3, 4}, -1, 1, 114)}},
      {"pad reflect", [](auto& x) { return pad(x[0], {{0, 1}, {2, 1}, {-1, 3}}, PadMode::Reflect); },
       {input({2, 3, 4}, -1, 1, 115)}},
      {"pad replicate", [](auto& x) { return pad(x[0], {{3, 1}, {0, 2}}, PadMode::Replicate); },
       {input({2, 3}, -1, 1, 116)}},
      {"cross_entropy", [](auto& x) { return cross_entropy(x[0], tensor(std::vector<int64_t>{2, 0, 1})); },
       {input({3, 4}, -2, 2, 105)}},
      {"nll_loss", [](auto& x) { return nll_loss(x[0].log_softmax(1), tensor(std::vector<int64_t>{1, 3, 0})); },
       {input({3, 4}, -2, 2, 106)}},
  };
}

// Every op id the rows' graphs contain (walking grad_fn edges from the output).
void collect_ops(const std::shared_ptr<Node>& node, std::set<OpId>& seen, std::set<const Node*>& visited) {
  if (!node || !visited.insert(node.get()).second) return;
  seen.insert(node->op);
  for (const Edge& e : node->next) collect_ops(e.fn, seen, visited);
}

}  // namespace

TEST_CASE("gradcheck: unary ops", "[autograd][gradcheck]") {
  for (const Row& r : unary_rows()) check(r);
}

TEST_CASE("gradcheck: binary ops with broadcasting and scalars", "[autograd][gradcheck]") {
  for (const Row& r : binary_rows()) check(r);
}

TEST_CASE("gradcheck: reductions and softmax", "[autograd][gradcheck]") {
  for (const Row& r : reduction_rows()) check(r);
}

TEST_CASE("gradcheck: layer ops", "[autograd][gradcheck]") {
  for (const Row& r : layer_rows()) check(r);
}

TEST_CASE("gradcheck: matmul, views, joins and copies", "[autograd][gradcheck]") {
  for (const Row& r : other_rows()) {
    if (std::string(r.name) == "to float32 and back") {
      // float32 rounding (1e-7 relative) is far above the 1e-6 finite-difference step: loosen.
      std::string why;
      CHECK(autograd::gradcheck(r.f, r.inputs, {1e-3, 1e-4, 1e-3}, &why));
      continue;
    }
    check(r);
  }
}

// Every differentiable op (tensor/op_list.h) appears in some gradcheck row above: a
// new op without a row fails here.
TEST_CASE("gradcheck covers every differentiable op id", "[autograd][gradcheck]") {
  std::set<OpId> seen;
  for (const auto& table : {unary_rows(), binary_rows(), reduction_rows(), other_rows(), layer_rows()})
    for (const Row& r : table) {
      std::set<const Node*> visited;
      collect_ops(r.f(r.inputs).grad_fn(), seen, visited);
    }
  std::vector<std::string> missing;
#define EMBER_X(Name, name, ...) \
  if (!seen.count(OpId::Name)) missing.push_back(#Name);
  EMBER_AUTOGRAD_OPS(EMBER_X)
#undef EMBER_X
  INFO("op ids no gradcheck row reaches: " << Catch::Detail::stringify(missing));
  CHECK(missing.empty());
}

TEST_CASE("gradcheck catches a wrong gradient", "[autograd][gradcheck]") {
  // A function whose forward is not what its graph differentiates: detach() hides
  // one factor from autograd, so the analytical gradient is half the true one.
  Fn wrong = [](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); };
  std::string why;
  REQUIRE_FALSE(autograd::gradcheck(wrong, {input({3}, 0.5, 1, 99)}, {}, &why));
  REQUIRE(why.find("Jacobian mismatch") != std::string::npos);
}
