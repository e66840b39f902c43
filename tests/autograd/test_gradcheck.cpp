// gradcheck for every differentiable op: one row per op, run on random float64
// inputs away from points where the op is not differentiable (abs and relu at 0,
// ties in max). The reference is central finite differences, independent of the
// backward rules.
#include <catch2/catch.hpp>

#include <functional>
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

}  // namespace

TEST_CASE("gradcheck: unary ops", "[autograd][gradcheck]") {
  const Shape s{3, 4};
  std::vector<Row> rows = {
      {"neg", [](auto& x) { return -x[0]; }, {input(s, -2, 2, 1)}},
      {"abs", [](auto& x) { return x[0].abs(); }, {away_from_zero(s, 0.1, 2)}},
      {"relu", [](auto& x) { return x[0].relu(); }, {away_from_zero(s, 0.1, 3)}},
      {"exp", [](auto& x) { return x[0].exp(); }, {input(s, -2, 2, 4)}},
      {"log", [](auto& x) { return x[0].log(); }, {input(s, 0.5, 3, 5)}},
      {"sqrt", [](auto& x) { return x[0].sqrt(); }, {input(s, 0.5, 3, 6)}},
      {"rsqrt", [](auto& x) { return x[0].rsqrt(); }, {input(s, 0.5, 3, 7)}},
      {"sin", [](auto& x) { return x[0].sin(); }, {input(s, -3, 3, 8)}},
      {"cos", [](auto& x) { return x[0].cos(); }, {input(s, -3, 3, 9)}},
      {"tanh", [](auto& x) { return x[0].tanh(); }, {input(s, -2, 2, 10)}},
      {"sigmoid", [](auto& x) { return x[0].sigmoid(); }, {input(s, -3, 3, 11)}},
      {"gelu", [](auto& x) { return x[0].gelu(); }, {input(s, -3, 3, 12)}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: binary ops with broadcasting and scalars", "[autograd][gradcheck]") {
  std::vector<Row> rows = {
      {"add", [](auto& x) { return x[0] + x[1]; }, {input({3, 4}, -1, 1, 20), input({4}, -1, 1, 21)}},
      {"sub", [](auto& x) { return x[0] - x[1]; }, {input({3, 1}, -1, 1, 22), input({2, 1, 4}, -1, 1, 23)}},
      {"mul", [](auto& x) { return x[0] * x[1]; }, {input({3, 4}, -1, 1, 24), input({3, 4}, -1, 1, 25)}},
      {"div", [](auto& x) { return x[0] / x[1]; }, {input({3, 4}, -1, 1, 26), input({4}, 0.5, 2, 27)}},
      {"pow", [](auto& x) { return pow(x[0], x[1]); }, {input({3, 4}, 0.5, 2, 28), input({3, 4}, -1, 2, 29)}},
      {"maximum", [](auto& x) { return maximum(x[0], x[1]); }, {input({3, 4}, -1, 1, 30), input({3, 4}, -1, 1, 31)}},
      {"minimum", [](auto& x) { return minimum(x[0], x[1]); }, {input({3, 4}, -1, 1, 32), input({4}, -1, 1, 33)}},
      {"add scalar", [](auto& x) { return x[0] + 2.5; }, {input({3}, -1, 1, 34)}},
      {"scalar div", [](auto& x) { return 2.0 / x[0]; }, {input({3}, 0.5, 2, 35)}},
      {"pow scalar", [](auto& x) { return pow(x[0], 3); }, {input({3}, -2, 2, 36)}},
      {"where", [](auto& x) { return where(x[0] > 0, x[0], x[1]); }, {away_from_zero({3, 4}, 0.1, 37), input({4}, -1, 1, 38)}},
      {"clamp", [](auto& x) { return x[0].clamp(-0.5, 0.5); }, {input({20}, -1, 1, 39)}},
      {"in-place add_ on a non-leaf", [](auto& x) { Tensor t = x[0] * 2; t.add_(x[1]); return t; },
       {input({3}, -1, 1, 40), input({3}, -1, 1, 41)}},
      {"in-place mul_ keeps the old value for backward", [](auto& x) { Tensor t = x[0] * 1; t.mul_(x[1]); return t * x[0]; },
       {input({3}, -1, 1, 42), input({3}, -1, 1, 43)}},
  };
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: reductions and softmax", "[autograd][gradcheck]") {
  const Shape s{3, 4, 2};
  std::vector<Row> rows = {
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
  for (const Row& r : rows) check(r);
}

TEST_CASE("gradcheck: matmul, views, joins and copies", "[autograd][gradcheck]") {
  std::vector<Row> rows = {
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
      {"copy_ into a non-leaf", [](auto& x) { Tensor t = zeros({2, 3}, kFloat64) * 1; t.copy_(x[0]); return t * 2; },
       {input({3}, -1, 1, 96)}},
  };
  for (const Row& r : rows) {
    if (std::string(r.name) == "to float32 and back") {
      // float32 rounding (1e-7 relative) is far above the 1e-6 finite-difference step: loosen.
      std::string why;
      CHECK(autograd::gradcheck(r.f, r.inputs, {1e-3, 1e-4, 1e-3}, &why));
      continue;
    }
    check(r);
  }
}

TEST_CASE("gradcheck catches a wrong gradient", "[autograd][gradcheck]") {
  // A function whose forward is not what its graph differentiates: detach() hides
  // one factor from autograd, so the analytical gradient is half the true one.
  Fn wrong = [](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); };
  std::string why;
  REQUIRE_FALSE(autograd::gradcheck(wrong, {input({3}, 0.5, 1, 99)}, {}, &why));
  REQUIRE(why.find("Jacobian mismatch") != std::string::npos);
}
