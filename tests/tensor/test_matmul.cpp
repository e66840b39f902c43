// matmul against a triple loop in double: 1-D.1-D, 2-D.1-D, 1-D.2-D, 2-D.2-D,
// batched with broadcast batch dims, transposed/sliced/expanded/permuted operands,
// k = 0 and empty m or batch, for floating and integer dtypes (integers wrap like
// the C++ types, as PyTorch's do).
#include <cmath>

#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// PyTorch's matmul on dense float64 arrays: 1-D operands become a row (left) or a
// column (right) and that dim is dropped from the result; batch dims broadcast.
// `scale` gets sum_k |a||b| for each output, the size of the rounding error.
Array matmul_ref(Array A, Array B, std::vector<double>& scale) {
  const bool a1 = A.shape.size() == 1, b1 = B.shape.size() == 1;
  if (a1) A.shape.insert(A.shape.begin(), 1);
  if (b1) B.shape.push_back(1);
  const int64_t m = A.shape[A.shape.size() - 2], k = A.shape.back(), n = B.shape.back();
  const Shape abatch(A.shape.begin(), A.shape.end() - 2), bbatch(B.shape.begin(), B.shape.end() - 2);
  const Shape batch = ref::broadcast(abatch, bbatch);
  Shape ae = batch, be = batch, out = batch;
  ae.insert(ae.end(), {m, k});
  be.insert(be.end(), {k, n});
  const Array a = ref::expand(A, ae), b = ref::expand(B, be);
  const int64_t nb = ref::numel(batch);
  Array c;
  c.shape = batch;
  if (!a1) c.shape.push_back(m);
  if (!b1) c.shape.push_back(n);
  c.v.assign(nb * m * n, 0);
  scale.assign(nb * m * n, 0);
  for (int64_t p = 0; p < nb; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sa = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double x = a.v[(p * m + i) * k + q], y = b.v[(p * k + q) * n + j];
          s += x * y;
          sa += std::fabs(x * y);
        }
        c.v[(p * m + i) * n + j] = s;
        scale[(p * m + i) * n + j] = sa;
      }
  return c;
}

struct Case {
  Shape a, b;
};

const std::vector<Case> kCases = {
    {{5}, {5}},          {{1}, {1}},           {{3, 4}, {4}},       {{4}, {4, 6}},      {{3, 4}, {4, 6}},
    {{1, 1}, {1, 1}},    {{2, 1, 3, 4}, {5, 4, 6}}, {{7, 3, 4}, {4, 2}}, {{4}, {2, 4, 3}},  {{2, 3, 4}, {4}},
    {{3, 0}, {0, 4}},    {{0, 4}, {4, 5}},     {{4, 5}, {5, 0}},    {{0, 2, 3}, {3, 4}}, {{0}, {0}},
    {{2, 3, 0}, {2, 0, 5}}, {{3, 1, 2, 5}, {1, 4, 5, 3}}, {{6, 8}, {8, 7}},
    {{2, 3, 4, 5}, {2, 3, 5, 2}}, {{2, 3, 4, 5}, {5, 3}}, {{4, 5}, {2, 3, 5, 2}},  // batch dims that collapse
};

// Sizes that cross the GEMM's blocking edges (floating dtypes only: the double
// reference is a triple loop).
const std::vector<Case> kBigCases = {{{67, 129}, {129, 33}}, {{2, 65, 130}, {130, 70}}, {{300, 17}, {17, 301}}};

}  // namespace

TEST_CASE("matmul matches a float64 triple loop", "[ops][matmul]") {
  std::mt19937_64 rng(2001);
  const Layout layouts[] = {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded,
                            Layout::permuted};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8, kUInt8}) {
    std::vector<Case> cases = kCases;
    if (is_floating(dt)) cases.insert(cases.end(), kBigCases.begin(), kBigCases.end());
    for (const Case& c : cases)
      for (Layout la : layouts)
        for (Layout lb : layouts) {
          if (!ref::layout_applies(la, c.a) || !ref::layout_applies(lb, c.b)) continue;
          const bool big = ref::numel(c.a) > 2000 || ref::numel(c.b) > 2000;
          if (big && (la == Layout::expanded || lb == Layout::expanded || la == Layout::permuted ||
                      lb == Layout::permuted || (la != lb && la != Layout::contiguous && lb != Layout::contiguous)))
            continue;
          const double lo = is_floating(dt) ? -1 : (dt == kUInt8 ? 0 : -5), hi = is_floating(dt) ? 1 : 5;
          Tensor a = ref::random_tensor(c.a, dt, la, rng, lo, hi);
          Tensor b = ref::random_tensor(c.b, dt, lb, rng, lo, hi);
          INFO(ref::str(dt) << " " << ref::str(c.a) << " (" << ref::layout_name(la) << ") @ " << ref::str(c.b) << " ("
                            << ref::layout_name(lb) << ")");
          std::vector<double> scale;
          Array want = matmul_ref(ref::read(a), ref::read(b), scale);
          Tensor got = matmul(a, b);
          CHECK(got.dtype() == dt);
          std::vector<double> allowed(want.v.size(), 0);
          if (is_floating(dt)) {
            // Rounding of the result, plus float32 (float64) accumulation error.
            const double acc = dt == kFloat64 ? 1e-13 : 1e-5;
            for (size_t i = 0; i < want.v.size(); ++i)
              allowed[i] = ref::tol_for(dt).rtol * std::fabs(want.v[i]) + acc * scale[i];
          } else {
            for (double& v : want.v) v = ref::cast(v, dt);  // integer products wrap
          }
          CHECK(ref::compare_within(got, want, allowed) == "");
          if (la == Layout::transposed && lb == Layout::contiguous)
            CHECK(ref::compare_within(a.matmul(b), want, allowed) == "");
        }
  }
}

TEST_CASE("matmul: 1-D results drop the added dim, as PyTorch's", "[ops][matmul]") {
  CHECK(matmul(ones({5}), ones({5})).shape() == Shape{});
  CHECK(matmul(ones({3, 4}), ones({4})).shape() == Shape{3});
  CHECK(matmul(ones({4}), ones({4, 6})).shape() == Shape{6});
  CHECK(matmul(ones({2, 1, 3, 4}), ones({5, 4, 6})).shape() == Shape{2, 5, 3, 6});
  CHECK(matmul(ones({4}), ones({2, 4, 3})).shape() == Shape{2, 3});
  CHECK(matmul(ones({3, 0}), ones({0, 4})).shape() == Shape{3, 4});
  CHECK(ref::read(matmul(ones({3, 0}), ones({0, 4}))).v == std::vector<double>(12, 0.0));
  // Small exact example: [[1, 2], [3, 4]] @ [5, 6] = [17, 39].
  Tensor a = ref::make({2, 2}, kInt64, {1, 2, 3, 4});
  CHECK(ref::read(matmul(a, ref::make({2}, kInt64, {5, 6}))).v == std::vector<double>{17, 39});
  CHECK(ref::read(matmul(ref::make({2}, kInt64, {5, 6}), a)).v == std::vector<double>{23, 34});
  CHECK(ref::read(matmul(a, a.t())).v == std::vector<double>{5, 11, 11, 25});
}

TEST_CASE("matmul rejects mixed dtypes, bool, 0-dim and mismatched sizes", "[ops][matmul]") {
  CHECK_THROWS_AS(matmul(ones({2, 2}), ones({2, 2}, kFloat64)), DTypeError);
  CHECK_THROWS_AS(matmul(ones({2, 2}, kBool), ones({2, 2}, kBool)), Error);
  CHECK_THROWS_AS(matmul(ones({}), ones({2})), ShapeError);
  CHECK_THROWS_AS(matmul(ones({2, 3}), ones({2, 3})), ShapeError);
  CHECK_THROWS_AS(matmul(ones({2, 2, 3}), ones({3, 3, 2})), ShapeError);  // batch 2 vs 3
}

// addmm = beta * input + alpha * (mat1 . mat2). float32 and float64 without autograd
// start the GEMM from the broadcast bias; the half types and recorded calls take the
// composite path. Both against a float64 loop, for every bias shape a Linear or an
// ONNX Gemm passes, row counts on the few-rows and the packed GEMM paths.
TEST_CASE("addmm matches a float64 loop for every bias shape", "[ops][matmul]") {
  std::mt19937_64 rng(2002);
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (int64_t m : {1, 3, 20})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 7}, {33, 100}})
        for (const Shape& bshape : {Shape{n}, Shape{1, n}, Shape{m, 1}, Shape{m, n}, Shape{}})
          for (auto [beta, alpha] : {std::pair<double, double>{1, 1}, {0.5, 2}, {0, 1}})
            for (Layout lb : {Layout::contiguous, Layout::transposed}) {
              Tensor a = ref::random_tensor({m, k}, dt, Layout::contiguous, rng, -1, 1);
              Tensor b = ref::random_tensor({k, n}, dt, lb, rng, -1, 1);
              Tensor bias = ref::random_tensor(bshape, dt, Layout::contiguous, rng, -1, 1);
              if (beta == 0) bias.fill_(std::nan(""));  // beta == 0 ignores the bias, NaN included
              INFO(ref::str(dt) << " m " << m << " n " << n << " k " << k << " bias " << ref::str(bshape) << " beta "
                                << beta << " alpha " << alpha << " b " << ref::layout_name(lb));
              const Array A = ref::read(a), B = ref::read(b), C = ref::expand(ref::read(bias), {m, n});
              Array want{{m, n}, std::vector<double>(size_t(m * n))};
              std::vector<double> allowed(want.v.size());
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  double s = 0, scale = 0;
                  for (int64_t p = 0; p < k; ++p) {
                    s += A.v[size_t(i * k + p)] * B.v[size_t(p * n + j)];
                    scale += std::fabs(A.v[size_t(i * k + p)] * B.v[size_t(p * n + j)]);
                  }
                  const double c = beta == 0 ? 0 : beta * C.v[size_t(i * n + j)];
                  want.v[size_t(i * n + j)] = c + alpha * s;
                  allowed[size_t(i * n + j)] = ref::tol_for(dt).rtol * (std::fabs(c) + std::fabs(alpha) * scale) +
                                               (dt == kFloat64 ? 1e-13 : 1e-5) * scale;
                }
              Tensor got = addmm(bias, a, b, beta, alpha);
              CHECK(got.dtype() == dt);
              CHECK(got.shape() == Shape{m, n});
              CHECK(ref::compare_within(got, want, allowed) == "");
            }
}

TEST_CASE("addmm records matmul and add for autograd, and rejects non-matrices", "[ops][matmul]") {
  std::mt19937_64 rng(2003);
  Tensor a = ref::random_tensor({3, 4}, kFloat64, Layout::contiguous, rng, -1, 1).requires_grad_(true);
  Tensor b = ref::random_tensor({4, 5}, kFloat64, Layout::contiguous, rng, -1, 1).requires_grad_(true);
  Tensor bias = ref::random_tensor({5}, kFloat64, Layout::contiguous, rng, -1, 1).requires_grad_(true);
  Tensor y = addmm(bias, a, b, 0.5, 2.0);
  CHECK(y.grad_fn() != nullptr);
  y.sum().backward();
  // d/d bias of sum(0.5 * bias broadcast over 3 rows) = 1.5 per element.
  CHECK(ref::read(bias.grad()).v == std::vector<double>(5, 1.5));
  CHECK(ref::compare_within(a.grad(), ref::read(mul(ones({3, 5}, kFloat64), 2.0).matmul(b.detach().t())),
                            std::vector<double>(12, 1e-12)) == "");
  CHECK_THROWS_WITH(addmm(ones({3}), ones({3}), ones({3, 3})), "addmm: mat1 and mat2 must be 2-D, got 1D and 2D");
  CHECK_THROWS_AS(addmm(ones({3}), ones({2, 4}), ones({5, 3})), ShapeError);  // matmul's message
}
