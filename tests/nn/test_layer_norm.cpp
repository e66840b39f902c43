// layer_norm and nn::LayerNorm: values against a two-pass float64 reference computed
// here from the raw input (every floating dtype, one or several normalised dims, with
// and without weight and bias, non-contiguous inputs, rows with a mean far from 0,
// 0-size inputs), the gradients of float32 against float64 ones, the module's
// parameters and repr, autocast, and the exact errors. gradcheck of all three
// gradients is in tests/autograd/test_gradcheck.cpp.
#include <cmath>

#include <catch2/catch.hpp>

#include "nn/nn.h"
#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// y = (x - mean) / sqrt(var + eps) * w + b over rows of `cols`, mean and var by two
// passes in double.
Array layer_norm_ref(const Array& x, int64_t cols, const Array* w, const Array* b, double eps) {
  Array y{x.shape, std::vector<double>(x.v.size())};
  const int64_t rows = cols == 0 ? 0 : static_cast<int64_t>(x.v.size()) / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < cols; ++j) m += x.v[r * cols + j];
    m /= cols;
    for (int64_t j = 0; j < cols; ++j) v += (x.v[r * cols + j] - m) * (x.v[r * cols + j] - m);
    v /= cols;
    for (int64_t j = 0; j < cols; ++j) {
      double t = (x.v[r * cols + j] - m) / std::sqrt(v + eps);
      if (w) t *= w->v[j];
      if (b) t += b->v[j];
      y.v[r * cols + j] = t;
    }
  }
  return y;
}

ref::Tol tol(DType dt) {
  switch (dt) {
    case DType::Float64: return {1e-12, 1e-12};
    case DType::Float32: return {1e-5, 2e-5};
    case DType::Float16: return {1e-3, 2e-3};
    default: return {1e-2, 1.6e-2};  // bfloat16
  }
}

struct Case {
  Shape shape;
  Shape normalized;
  Layout layout;
  bool weight, bias;
  double offset;  // added to every input: a mean far from 0 against a spread of 1
};

}  // namespace

TEST_CASE("layer_norm matches a float64 two-pass reference", "[nn][layer_norm]") {
  std::mt19937_64 rng(5101);
  const std::vector<Case> cases = {
      {{4, 10}, {10}, Layout::contiguous, true, true, 0},   {{3, 7}, {7}, Layout::transposed, false, false, 0},
      {{2, 3, 4}, {3, 4}, Layout::permuted, true, false, 0}, {{5, 2, 33}, {33}, Layout::sliced, false, true, 3},
      {{2, 1000}, {1000}, Layout::contiguous, true, true, 20}, {{6}, {6}, Layout::contiguous, true, true, 0},
      {{0, 5}, {5}, Layout::contiguous, true, true, 0},     {{3, 1}, {1}, Layout::contiguous, true, true, 0},
  };
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases) {
      INFO(ref::str(dt) << ref::str(c.shape) << " normalized " << ref::str(c.normalized) << " "
                        << ref::layout_name(c.layout) << " offset " << c.offset);
      Tensor x = ref::layout_tensor(c.shape, dt, c.layout, [&](int64_t n) {
        auto v = ref::random_values(n, kFloat64, rng, -1, 1);
        for (double& e : v) e = ref::cast(e + c.offset, dt);
        return v;
      });
      Tensor w = c.weight ? ref::random_tensor(c.normalized, dt, Layout::contiguous, rng, 0.5, 2) : Tensor();
      Tensor b = c.bias ? ref::random_tensor(c.normalized, dt, Layout::contiguous, rng, -1, 1) : Tensor();
      const Array wa = c.weight ? ref::read(w) : Array{}, ba = c.bias ? ref::read(b) : Array{};
      Tensor y = layer_norm(x, c.normalized, w, b, 1e-5);
      CHECK(y.dtype() == dt);
      CHECK_MATCH(y, layer_norm_ref(ref::read(x), ref::numel(c.normalized), c.weight ? &wa : nullptr,
                                    c.bias ? &ba : nullptr, 1e-5),
                  tol(dt));
    }
}

TEST_CASE("layer_norm's float32 gradients match its float64 ones", "[nn][layer_norm]") {
  // float64 gradients are checked against finite differences (gradcheck); float32
  // runs the same kernels in float, so agreement to float32 precision checks them.
  std::mt19937_64 rng(5102);
  Tensor x64 = ref::random_tensor({6, 2, 40}, kFloat64, Layout::contiguous, rng, -2, 2);
  Tensor w64 = ref::random_tensor({2, 40}, kFloat64, Layout::contiguous, rng, 0.5, 2);
  Tensor b64 = ref::random_tensor({2, 40}, kFloat64, Layout::contiguous, rng, -1, 1);
  Tensor g64 = ref::random_tensor({6, 2, 40}, kFloat64, Layout::contiguous, rng, -1, 1);
  std::vector<Tensor> grads[2];
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor x = x64.to(dt).detach().requires_grad_(), w = w64.to(dt).detach().requires_grad_(),
           b = b64.to(dt).detach().requires_grad_();
    layer_norm(x, {2, 40}, w, b).backward(g64.to(dt));
    grads[dt == kFloat32] = {x.grad(), w.grad(), b.grad()};
  }
  for (int i = 0; i < 3; ++i) {
    INFO("gradient " << i);
    CHECK_MATCH(grads[1][i], ref::read(grads[0][i]), ref::Tol{1e-4, 1e-5});
  }
}

TEST_CASE("layer_norm under autocast runs in float32", "[nn][layer_norm][amp]") {
  Tensor x = ones({2, 4}, kFloat16);
  nn::amp::AutocastGuard guard(DeviceType::CPU, kBFloat16);
  CHECK(layer_norm(x, {4}).dtype() == kFloat32);
}

TEST_CASE("nn::LayerNorm: parameters, repr and forward", "[nn][layer_norm]") {
  nn::LayerNorm ln({3, 4});
  auto params = ln.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "weight");
  CHECK(params[1].first == "bias");
  CHECK(ln.weight.to_vector<float>() == std::vector<float>(12, 1.0f));
  CHECK(ln.bias.to_vector<float>() == std::vector<float>(12, 0.0f));
  CHECK(ln.str() == "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True)");
  CHECK(nn::LayerNorm({5}, 1e-6, false).str() == "LayerNorm((5,), eps=1e-06, elementwise_affine=False)");
  CHECK(nn::LayerNorm({5}, 1e-6, false).named_parameters().empty());
  CHECK(nn::LayerNorm({5}, 1e-5, true, false).named_parameters().size() == 1);
  // [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
  Tensor y = nn::LayerNorm({4}, 0.0).forward(tensor({1.0f, 2.0f, 3.0f, 4.0f}));
  const double s = std::sqrt(1.25);
  CHECK_MATCH(y, Array{{4}, {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}}, ref::Tol{1e-6, 1e-6});
}

TEST_CASE("layer_norm raises the documented errors", "[nn][layer_norm][errors]") {
  using Catch::Message;
  CHECK_THROWS_MATCHES(layer_norm(zeros({2, 3}), {4}), ShapeError,
                       Message("Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
                               "size[2, 3]"));
  CHECK_THROWS_MATCHES(layer_norm(zeros({3}), {2, 3}), ShapeError,
                       Message("Given normalized_shape=[2, 3], expected input with shape [*, 2, 3], but got input of "
                               "size[3]"));
  CHECK_THROWS_MATCHES(layer_norm(zeros({2, 3}), {3}, zeros({4})), ShapeError,
                       Message("Expected weight to be of same shape as normalized_shape, but got weight of shape [4] "
                               "and normalized_shape = [3]"));
  CHECK_THROWS_MATCHES(layer_norm(zeros({2, 3}), {3}, Tensor(), zeros({2})), ShapeError,
                       Message("Expected bias to be of same shape as normalized_shape, but got bias of shape [2] and "
                               "normalized_shape = [3]"));
  CHECK_THROWS_MATCHES(layer_norm(zeros({2, 3}, kInt64), {3}), DTypeError,
                       Message("layer_norm(): expected floating point tensors, got int64"));
  CHECK_THROWS_MATCHES(layer_norm(zeros({2, 3}), {3}, zeros({3}, kMeta)), DeviceError,
                       Message("expected device cpu but got device meta"));
  nn::LayerNorm ln({3});
  CHECK_THROWS_MATCHES(ln.forward(zeros({2, 3}, kMeta)), DeviceError,
                       Message("Expected object of device type cpu but got device type meta for argument #1 'self' "
                               "in call to layer_norm_forward"));
}
