// ReLU's one-pass backward (tensor/nn_ops.h relu_backward, kernels/cpu/relu_backward.h)
// against a plain loop over float64 values: every floating dtype, zeros of both
// signs, subnormals, Inf and NaN in y and in the gradient, strided operands, the
// composite path it falls back to, and autograd's use of it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tensor/nn_ops.h"
#include "tensor/ops.h"

using namespace ember;

namespace {

// Values with every case that matters to the compare, then random ones.
std::vector<double> tricky_values(size_t n, uint32_t seed) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 6e-8, -6e-8, inf, -inf, nan, -nan, 3.5, -2.25};
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0.0, 3.0);
  while (v.size() < n) v.push_back(d(g));
  v.resize(n);
  return v;
}

// grad where y > 0, else 0, computed on the values as the tensors hold them.
std::vector<double> reference(const Tensor& g, const Tensor& y) {
  const std::vector<double> gv = g.to(kFloat64).to_vector<double>(), yv = y.to(kFloat64).to_vector<double>();
  std::vector<double> r(gv.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] = yv[i] > 0 ? gv[i] : 0.0;
  return r;
}

void check_same(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> v = got.to(kFloat64).to_vector<double>();
  REQUIRE(v.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool same = (std::isnan(v[i]) && std::isnan(want[i])) || v[i] == want[i];
    if (!same && bad++ < 5) UNSCOPED_INFO("element " << i << ": " << v[i] << ", want " << want[i]);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("relu_backward passes the gradient where y > 0 and 0 elsewhere, in every floating dtype",
          "[relu_backward]") {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO("dtype " << dtype_name(dt));
    for (int64_t n : {1, 14, 1000, 300000}) {  // the last spans several parallel chunks
      const auto yv = tricky_values(size_t(n), 1), gv = tricky_values(size_t(n), 2);
      std::vector<double> yr(yv.rbegin(), yv.rend());  // NaN and Inf gradients meet every kind of y
      const Tensor y = tensor(yv, {n}).to(dt), g = tensor(yr, {n}).to(dt);
      const Tensor out = relu_backward(g, y);
      CHECK(out.dtype() == dt);
      check_same(out, reference(g, y));
    }
  }
}

TEST_CASE("relu_backward reads strided operands and keeps the gradient's shape", "[relu_backward]") {
  manual_seed(5);
  const Tensor y = randn({40, 30}).t(), g = randn({30, 40});
  const Tensor out = relu_backward(g, y);
  CHECK(out.shape() == Shape{30, 40});
  check_same(out, reference(g, y));
}

TEST_CASE("relu_backward's composite path gives the same values", "[relu_backward]") {
  // A y that requires grad makes the call recordable, so it runs where(y > 0, g, 0).
  const auto yv = tricky_values(500, 3), gv = tricky_values(500, 4);
  const Tensor y = tensor(yv, {500}).to(kFloat32), g = tensor(gv, {500}).to(kFloat32);
  const Tensor fused = relu_backward(g, y);
  Tensor y_tracked = y.clone();
  y_tracked.requires_grad_();
  const Tensor composite = relu_backward(g, y_tracked);
  check_same(composite, reference(g, y));
  check_same(fused, reference(g, y));
  // Mixed dtypes also take the composite.
  check_same(relu_backward(g.to(kFloat64), y), reference(g, y));
}

TEST_CASE("relu's gradient through autograd uses it, bfloat16 included", "[relu_backward]") {
  manual_seed(9);
  for (DType dt : {kFloat32, kBFloat16}) {
    Tensor x = randn({64, 33}).to(dt);
    x.requires_grad_();
    const Tensor w = randn({64, 33}).to(dt);
    (x.relu() * w).sum().backward();
    check_same(x.grad(), reference(w, x.relu().detach()));
  }
}
