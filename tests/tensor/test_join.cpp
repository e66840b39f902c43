// cat and stack: every dim (negative too), mixed dtypes promoted as PyTorch does,
// non-contiguous inputs, 0-size parts and PyTorch's skipping of 1-D empty tensors
// in cat, against index arithmetic on the raw inputs.
#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// cat along d of arrays whose other dims agree.
Array cat_ref(const std::vector<Array>& xs, int64_t d, DType out) {
  Array r;
  r.shape = xs[0].shape;
  r.shape[d] = 0;
  for (const Array& x : xs) r.shape[d] += x.shape[d];
  r.v.resize(ref::numel(r.shape));
  for (int64_t i = 0; i < ref::numel(r.shape); ++i) {
    auto idx = ref::unravel(i, r.shape);
    size_t t = 0;
    while (idx[d] >= xs[t].shape[d]) idx[d] -= xs[t++].shape[d];
    int64_t off = 0;
    for (size_t q = 0; q < idx.size(); ++q) off = off * xs[t].shape[q] + idx[q];
    r.v[i] = ref::cast(xs[t].v[off], out);
  }
  return r;
}

// stack = each input gets a new size-1 dim at d, then cat along d.
Array stack_ref(std::vector<Array> xs, int64_t d, DType out) {
  for (Array& x : xs) x.shape.insert(x.shape.begin() + d, 1);
  return cat_ref(xs, d, out);
}

struct Part {
  Shape shape;
  DType dt;
  Layout layout;
};

struct Case {
  std::vector<Part> parts;
  int64_t dim;
  DType want;  // the promoted dtype (torch.cat's result dtype in PyTorch 1.13)
};

}  // namespace

TEST_CASE("cat matches index arithmetic, with promotion and views", "[ops][join]") {
  std::mt19937_64 rng(3001);
  const auto C = Layout::contiguous, T = Layout::transposed, S = Layout::sliced, E = Layout::expanded,
             P = Layout::permuted;
  const std::vector<Case> cases = {
      {{{{3}, kFloat32, C}, {{4}, kFloat32, S}}, 0, kFloat32},
      {{{{2, 3}, kFloat32, C}, {{4, 3}, kFloat32, T}, {{1, 3}, kFloat32, E}}, 0, kFloat32},
      {{{{2, 3}, kInt32, C}, {{2, 5}, kFloat16, T}}, 1, kFloat16},
      {{{{2, 3}, kInt32, S}, {{2, 5}, kFloat16, C}}, -1, kFloat16},
      {{{{2, 3, 4}, kInt8, P}, {{2, 3, 4}, kUInt8, C}}, 1, kInt32},
      {{{{2, 3, 4}, kBool, C}, {{2, 1, 4}, kInt64, E}}, -2, kInt64},
      {{{{2, 3, 4}, kFloat32, C}, {{2, 3, 2}, kFloat64, C}, {{2, 3, 0}, kFloat32, C}}, 2, kFloat64},
      {{{{0, 4}, kBFloat16, C}, {{3, 4}, kBFloat16, S}}, 0, kBFloat16},
      {{{{5}, kInt64, C}}, 0, kInt64},
      {{{{2, 2}, kBool, C}, {{2, 2}, kBool, T}}, 0, kBool},
      {{{{3, 2}, kFloat16, C}, {{3, 1}, kBFloat16, C}}, 1, kFloat32},
      {{{{1, 1}, kUInt8, C}, {{1, 1}, kInt64, C}, {{1, 1}, kFloat32, C}}, 0, kFloat32},
      // PyTorch skips 1-D empty tensors of any dtype (their dtype still promotes).
      {{{{0}, kFloat64, C}, {{2, 3}, kInt32, C}}, 1, kFloat64},
      {{{{2, 3}, kFloat32, C}, {{0}, kFloat32, C}, {{2, 3}, kFloat32, T}}, 0, kFloat32},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> ts;
    std::vector<Array> xs;
    std::ostringstream desc;
    for (const Part& p : c.parts) {
      ts.push_back(ref::random_tensor(p.shape, p.dt, p.layout, rng, -20, 20));
      desc << ref::str(p.dt) << ref::str(p.shape) << " ";
      if (p.shape != Shape{0}) xs.push_back(ref::read(ts.back()));  // 1-D empty parts are skipped
    }
    INFO("cat of " << desc.str() << "along " << c.dim);
    const int64_t nd = static_cast<int64_t>(xs[0].shape.size());
    const int64_t d = c.dim < 0 ? c.dim + nd : c.dim;
    Tensor got = cat(ts, c.dim);
    CHECK(got.dtype() == c.want);
    CHECK_MATCH(got, cat_ref(xs, d, c.want), ref::Tol{0, 0});
    for (const Tensor& t : ts) CHECK(got.storage() != t.storage());  // a new tensor
  }
}

TEST_CASE("stack matches index arithmetic at every dim", "[ops][join]") {
  std::mt19937_64 rng(3002);
  for (const Shape& s : std::vector<Shape>{{}, {0}, {4}, {2, 3}, {2, 0}, {3, 1, 2}})
    for (int64_t dim = -static_cast<int64_t>(s.size()) - 1; dim <= static_cast<int64_t>(s.size()); ++dim)
      for (auto [da, db, want] : {std::tuple{kFloat32, kFloat32, kFloat32}, std::tuple{kInt32, kFloat64, kFloat64},
                                  std::tuple{kBool, kUInt8, kUInt8}, std::tuple{kFloat16, kFloat16, kFloat16}}) {
        const Layout l = s.size() >= 2 ? Layout::transposed : Layout::contiguous;
        Tensor a = ref::random_tensor(s, da, l, rng, -9, 9);
        Tensor b = ref::random_tensor(s, db, Layout::contiguous, rng, -9, 9);
        Tensor c = ref::random_tensor(s, da, s.empty() ? Layout::contiguous : Layout::sliced, rng, -9, 9);
        INFO("stack of 3 x " << ref::str(da) << "/" << ref::str(db) << ref::str(s) << " at " << dim);
        Tensor got = stack({a, b, c}, dim);
        const int64_t d = dim < 0 ? dim + static_cast<int64_t>(s.size()) + 1 : dim;
        CHECK(got.dtype() == want);
        CHECK_MATCH(got, stack_ref({ref::read(a), ref::read(b), ref::read(c)}, d, want), ref::Tol{0, 0});
      }
}

TEST_CASE("cat and stack reject what PyTorch rejects", "[ops][join]") {
  CHECK_THROWS_AS(cat({}), ValueError);
  CHECK_THROWS_AS(stack({}), ValueError);
  CHECK_THROWS_AS(cat({zeros({}), zeros({})}), ShapeError);
  CHECK_THROWS_AS(cat({zeros({2, 3}), zeros({2, 4})}, 0), ShapeError);
  CHECK_THROWS_AS(cat({zeros({2, 3}), zeros({2, 3, 1})}, 0), ShapeError);
  CHECK_THROWS_AS(cat({zeros({2, 3}), zeros({2, 3})}, 2), IndexError);
  CHECK_THROWS_AS(stack({zeros({2, 3}), zeros({3, 2})}), ShapeError);
  CHECK_THROWS_AS(stack({zeros({2}), zeros({2})}, 2), IndexError);
  // Only 1-D empty tensors are skipped; [0, 3] takes part in the size check.
  CHECK_THROWS_AS(cat({zeros({0, 3}), zeros({2, 4})}, 0), ShapeError);
  CHECK(cat({zeros({0, 3}), zeros({2, 3})}, 0).shape() == Shape{2, 3});
  CHECK(cat({zeros({0}), zeros({0})}).shape() == Shape{0});
}
