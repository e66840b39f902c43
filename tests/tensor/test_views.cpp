// Views share storage: each view op gives the sizes, strides and offset PyTorch
// gives, reads the right elements, and writes through to its base. reshape views
// when it can and copies when it must; view raises on a layout it cannot express;
// contiguous/clone/copy_/fill_, from_blob over caller memory, new_* inheriting
// dtype and device, item and to_vector.
#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;

namespace {

// 0, 1, 2, ... in a fresh contiguous tensor: a value names its storage position.
Tensor iota(const Shape& shape, DType dt = kFloat32) {
  std::vector<double> v(ref::numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return ref::make(shape, dt, v);
}

// The storage positions a view reads, from the view's own sizes/strides/offset
// (the same walk ref::read does), to compare with positions computed by hand.
struct Geometry {
  Shape sizes, strides;
  int64_t offset;
};
Geometry geometry(const Tensor& t) { return {t.shape(), t.stride(), t.storage_offset()}; }
bool operator==(const Geometry& a, const Geometry& b) {
  return a.sizes == b.sizes && a.strides == b.strides && a.offset == b.offset;
}
std::ostream& operator<<(std::ostream& os, const Geometry& g) {
  return os << "sizes " << ref::str(g.sizes) << " strides " << ref::str(g.strides) << " offset " << g.offset;
}

// Writes -1 through the view with fill_, then checks exactly the expected storage
// positions of the base changed.
void check_writes_through(Tensor base, Tensor view, const std::vector<int64_t>& positions) {
  const Array before = ref::read(base);
  view.fill_(-1);
  Array want = before;
  for (int64_t p : positions) want.v[p] = -1;
  CHECK(ref::read(base).v == want.v);
}

std::vector<int64_t> values_of(const Tensor& t) {
  std::vector<int64_t> v;
  for (double x : ref::read(t).v) v.push_back(static_cast<int64_t>(x));
  return v;
}

}  // namespace

TEST_CASE("view ops produce PyTorch's geometry, read the right elements and write through", "[views]") {
  struct Case {
    const char* name;
    Shape base;
    std::function<Tensor(const Tensor&)> op;
    Geometry want;
    std::vector<int64_t> elements;  // storage positions in row-major order of the view
  };
  const std::vector<Case> cases = {
      {"view", {2, 3, 4}, [](const Tensor& t) { return t.view({6, 4}); }, {{6, 4}, {4, 1}, 0}, {}},
      {"view -1", {2, 3, 4}, [](const Tensor& t) { return t.view({-1, 2}); }, {{12, 2}, {2, 1}, 0}, {}},
      {"reshape (viewable)", {2, 3, 4}, [](const Tensor& t) { return t.reshape({4, 6}); }, {{4, 6}, {6, 1}, 0}, {}},
      {"view of a slice, merged dims", {4, 6}, [](const Tensor& t) { return t.slice(0, 1, 3).view({12}); },
       {{12}, {1}, 6}, {}},
      {"view splitting a strided dim", {4, 6}, [](const Tensor& t) { return t.t().view({3, 2, 4}); },
       {{3, 2, 4}, {2, 1, 6}, 0}, {0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20, 3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}},
      {"permute", {2, 3, 4}, [](const Tensor& t) { return t.permute({2, 0, 1}); }, {{4, 2, 3}, {1, 12, 4}, 0},
       {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}},
      {"permute negative", {2, 3}, [](const Tensor& t) { return t.permute({-1, -2}); }, {{3, 2}, {1, 3}, 0},
       {0, 3, 1, 4, 2, 5}},
      {"transpose", {2, 3, 4}, [](const Tensor& t) { return t.transpose(0, 2); }, {{4, 3, 2}, {1, 4, 12}, 0}, {}},
      {"t", {2, 3}, [](const Tensor& t) { return t.t(); }, {{3, 2}, {1, 3}, 0}, {0, 3, 1, 4, 2, 5}},
      {"t of 1-D", {5}, [](const Tensor& t) { return t.t(); }, {{5}, {1}, 0}, {0, 1, 2, 3, 4}},
      {"slice", {10}, [](const Tensor& t) { return t.slice(0, 2, 7); }, {{5}, {1}, 2}, {2, 3, 4, 5, 6}},
      {"slice with step", {10}, [](const Tensor& t) { return t.slice(0, 1, 9, 3); }, {{3}, {3}, 1}, {1, 4, 7}},
      {"slice negative bounds", {10}, [](const Tensor& t) { return t.slice(0, -4, -1, 2); }, {{2}, {2}, 6}, {6, 8}},
      {"slice open end, clamped start", {3, 4}, [](const Tensor& t) { return t.slice(1, -10, std::nullopt, 2); },
       {{3, 2}, {4, 2}, 0}, {0, 2, 4, 6, 8, 10}},
      {"slice empty", {3, 4}, [](const Tensor& t) { return t.slice(0, 2, 1); }, {{0, 4}, {4, 1}, 8}, {}},
      {"slice of slice", {20}, [](const Tensor& t) { return t.slice(0, 3, 19, 2).slice(0, 1, 6, 2); },
       {{3}, {4}, 5}, {5, 9, 13}},
      {"narrow", {3, 4}, [](const Tensor& t) { return t.narrow(1, 1, 2); }, {{3, 2}, {4, 1}, 1}, {1, 2, 5, 6, 9, 10}},
      {"narrow negative start", {3, 4}, [](const Tensor& t) { return t.narrow(0, -1, 1); }, {{1, 4}, {4, 1}, 8},
       {8, 9, 10, 11}},
      {"select", {2, 3, 4}, [](const Tensor& t) { return t.select(1, 2); }, {{2, 4}, {12, 1}, 8},
       {8, 9, 10, 11, 20, 21, 22, 23}},
      {"select negative", {2, 3, 4}, [](const Tensor& t) { return t.select(-1, -1); }, {{2, 3}, {12, 4}, 3},
       {3, 7, 11, 15, 19, 23}},
      {"operator[]", {3, 2}, [](const Tensor& t) { return t[2]; }, {{2}, {1}, 4}, {4, 5}},
      {"select to 0-dim", {3}, [](const Tensor& t) { return t[1]; }, {{}, {}, 1}, {1}},
      {"expand", {3, 1}, [](const Tensor& t) { return t.expand({2, 3, 4}); }, {{2, 3, 4}, {0, 1, 0}, 0}, {}},
      {"expand -1", {3, 1}, [](const Tensor& t) { return t.expand({-1, 2}); }, {{3, 2}, {1, 0}, 0},
       {0, 0, 1, 1, 2, 2}},
      {"expand_as", {1, 4}, [](const Tensor& t) { return t.expand_as(zeros({2, 4})); }, {{2, 4}, {0, 1}, 0}, {}},
      {"squeeze", {1, 3, 1, 2}, [](const Tensor& t) { return t.squeeze(); }, {{3, 2}, {2, 1}, 0}, {}},
      {"squeeze dim", {1, 3, 1, 2}, [](const Tensor& t) { return t.squeeze(2); }, {{1, 3, 2}, {6, 2, 1}, 0}, {}},
      {"squeeze non-1 dim is a no-op", {2, 3}, [](const Tensor& t) { return t.squeeze(0); }, {{2, 3}, {3, 1}, 0}, {}},
      {"unsqueeze", {2, 3}, [](const Tensor& t) { return t.unsqueeze(1); }, {{2, 1, 3}, {3, 3, 1}, 0}, {}},
      {"unsqueeze end", {2, 3}, [](const Tensor& t) { return t.unsqueeze(-1); }, {{2, 3, 1}, {3, 1, 1}, 0}, {}},
      {"unsqueeze 0-dim", {}, [](const Tensor& t) { return t.unsqueeze(0); }, {{1}, {1}, 0}, {0}},
      {"flatten", {2, 3, 4}, [](const Tensor& t) { return t.flatten(1); }, {{2, 12}, {12, 1}, 0}, {}},
      {"flatten 0-dim", {}, [](const Tensor& t) { return t.flatten(); }, {{1}, {1}, 0}, {0}},
      {"as_strided", {10}, [](const Tensor& t) { return t.as_strided({2, 3}, {1, 2}, 1); }, {{2, 3}, {1, 2}, 1},
       {1, 3, 5, 2, 4, 6}},
      {"view of a 0-dim", {}, [](const Tensor& t) { return t.view({1, 1}); }, {{1, 1}, {1, 1}, 0}, {0}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor base = iota(c.base);
    Tensor v = c.op(base);
    CHECK(geometry(v) == c.want);
    CHECK(v.storage() == base.storage());
    CHECK(v.dtype() == base.dtype());
    // Elements: for a row-major-preserving view they are 0..n-1 from the offset.
    std::vector<int64_t> want = c.elements;
    if (want.empty() && ref::numel(v.shape()) > 0) {
      // Computed from the expected geometry (checked above) by hand-rolled index math.
      for (int64_t i = 0; i < ref::numel(c.want.sizes); ++i) {
        auto idx = ref::unravel(i, c.want.sizes);
        int64_t off = c.want.offset;
        for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * c.want.strides[d];
        want.push_back(off);
      }
    }
    CHECK(values_of(v) == want);
    if (std::string(c.name).rfind("expand", 0) != 0) check_writes_through(base, v, want);
  }
}

TEST_CASE("writing through expand, transpose and select reaches the base", "[views]") {
  Tensor a = iota({2, 3});
  a.t()[2].fill_(100);  // column 2
  CHECK(values_of(a) == std::vector<int64_t>{0, 1, 100, 3, 4, 100});
  a[0].copy_(ref::make({3}, kInt32, {7, 8, 9}));
  CHECK(values_of(a) == std::vector<int64_t>{7, 8, 9, 3, 4, 100});
  a.slice(1, 0, std::nullopt, 2).add_(1);
  CHECK(values_of(a) == std::vector<int64_t>{8, 8, 10, 4, 4, 101});
  Tensor col = iota({3, 1});
  Tensor wide = col.expand({3, 4});
  col.mul_(10);  // changes seen through the expanded view
  CHECK(values_of(wide) == std::vector<int64_t>{0, 0, 0, 0, 10, 10, 10, 10, 20, 20, 20, 20});
}

TEST_CASE("reshape views when it can and copies when it must", "[views]") {
  Tensor a = iota({3, 4});
  Tensor r = a.reshape({4, 3});
  CHECK(r.storage() == a.storage());
  Tensor tt = a.t();
  CHECK_FALSE(tt.is_contiguous());
  Tensor flat = tt.reshape({-1});  // not expressible as a view: copies
  CHECK(flat.storage() != a.storage());
  CHECK(flat.is_contiguous());
  CHECK(values_of(flat) == std::vector<int64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  flat.fill_(0);
  CHECK(values_of(a)[1] == 1);  // the copy is independent
  // Splitting a transposed dim is still a view.
  CHECK(tt.reshape({2, 2, 3}).storage() == a.storage());
  // An expanded tensor reshaped to merge the broadcast dim must copy.
  Tensor e = iota({3, 1}).expand({3, 4});
  Tensor er = e.reshape({12});
  CHECK(er.storage() != e.storage());
  CHECK(values_of(er) == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  // ... while one that keeps the broadcast dim separate stays a view.
  CHECK(e.reshape({3, 2, 2}).storage() == e.storage());
  CHECK(e.reshape({3, 2, 2}).stride() == Shape{1, 0, 0});
  // view on a layout it cannot express raises ShapeError; bad shapes too.
  CHECK_THROWS_AS(tt.view({12}), ShapeError);
  CHECK_THROWS_AS(e.view({12}), ShapeError);
  CHECK_THROWS_AS(a.view({5, -1}), ShapeError);
  CHECK_THROWS_AS(a.view({-1, -1}), ShapeError);
  CHECK_THROWS_AS(a.reshape({7}), ShapeError);
  // Empty tensors reshape freely.
  CHECK(zeros({0, 3}).reshape({3, 0, 5}).shape() == Shape{3, 0, 5});
  CHECK(zeros({0, 3}).view({-1}).shape() == Shape{0});
}

TEST_CASE("contiguous, clone, is_contiguous", "[views]") {
  Tensor a = iota({3, 4});
  CHECK(a.is_contiguous());
  CHECK(a.contiguous().storage() == a.storage());
  CHECK(a.contiguous().is_same(a));
  CHECK(a.clone().storage() != a.storage());
  CHECK(values_of(a.clone()) == values_of(a));
  Tensor t = a.t();
  Tensor tc = t.contiguous();
  CHECK(tc.storage() != a.storage());
  CHECK(tc.stride() == Shape{3, 1});
  CHECK(values_of(tc) == values_of(t));
  CHECK_FALSE(a.slice(1, 0, std::nullopt, 2).is_contiguous());
  CHECK(a.slice(0, 1, 3).is_contiguous());  // rows: offset but contiguous
  CHECK_FALSE(iota({3, 1}).expand({3, 2}).is_contiguous());
  CHECK(iota({1, 4}).t().is_contiguous());  // size-1 dims do not count
  CHECK(iota({4, 1}).expand({4, 1}).is_contiguous());
  Tensor c = a.clone();
  c.fill_(5);
  CHECK(values_of(a)[0] == 0);
  // clone of a non-contiguous view copies only the view's elements.
  Tensor sv = a.slice(1, 1, 3).clone();
  CHECK(sv.shape() == Shape{3, 2});
  CHECK(values_of(sv) == std::vector<int64_t>{1, 2, 5, 6, 9, 10});
  CHECK(ref::numel(sv.shape()) * 4 == static_cast<int64_t>(sv.storage()->nbytes()));
}

TEST_CASE("copy_ broadcasts and converts; fill_ touches only the view", "[views]") {
  Tensor dst = zeros({2, 6}, kFloat64);
  Tensor view = dst.slice(1, 0, std::nullopt, 2);  // columns 0, 2, 4
  view.copy_(ref::make({3}, kInt32, {1, 2, 3}));
  CHECK(ref::read(dst).v == std::vector<double>{1, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0});
  view.fill_(2.5);
  CHECK(ref::read(dst).v == std::vector<double>{2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0, 2.5, 0});
  Tensor h = zeros({3}, kFloat16);
  h.copy_(ref::make({3}, kFloat64, {0.1, 65504, 1e6}));
  CHECK(ref::read(h).v == std::vector<double>{0.0999755859375, 65504, INFINITY});
  // copy_ from a tensor into its own transpose (overlap) reads before writing.
  Tensor sq = iota({3, 3});
  sq.copy_(sq.t());
  CHECK(values_of(sq) == std::vector<int64_t>{0, 3, 6, 1, 4, 7, 2, 5, 8});
  // fill_ with a fractional value into bool gives true, as PyTorch's full does.
  Tensor b = zeros({2}, kBool);
  b.fill_(0.5);
  CHECK(ref::read(b).v == std::vector<double>{1, 1});
  Tensor bv = zeros({2, 2}, kBool).t();
  bv.fill_(0.25);
  CHECK(ref::read(bv).v == std::vector<double>{1, 1, 1, 1});
  Tensor i = zeros({2}, kInt32);
  i.fill_(-3.7);
  CHECK(ref::read(i).v == std::vector<double>{-3, -3});
}

TEST_CASE("from_blob wraps caller memory without copying", "[views]") {
  std::vector<float> mem = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(mem.data(), {2, 3}, kFloat32);
  CHECK(t.data_ptr() == mem.data());
  CHECK(ref::read(t).v == std::vector<double>{1, 2, 3, 4, 5, 6});
  mem[4] = 50;
  CHECK(ref::read(t).v[4] == 50);
  t.mul_(2);
  CHECK(mem == std::vector<float>{2, 4, 6, 8, 100, 12});
  Tensor strided = from_blob(mem.data(), {3}, kFloat32, {2});  // every other element
  CHECK(ref::read(strided).v == std::vector<double>{2, 6, 100});
  CHECK(strided.t().data_ptr() == mem.data());
  int deleted = 0;
  {
    Tensor owned = from_blob(mem.data() + 1, {2}, kFloat32, {}, [&](void* p) {
      CHECK(p == mem.data() + 1);
      ++deleted;
    });
    Tensor view = owned.view({2, 1});
    owned = Tensor();
    CHECK(deleted == 0);  // a view still holds the storage
  }
  CHECK(deleted == 1);
  std::vector<int64_t> ints = {7, 8};
  CHECK(from_blob(ints.data(), {2}, kInt64).sum().item<int64_t>() == 15);
}

TEST_CASE("new_* inherit dtype and device; empty_strided keeps strides", "[views]") {
  for (Device dev : {kCPU, kMeta})
    for (DType dt : {kFloat16, kInt32, kBool}) {
      INFO(dev << " " << dt);
      Tensor a = empty({2}, TensorOptions(dt, dev));
      for (const Tensor& n : {a.new_empty({3, 1}), a.new_zeros({3, 1}), a.new_ones({3, 1}), a.new_full({3, 1}, 1)}) {
        CHECK(n.dtype() == dt);
        CHECK(n.device() == dev);
        CHECK(n.shape() == Shape{3, 1});
        CHECK(n.storage() != a.storage());
      }
      if (dev == kCPU) {
        CHECK(ref::read(a.new_zeros({2})).v == std::vector<double>{0, 0});
        CHECK(ref::read(a.new_ones({2})).v == std::vector<double>{1, 1});
        CHECK(ref::read(a.new_full({2}, 7)).v == std::vector<double>(2, dt == kBool ? 1 : 7));
      }
      for (const Tensor& n : {zeros_like(a), ones_like(a), empty_like(a), full_like(a, 1)}) {
        CHECK(n.dtype() == dt);
        CHECK(n.device() == dev);
        CHECK(n.shape() == Shape{2});
      }
    }
  Tensor s = empty_strided({2, 3}, {1, 2});
  CHECK(s.stride() == Shape{1, 2});
  CHECK(s.storage()->nbytes() == 6 * sizeof(float));
}

TEST_CASE("item, to_vector, size and stride accessors", "[views]") {
  Tensor a = iota({2, 3}, kInt32);
  CHECK(a[1][2].item<int32_t>() == 5);
  CHECK(a[1][2].item().is_integral());
  CHECK(a.t()[2][1].item<int64_t>() == 5);
  CHECK(a.t().to_vector<int32_t>() == std::vector<int32_t>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(a.to_vector<float>(), DTypeError);
  CHECK_THROWS_AS(a.item(), ValueError);
  CHECK(ref::make({}, kFloat16, {2.5}).item<float>() == 2.5f);
  CHECK(ref::make({1}, kBool, {1}).item().is_bool());
  CHECK(a.size(-1) == 3);
  CHECK(a.stride(0) == 3);
  CHECK(a.dim() == 2);
  CHECK(a.numel() == 6);
  CHECK(a.element_size() == 4);
  CHECK(a.nbytes() == 24);
  CHECK(a.t().storage_offset() == 0);
  CHECK(a[1].storage_offset() == 3);
  CHECK_THROWS_AS(a.size(2), IndexError);
  CHECK_THROWS_AS(Tensor().dim(), ValueError);
}
