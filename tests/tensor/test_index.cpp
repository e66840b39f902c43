// index and index_put_ (PyTorch's advanced indexing) against a naive reference
// written here: every output position's source coordinates spelled out from the
// broadcast index values (masks turned into positions by a loop), for int64, int32
// and bool indices, adjacent and separated indexed dims, non-contiguous inputs,
// repeated positions (the last write wins; gradients add up), and the exact errors.
#include <catch2/catch.hpp>

#include <optional>

#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// One entry of an index: a dim left whole, positions of some shape, or a mask.
struct Entry {
  enum Kind { Whole, Positions, Mask } kind = Whole;
  std::vector<int64_t> v;  // positions, or the mask's 0/1 values
  Shape shape;
};

Tensor entry_tensor(const Entry& e, DType it) {
  if (e.kind == Entry::Whole) return Tensor();
  std::vector<double> d(e.v.begin(), e.v.end());
  return ref::make(e.shape, e.kind == Entry::Mask ? kBool : it, d);
}

// The reference: masks become position lists, then every output element's source is
// found by walking the output shape.
struct RefPlan {
  std::vector<int64_t> dims;                 // indexed dims of x
  std::vector<std::vector<int64_t>> pos;     // their positions, each of shape shapes[i]
  std::vector<Shape> shapes;
  Shape b;                                   // the broadcast shape
  int64_t at = 0;
};

RefPlan ref_plan(const Shape& x, const std::vector<Entry>& entries) {
  RefPlan p;
  int64_t d = 0;
  for (const Entry& e : entries) {
    if (e.kind == Entry::Whole) {
      ++d;
    } else if (e.kind == Entry::Positions) {
      p.dims.push_back(d++);
      p.pos.push_back(e.v);
      p.shapes.push_back(e.shape);
    } else {
      const int64_t k = static_cast<int64_t>(e.shape.size());
      std::vector<std::vector<int64_t>> c(static_cast<size_t>(k));
      for (int64_t i = 0; i < ref::numel(e.shape); ++i)
        if (e.v[size_t(i)]) {
          const auto u = ref::unravel(i, e.shape);
          for (int64_t j = 0; j < k; ++j) c[size_t(j)].push_back(u[size_t(j)]);
        }
      for (int64_t j = 0; j < k; ++j) {
        p.dims.push_back(d++);
        p.shapes.push_back({static_cast<int64_t>(c[size_t(j)].size())});
        p.pos.push_back(c[size_t(j)]);
      }
    }
  }
  for (const Shape& s : p.shapes) p.b = ref::broadcast(p.b, s);
  for (auto& v : p.pos)
    for (int64_t& w : v) w = w < 0 ? w + x[size_t(p.dims[&v - &p.pos[0]])] : w;
  const int64_t m = static_cast<int64_t>(p.dims.size());
  p.at = p.dims.back() - p.dims.front() == m - 1 ? p.dims.front() : 0;
  return p;
}

// Calls f(out_flat, x_flat, k) for every output element: k is its flat position in B.
template <class F>
Shape for_each_source(const Shape& x, const RefPlan& p, F&& f) {
  std::vector<int64_t> rest;  // x's other dims
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
    if (std::find(p.dims.begin(), p.dims.end(), d) == p.dims.end()) rest.push_back(d);
  const int64_t nb = static_cast<int64_t>(p.b.size());
  Shape out;
  for (int64_t i = 0; i < p.at; ++i) out.push_back(x[size_t(rest[size_t(i)])]);
  out.insert(out.end(), p.b.begin(), p.b.end());
  for (size_t i = size_t(p.at); i < rest.size(); ++i) out.push_back(x[size_t(rest[i])]);
  for (int64_t e = 0; e < ref::numel(out); ++e) {
    const auto u = ref::unravel(e, out);
    std::vector<int64_t> bc(u.begin() + p.at, u.begin() + p.at + nb);
    std::vector<int64_t> src(x.size());
    for (size_t i = 0; i < rest.size(); ++i) src[size_t(rest[i])] = u[i < size_t(p.at) ? i : i + size_t(nb)];
    int64_t k = 0;
    for (int64_t j = 0; j < nb; ++j) k = k * p.b[size_t(j)] + bc[size_t(j)];
    for (size_t i = 0; i < p.dims.size(); ++i) {
      // The index's own coordinate for B's: broadcasting aligns trailing dims.
      const Shape& s = p.shapes[i];
      int64_t flat = 0;
      for (size_t j = 0; j < s.size(); ++j) {
        const int64_t c = bc[size_t(nb) - s.size() + j];
        flat = flat * s[j] + (s[j] == 1 ? 0 : c);
      }
      src[size_t(p.dims[i])] = p.pos[i][size_t(flat)];
    }
    int64_t off = 0;
    for (size_t q = 0; q < x.size(); ++q) off = off * x[q] + src[q];
    f(e, off, k);
  }
  return out;
}

Array index_ref(const Array& x, const std::vector<Entry>& entries) {
  const RefPlan p = ref_plan(x.shape, entries);
  Array r;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  r.shape = for_each_source(x.shape, p, [&](int64_t e, int64_t off, int64_t) { pairs.push_back({e, off}); });
  r.v.resize(pairs.size());
  for (auto [e, off] : pairs) r.v[size_t(e)] = x.v[size_t(off)];
  return r;
}

struct Case {
  Shape shape;
  Layout layout;
  std::vector<Entry> entries;
};

Entry whole() { return {}; }
Entry at(std::vector<int64_t> v, Shape s) { return {Entry::Positions, std::move(v), std::move(s)}; }
Entry mask(std::vector<int64_t> v, Shape s) { return {Entry::Mask, std::move(v), std::move(s)}; }

const std::vector<Case> kCases = {
    {{5}, Layout::contiguous, {at({4, 0, -1, 2, 2}, {5})}},                       // repeats, a negative
    {{3, 4}, Layout::transposed, {whole(), at({3, -4, 1}, {3})}},
    {{3, 4, 5}, Layout::contiguous, {at({0, 2}, {2}), whole(), at({1, 4}, {2})}},   // separated: B in front
    {{3, 4, 5}, Layout::permuted, {whole(), at({3, 0, 1}, {3, 1}), at({4, -1}, {2})}},  // adjacent, broadcast
    {{3, 4, 5}, Layout::sliced, {at({2}, {}), at({1, 3}, {2})}},                     // a 0-dim index broadcasts
    {{3, 4, 2}, Layout::contiguous, {mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1}, {3, 4})}},  // a 2-D mask
    {{3, 4, 2}, Layout::expanded, {whole(), mask({0, 1, 1, 0}, {4})}},
    {{3, 4, 2}, Layout::contiguous, {mask({0, 0, 0}, {3})}},                        // nothing picked
    {{3, 4, 2}, Layout::contiguous, {at({}, {0}), whole(), at({1}, {1})}},          // an empty index
    {{2, 3, 4, 5}, Layout::contiguous, {whole(), at({2, 0}, {2}), whole(), at({1, 1, 3}, {3, 1})}},
    {{3, 4, 5}, Layout::contiguous, {whole(), at({-1}, {})}},                       // 0-dim: the dim goes
    {{3, 4, 5}, Layout::sliced, {at({2}, {}), at({1}, {})}},
};

}  // namespace

TEST_CASE("index matches a naive gather for every kind of index", "[ops][index]") {
  std::mt19937_64 rng(4201);
  for (DType dt : {kFloat32, kInt64, kBool})
    for (const Case& c : kCases)
      for (DType it : {kInt64, kInt32}) {
        if (!ref::layout_applies(c.layout, c.shape)) continue;
        INFO(ref::str(dt) << ref::str(c.shape) << " " << ref::layout_name(c.layout) << " " << ref::str(it)
                          << " case " << (&c - &kCases[0]));
        Tensor x = ref::random_tensor(c.shape, dt, c.layout, rng, -8, 8);
        std::vector<Tensor> idx;
        for (const Entry& e : c.entries) idx.push_back(entry_tensor(e, it));
        Tensor y = index(x, idx);
        const Array want = index_ref(ref::read(x), c.entries);
        CHECK(y.shape() == want.shape);
        CHECK_MATCH(y, want, ref::Tol{0, 0});
      }
}

TEST_CASE("index_put_ writes through views, the last of repeated positions winning", "[ops][index]") {
  std::mt19937_64 rng(4202);
  for (const Case& c : kCases) {
    INFO(ref::str(c.shape) << " case " << (&c - &kCases[0]));
    // A view of a larger tensor: the write must land in the base.
    Tensor base = ref::random_tensor(c.shape, kFloat64, Layout::contiguous, rng, -8, 8);
    Tensor big = cat({base, base}, 0);
    Tensor x = big.slice(0, 0, c.shape[0]);
    const Array before = ref::read(x);
    std::vector<Tensor> idx;
    for (const Entry& e : c.entries) idx.push_back(entry_tensor(e, kInt64));
    const Shape result = index(x, idx).shape();
    Tensor v = ref::random_tensor(result, kFloat64, Layout::contiguous, rng, 10, 20);
    const Array va = ref::read(v);
    Array want = before;
    const RefPlan p = ref_plan(c.shape, c.entries);
    for_each_source(c.shape, p, [&](int64_t e, int64_t off, int64_t) { want.v[size_t(off)] = va.v[size_t(e)]; });
    index_put_(x, idx, v);
    CHECK_MATCH(x, want, ref::Tol{0, 0});
    CHECK_MATCH(big.slice(0, c.shape[0], 2 * c.shape[0]), before, ref::Tol{0, 0});  // the other half untouched
    // A scalar value broadcast to every picked position, written into an int tensor.
    Tensor xi = ref::random_tensor(c.shape, kInt32, Layout::contiguous, rng, -8, 8);
    Array wi = ref::read(xi);
    for_each_source(c.shape, p, [&](int64_t, int64_t off, int64_t) { wi.v[size_t(off)] = 7; });
    index_put_(xi, idx, full({}, 7.0, kFloat32));
    CHECK_MATCH(xi, wi, ref::Tol{0, 0});
  }
  // Repeats: for each position, the value of the last index entry naming it.
  Tensor x = zeros({4});
  Tensor x2 = x;
  index_put_(x2, {tensor(std::vector<int64_t>{1, 3, 1, -3})}, tensor(std::vector<float>{10, 20, 30, 40}));
  CHECK_MATCH(x, (Array{{4}, {0, 40, 0, 20}}), ref::Tol{0, 0});
}

TEST_CASE("index's gradient adds up the picked positions' gradients", "[ops][index][autograd]") {
  std::mt19937_64 rng(4203);
  for (const Case& c : kCases) {
    INFO(ref::str(c.shape) << " case " << (&c - &kCases[0]));
    Tensor x = ref::random_tensor(c.shape, kFloat64, Layout::contiguous, rng, -1, 1).requires_grad_(true);
    std::vector<Tensor> idx;
    for (const Entry& e : c.entries) idx.push_back(entry_tensor(e, kInt64));
    Tensor y = index(x, idx);
    Tensor w = ref::random_tensor(y.shape(), kFloat64, Layout::contiguous, rng, -1, 1);
    (y * w).sum().backward();
    const Array wa = ref::read(w);
    Array want{c.shape, std::vector<double>(size_t(ref::numel(c.shape)), 0.0)};
    for_each_source(c.shape, ref_plan(c.shape, c.entries),
                    [&](int64_t e, int64_t off, int64_t) { want.v[size_t(off)] += wa.v[size_t(e)]; });
    CHECK_MATCH(x.grad(), want, ref::Tol{1e-15, 1e-15});
  }
}

TEST_CASE("index and index_put_ raise the documented errors", "[ops][index][errors]") {
  Tensor x = zeros({3, 4});
  auto ints = [](std::vector<int64_t> v) { return tensor(v); };
  CHECK_THROWS_MATCHES(index(x, {ints({0, 3})}), IndexError,
                       Catch::Message("index 3 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_MATCHES(index(x, {Tensor(), ints({-5})}), IndexError,
                       Catch::Message("index -5 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_MATCHES(index(x, {Tensor(), Tensor(), ints({0})}), IndexError,
                       Catch::Message("too many indices for tensor of dimension 2"));
  CHECK_THROWS_MATCHES(index(x, {Tensor(), ones({3, 4}, kBool)}), IndexError,
                       Catch::Message("too many indices for tensor of dimension 2"));
  CHECK_THROWS_MATCHES(index(x, {ints({0}), Tensor(), Tensor()}), IndexError,
                       Catch::Message("too many indices for tensor of dimension 2"));
  Tensor expanded = zeros({1, 4}).expand({3, 4});
  CHECK_THROWS_MATCHES(index_put_(expanded, {ints({0})}, ones({})), ValueError,
                       Catch::Message("unsupported operation: more than one element of the written-to tensor refers "
                                      "to a single memory location. Please clone() the tensor before performing the "
                                      "operation."));
  CHECK_THROWS_MATCHES(index(x, {ones({2}, kBool)}), IndexError,
                       Catch::Message("The shape of the mask [2] at index 0 does not match the shape of the "
                                      "indexed tensor [3, 4] at index 0"));
  CHECK_THROWS_MATCHES(index(x, {zeros({2})}), IndexError,
                       Catch::Message("tensors used as indices must be long, int, byte or bool tensors"));
  CHECK_THROWS_MATCHES(index(x, {ints({0, 1}), ints({0, 1, 2})}), IndexError,
                       Catch::Message("shape mismatch: indexing tensors could not be broadcast together with "
                                      "shapes [2], [3]"));
  CHECK_THROWS_MATCHES(index(x, {full({}, true, kBool)}), IndexError,
                       Catch::Message("index: a 0-dim bool index (True or False) is not supported"));
  CHECK_THROWS_MATCHES(index(x, {Tensor()}), IndexError, Catch::Message("index: no index tensor given"));
  CHECK_THROWS_MATCHES(index_put_(x, {ints({0, 1})}, zeros({3})), ShapeError,
                       Catch::Message("shape mismatch: value tensor of shape [3] cannot be broadcast to indexing "
                                      "result of shape [2, 4]"));
  // A failed call leaves the tensor as it was.
  CHECK(x.abs().sum().item<float>() == 0.0f);
}
