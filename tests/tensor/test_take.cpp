// take (ONNX Gather), index_select and embedding: forward values against index
// arithmetic on the raw input (every dtype, non-contiguous inputs, negative and
// repeated indices, any index shape, 0-size cases), take_backward against a naive
// scatter-add, shapes on the meta device, and the exact error messages.
#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// take by index arithmetic: out[a, j..., b] = x[a, wrap(index[j...]), b].
Array take_ref(const Array& x, int64_t d, const std::vector<int64_t>& index, const Shape& index_shape) {
  Array r;
  r.shape.assign(x.shape.begin(), x.shape.begin() + d);
  r.shape.insert(r.shape.end(), index_shape.begin(), index_shape.end());
  r.shape.insert(r.shape.end(), x.shape.begin() + d + 1, x.shape.end());
  const int64_t k = static_cast<int64_t>(index_shape.size());
  r.v.resize(ref::numel(r.shape));
  for (int64_t e = 0; e < ref::numel(r.shape); ++e) {
    const auto idx = ref::unravel(e, r.shape);
    int64_t j = 0;  // the flat position in the index
    for (int64_t q = 0; q < k; ++q) j = j * index_shape[q] + idx[d + q];
    int64_t s = index[j];
    if (s < 0) s += x.shape[d];
    int64_t off = 0;
    for (int64_t q = 0; q < static_cast<int64_t>(x.shape.size()); ++q) {
      const int64_t c = q < d ? idx[q] : q == d ? s : idx[q - 1 + k];
      off = off * x.shape[q] + c;
    }
    r.v[e] = x.v[off];
  }
  return r;
}

Tensor index_tensor(const std::vector<int64_t>& v, const Shape& shape, DType dt) {
  std::vector<double> d(v.begin(), v.end());
  return ref::make(shape, dt, d);
}

struct Case {
  Shape shape;
  Layout layout;
  int64_t dim;
  std::vector<int64_t> index;
  Shape index_shape;
};

const std::vector<Case> kCases = {
    {{5}, Layout::contiguous, 0, {4, 0, -1, 2, 2}, {5}},                 // repeats and a negative index
    {{5}, Layout::sliced, 0, {3}, {}},                                   // 0-dim index drops the dim
    {{4, 3}, Layout::contiguous, 0, {1, -4, 3, 1, 0, 2}, {2, 3}},        // 2-D index
    {{4, 3}, Layout::transposed, 1, {2, 0}, {2}},
    {{4, 3}, Layout::contiguous, -1, {-3, -1, 0, 1}, {2, 1, 2}},
    {{2, 3, 4}, Layout::permuted, 1, {2, 2, 0}, {3}},
    {{2, 3, 4}, Layout::expanded, 2, {3, -4}, {1, 2}},
    {{2, 3, 4}, Layout::sliced, 0, {1, 0, 1}, {3}},
    {{3, 0, 2}, Layout::contiguous, 0, {2, 0}, {2}},                     // 0-size inner dims
    {{3, 2}, Layout::contiguous, 0, {}, {0}},                            // empty index
    {{3, 2}, Layout::contiguous, 1, {}, {2, 0}},
};

}  // namespace

TEST_CASE("take matches index arithmetic for every dtype, layout and index shape", "[ops][take]") {
  std::mt19937_64 rng(4101);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool})
    for (const Case& c : kCases)
      for (DType it : {kInt64, kInt32}) {
        if (!ref::layout_applies(c.layout, c.shape)) continue;
        INFO(ref::str(dt) << ref::str(c.shape) << " " << ref::layout_name(c.layout) << " dim " << c.dim << " index "
                          << ref::str(c.index_shape) << " " << ref::str(it));
        Tensor x = ref::random_tensor(c.shape, dt, c.layout, rng, -8, 8);
        Tensor y = take(x, c.dim, index_tensor(c.index, c.index_shape, it));
        const int64_t d = c.dim < 0 ? c.dim + static_cast<int64_t>(c.shape.size()) : c.dim;
        CHECK(y.dtype() == dt);
        CHECK_MATCH(y, take_ref(ref::read(x), d, c.index, c.index_shape), ref::Tol{0, 0});
      }
}

TEST_CASE("index_select and embedding are take with PyTorch's shapes", "[ops][take]") {
  std::mt19937_64 rng(4102);
  Tensor x = ref::random_tensor({4, 5}, kFloat32, Layout::transposed, rng, -1, 1);
  const Array xa = ref::read(x);
  // A vector index keeps the dim; a 0-dim index keeps it with size 1 (PyTorch).
  Tensor s = index_select(x, 1, index_tensor({4, 0, 4}, {3}, kInt64));
  CHECK(s.shape() == Shape{4, 3});
  CHECK_MATCH(s, take_ref(xa, 1, {4, 0, 4}, {3}), ref::Tol{0, 0});
  Tensor s0 = index_select(x, 0, index_tensor({2}, {}, kInt32));
  CHECK(s0.shape() == Shape{1, 5});
  CHECK_MATCH(s0, take_ref(xa, 0, {2}, {1}), ref::Tol{0, 0});
  // embedding: indices.shape + [embedding_dim].
  Tensor e = embedding(x, index_tensor({3, 0, 0, 1, 2, 3}, {2, 3}, kInt64));
  CHECK(e.shape() == Shape{2, 3, 5});
  CHECK_MATCH(e, take_ref(xa, 0, {3, 0, 0, 1, 2, 3}, {2, 3}), ref::Tol{0, 0});
}

TEST_CASE("take_backward scatter-adds into zeros, repeats summed", "[ops][take]") {
  std::mt19937_64 rng(4103);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(ref::str(dt));
    const Shape in{3, 4, 2};
    const std::vector<int64_t> index{3, 0, 3, 3, 1};  // position 2 never picked: its gradient stays 0
    Tensor g = ref::random_tensor({3, 5, 2}, dt, Layout::contiguous, rng, -2, 2);
    const Array ga = ref::read(g);
    Array want{in, std::vector<double>(ref::numel(in), 0.0)};
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t i = 0; i < 2; ++i) want.v[(o * 4 + index[j]) * 2 + i] += ga.v[(o * 5 + j) * 2 + i];
    for (double& v : want.v) v = ref::cast(v, dt);  // one rounding of the float32 sum
    Tensor gx = take_backward(g, in, 1, index_tensor(index, {5}, kInt64));
    CHECK(gx.dtype() == dt);
    CHECK_MATCH(gx, want, ref::tol_for(dt));
  }
}

TEST_CASE("take and take_backward on 0-size operands", "[ops][take]") {
  Tensor g = take_backward(zeros({2, 0}), {2, 3}, 1, zeros({0}, kInt64));
  CHECK_MATCH(g, Array{{2, 3}, std::vector<double>(6, 0.0)}, ref::Tol{0, 0});
  CHECK(take(zeros({0, 3}), 1, zeros({4}, kInt64)).shape() == Shape{0, 4});
}

TEST_CASE("take infers shapes on the meta device", "[ops][take][meta]") {
  Tensor y = take(empty({2, 7, 3}, kMeta), 1, empty({4, 5}, {kInt64, kMeta}));
  CHECK(y.shape() == Shape{2, 4, 5, 3});
  CHECK(y.device().is_meta());
}

TEST_CASE("take, index_select and embedding raise the documented errors", "[ops][take][errors]") {
  Tensor x = zeros({3, 4});
  auto idx = [](std::vector<int64_t> v) { return tensor(v); };
  CHECK_THROWS_MATCHES(take(x, 0, idx({0, 3})), IndexError,
                       Catch::Message("take(): index 3 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_MATCHES(take(x, 1, idx({-5})), IndexError,
                       Catch::Message("take(): index -5 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_MATCHES(index_select(x, 0, idx({-1})), IndexError,
                       Catch::Message("index_select(): index -1 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_MATCHES(embedding(x, idx({1, 7})), IndexError,
                       Catch::Message("embedding(): index 7 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_MATCHES(take(x, 0, zeros({1})), DTypeError,
                       Catch::Message("take(): expected index of dtype int64 or int32, got float32"));
  CHECK_THROWS_MATCHES(take(zeros({}), 0, idx({0})), IndexError,
                       Catch::Message("take() cannot be applied to a 0-dim tensor."));
  CHECK_THROWS_MATCHES(take(x, 2, idx({0})), IndexError,
                       Catch::Message("Dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  CHECK_THROWS_MATCHES(index_select(x, 0, zeros({2, 1}, kInt64)), IndexError,
                       Catch::Message("index_select(): Index is supposed to be a vector"));
  CHECK_THROWS_MATCHES(embedding(zeros({3}), idx({0})), ShapeError,
                       Catch::Message("embedding(): expected a 2-D weight [num_embeddings, embedding_dim], got [3]"));
  CHECK_THROWS_MATCHES(take(x, 0, zeros({1}, {kInt64, kMeta})), DeviceError,
                       Catch::Message("expected device cpu but got device meta"));
  // An empty index never reads a position, so nothing is out of bounds, even in an empty dim.
  CHECK(take(zeros({0, 2}), 0, zeros({0}, kInt64)).shape() == Shape{0, 2});
  CHECK_THROWS_AS(take(zeros({0, 2}), 0, idx({0})), IndexError);
}
