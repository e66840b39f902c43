// Creation: zeros/ones/full (dtype from the value's kind when no options are
// given), arange with PyTorch's length rule ceil((end - start) / step), rand and
// randn statistics and seed reproducibility (also across thread counts), a
// generator's state saved and restored as bytes, tensor() from vectors and initializer lists, scalar_tensor.
#include <cmath>

#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;

TEST_CASE("zeros, ones and full fill every dtype and shape", "[creation]") {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool})
    for (const Shape& s : std::vector<Shape>{{}, {0}, {1}, {3, 4}, {2, 0, 3}, {70000}}) {
      INFO(dt << " " << ref::str(s));
      const size_t n = static_cast<size_t>(ref::numel(s));
      Tensor z = zeros(s, dt), o = ones(s, dt), f = full(s, 3, dt);
      for (const Tensor& t : {z, o, f}) {
        CHECK(t.dtype() == dt);
        CHECK(t.shape() == s);
        CHECK(t.device() == kCPU);
        CHECK(t.is_contiguous());
      }
      CHECK(ref::read(z).v == std::vector<double>(n, 0));
      CHECK(ref::read(o).v == std::vector<double>(n, 1));
      CHECK(ref::read(f).v == std::vector<double>(n, dt == kBool ? 1 : 3));
    }
  CHECK(ref::read(full({2}, -2.5, kFloat16)).v == std::vector<double>{-2.5, -2.5});
  CHECK(ref::read(full({2}, 0.1, kFloat64)).v == std::vector<double>{0.1, 0.1});
  CHECK(ref::read(full({2}, 0.1, kFloat32)).v == std::vector<double>(2, static_cast<float>(0.1)));
  CHECK(ref::read(full({2}, 3.7, kInt32)).v == std::vector<double>{3, 3});  // truncation, as PyTorch
  CHECK(ref::read(full({2}, 0.5, kBool)).v == std::vector<double>{1, 1});   // nonzero is true
  CHECK(ref::read(full({1}, int64_t{1} << 40, kInt64)).v == std::vector<double>{1099511627776.0});
  CHECK(ref::read(full({1}, true, kFloat32)).v == std::vector<double>{1});
}

TEST_CASE("full without options takes the dtype from the value's kind", "[creation]") {
  CHECK(full({2}, true, std::nullopt).dtype() == kBool);
  CHECK(full({2}, 3, std::nullopt).dtype() == kInt64);
  CHECK(full({2}, int8_t{3}, std::nullopt).dtype() == kInt64);
  CHECK(full({2}, 2.5, std::nullopt).dtype() == kFloat32);
  CHECK(full({2}, 2.5f, std::nullopt).dtype() == kFloat32);
  CHECK(ref::read(full({2}, 3, std::nullopt)).v == std::vector<double>{3, 3});
  CHECK(ref::read(full({2}, true, std::nullopt)).v == std::vector<double>{1, 1});
  CHECK(ref::read(full({2}, 2.5, std::nullopt)).v == std::vector<double>{2.5, 2.5});
}

TEST_CASE("arange follows PyTorch's length rule and dtypes", "[creation]") {
  struct Case {
    Tensor t;
    DType dt;
    std::vector<double> want;  // from torch.arange in PyTorch 1.13
  };
  const std::vector<Case> cases = {
      {arange(5), kInt64, {0, 1, 2, 3, 4}},
      {arange(1, 4), kInt64, {1, 2, 3}},
      {arange(5, 0, -1), kInt64, {5, 4, 3, 2, 1}},
      {arange(-1, -10, -3), kInt64, {-1, -4, -7}},
      {arange(0, 5.5, 1.5), kFloat32, {0, 1.5, 3, 4.5}},
      {arange(1, 2.5, 0.5), kFloat32, {1, 1.5, 2}},
      {arange(-0.5, 2), kFloat32, {-0.5, 0.5, 1.5}},
      {arange(0, 1, 0.1), kFloat32,
       {0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, 0.5,
        0.6000000238418579, 0.699999988079071, 0.800000011920929, 0.8999999761581421}},
      {arange(0, 1, 1.0 / 3), kFloat32, {0.0, 0.3333333432674408, 0.6666666865348816}},
      {arange(1, 0.05, -0.2), kFloat32,
       {1.0, 0.800000011920929, 0.6000000238418579, 0.4000000059604645, 0.20000000298023224}},
      {arange(0, 10, 3, kInt32), kInt32, {0, 3, 6, 9}},
      {arange(0.5, 3, 1, kInt32), kInt32, {0, 1, 2}},
      {arange(0, 3, 1, kFloat64), kFloat64, {0, 1, 2}},
      {arange(0, 1, 0.25, kFloat16), kFloat16, {0, 0.25, 0.5, 0.75}},
      {arange(10, 10), kInt64, {}},
      {arange(0.0), kFloat32, {}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(cases[i].t.dtype() == cases[i].dt);
    CHECK(cases[i].t.shape() == Shape{static_cast<int64_t>(cases[i].want.size())});
    CHECK(ref::read(cases[i].t).v == cases[i].want);
  }
  // A long float range has no accumulated error: element i is start + i * step.
  Tensor long_range = arange(0, 100000, 0.7, kFloat64);
  const Array L = ref::read(long_range);
  CHECK(L.v.size() == static_cast<size_t>(std::ceil(100000 / 0.7)));
  bool exact = true;
  for (size_t i = 0; i < L.v.size(); ++i) exact = exact && L.v[i] == static_cast<double>(i) * 0.7;
  CHECK(exact);
  CHECK_THROWS_AS(arange(0, 5, 0), ValueError);
  CHECK_THROWS_AS(arange(5, 0, 1), ValueError);
  CHECK_THROWS_AS(arange(0, 5, -1), ValueError);
  CHECK_THROWS_AS(arange(0, INFINITY, 1.0), ValueError);
}

namespace {

struct Stats {
  double mean, var, min, max;
};
Stats stats(const Tensor& t) {
  const Array a = ref::read(t);
  Stats s{0, 0, INFINITY, -INFINITY};
  for (double v : a.v) {
    s.mean += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean /= static_cast<double>(a.v.size());
  for (double v : a.v) s.var += (v - s.mean) * (v - s.mean);
  s.var /= static_cast<double>(a.v.size() - 1);
  return s;
}

}  // namespace

TEST_CASE("rand is uniform on [0, 1) and randn standard normal", "[creation][random]") {
  manual_seed(2024);
  const int64_t n = 200000;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dt);
    Tensor u = rand({n}, dt);
    CHECK(u.dtype() == dt);
    const Stats su = stats(u);
    CHECK(su.min >= 0);
    CHECK(su.max < 1);
    // Standard error of the mean is 0.289 / sqrt(n) = 6.5e-4.
    CHECK(std::fabs(su.mean - 0.5) < 0.004);
    CHECK(std::fabs(su.var - 1.0 / 12) < 0.002);
    // Each tenth of [0, 1) holds about a tenth of the values.
    const Array ua = ref::read(u);
    std::vector<int64_t> bins(10, 0);
    for (double v : ua.v) ++bins[std::min<int64_t>(9, static_cast<int64_t>(v * 10))];
    for (int64_t b : bins) CHECK(std::fabs(static_cast<double>(b) / n - 0.1) < 0.01);

    Tensor z = randn({n}, dt);
    const Stats sz = stats(z);
    CHECK(std::fabs(sz.mean) < 0.015);
    CHECK(std::fabs(std::sqrt(sz.var) - 1) < 0.015);
    const Array za = ref::read(z);
    int64_t within1 = 0, within2 = 0;
    for (double v : za.v) {
      within1 += std::fabs(v) < 1;
      within2 += std::fabs(v) < 2;
    }
    CHECK(std::fabs(static_cast<double>(within1) / n - 0.6827) < 0.01);
    CHECK(std::fabs(static_cast<double>(within2) / n - 0.9545) < 0.01);
    // Neighbours are uncorrelated.
    double corr = 0;
    for (int64_t i = 0; i + 1 < n; ++i) corr += za.v[i] * za.v[i + 1];
    CHECK(std::fabs(corr / n) < 0.015);
  }
  CHECK(rand({2, 3}).shape() == Shape{2, 3});
  CHECK(rand({2}).dtype() == kFloat32);
  CHECK(rand({0}).numel() == 0);
  CHECK(rand({}).dim() == 0);
  CHECK_THROWS_AS(rand({2}, kInt32), DTypeError);
  CHECK_THROWS_AS(randn({2}, kBool), DTypeError);
}

TEST_CASE("the same seed gives the same numbers, whatever the thread count", "[creation][random]") {
  const int saved = get_num_threads();
  const int64_t n = 100003;  // above the parallel threshold, not a multiple of 4
  std::vector<std::vector<double>> runs;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    manual_seed(7);
    Tensor a = rand({n});
    Tensor b = randn({n}, kFloat64);
    Tensor c = rand({5}, kFloat16);
    std::vector<double> all = ref::read(a).v;
    for (double v : ref::read(b).v) all.push_back(v);
    for (double v : ref::read(c).v) all.push_back(v);
    runs.push_back(all);
  }
  set_num_threads(saved);
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
  // Consecutive draws differ, and a different seed gives different numbers.
  manual_seed(7);
  Tensor first = rand({1000});
  Tensor second = rand({1000});
  CHECK(ref::read(first).v != ref::read(second).v);
  const Array big1 = ref::read(rand({n})), big2 = ref::read(rand({n}));
  CHECK(big1.v != big2.v);
  CHECK(std::vector<double>(runs[0].begin(), runs[0].begin() + 1000) == ref::read(first).v);
  manual_seed(8);
  CHECK(ref::read(rand({1000})).v != ref::read(first).v);
  // A private generator is independent of the default one and reproducible.
  Generator g1(99), g2(99);
  Tensor x1 = randn({50}, kFloat32, &g1);
  rand({10});  // advances the default generator only
  Tensor x2 = randn({50}, kFloat32, &g2);
  CHECK(ref::read(x1).v == ref::read(x2).v);
  CHECK(ref::read(randn({50}, kFloat32, &g1)).v != ref::read(x1).v);
  g2.manual_seed(99);
  CHECK(ref::read(randn({50}, kFloat32, &g2)).v == ref::read(x1).v);
}

TEST_CASE("a generator's state as bytes: restored, it draws what it would have drawn", "[creation][random]") {
  Generator g(12345);
  (void)rand({7}, kFloat32, &g);  // an offset that is not a multiple of 4 numbers drawn
  const std::vector<uint8_t> state = g.get_state();
  REQUIRE(state.size() == 20);
  const std::vector<double> want = ref::read(randn({33}, kFloat64, &g)).v;
  Generator other(1);
  other.set_state(state);
  CHECK(ref::read(randn({33}, kFloat64, &other)).v == want);
  CHECK(other.seed() == 12345);
  g.set_state(state);  // back in time
  CHECK(ref::read(randn({33}, kFloat64, &g)).v == want);
  // The default generator too, the one manual_seed seeds.
  manual_seed(5);
  (void)rand({3});
  const std::vector<uint8_t> saved = default_generator().get_state();
  const std::vector<double> next = ref::read(rand({10})).v;
  default_generator().set_state(saved);
  CHECK(ref::read(rand({10})).v == next);

  std::vector<uint8_t> bad = state;
  bad[0] = 'X';
  CHECK_THROWS_MATCHES(g.set_state(bad), ValueError,
                       Catch::Matchers::Message(
                           "Generator.set_state: expected the 20 bytes of Generator.get_state, got 20 bytes with another tag"));
  CHECK_THROWS_MATCHES(g.set_state({1, 2, 3}), ValueError,
                       Catch::Matchers::Message(
                           "Generator.set_state: expected the 20 bytes of Generator.get_state, got 3 bytes"));
  CHECK(ref::read(randn({33}, kFloat64, &g)).v != want);  // a refused state changes nothing: g is past `want`
}

TEST_CASE("tensor() from vectors and initializer lists", "[creation]") {
  Tensor a = tensor(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.dtype() == kInt32);
  CHECK(a.shape() == Shape{2, 3});
  CHECK(ref::read(a).v == std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor d = tensor(std::vector<double>{0.1, -2});
  CHECK(d.dtype() == kFloat64);
  CHECK(d.shape() == Shape{2});
  CHECK(ref::read(d).v == std::vector<double>{0.1, -2});
  Tensor b = tensor(std::vector<bool>{true, false, true});
  CHECK(b.dtype() == kBool);
  CHECK(ref::read(b).v == std::vector<double>{1, 0, 1});
  Tensor u = tensor(std::vector<uint8_t>{255, 0});
  CHECK(u.dtype() == kUInt8);
  CHECK(ref::read(u).v == std::vector<double>{255, 0});
  Tensor c = tensor(std::vector<int64_t>{1, 2}, {}, kFloat16);
  CHECK(c.dtype() == kFloat16);
  CHECK(ref::read(c).v == std::vector<double>{1, 2});
  Tensor s = tensor(std::vector<float>{4.5f}, Shape{});  // an empty shape means 1-D
  CHECK(s.shape() == Shape{1});
  Tensor f = tensor({1.5f, 2.f, 3.f});
  CHECK(f.dtype() == kFloat32);
  CHECK(ref::read(f).v == std::vector<double>{1.5, 2, 3});
  Tensor m = tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  CHECK(m.shape() == Shape{3, 2});
  CHECK(ref::read(m).v == std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor mi = tensor({{1.f, 2.f}}, kInt64);
  CHECK(mi.dtype() == kInt64);
  CHECK(ref::read(mi).v == std::vector<double>{1, 2});
  CHECK(tensor(std::vector<float>{}).shape() == Shape{0});
  CHECK_THROWS_AS(tensor({{1.f, 2.f}, {3.f}}), ShapeError);
  CHECK_THROWS_AS(tensor(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  // The values are copied: changing the source afterwards changes nothing.
  std::vector<float> src = {1, 2};
  Tensor copy = tensor(src);
  src[0] = 9;
  CHECK(ref::read(copy).v == std::vector<double>{1, 2});
}

TEST_CASE("scalar_tensor makes a 0-dim wrapped number of the value's kind", "[creation]") {
  Tensor i = scalar_tensor(3);
  CHECK(i.dim() == 0);
  CHECK(i.dtype() == kInt64);
  CHECK(i.is_wrapped_number());
  CHECK(i.item<int64_t>() == 3);
  Tensor f = scalar_tensor(2.5);
  CHECK(f.dtype() == kFloat64);
  CHECK(f.item<double>() == 2.5);
  Tensor b = scalar_tensor(false);
  CHECK(b.dtype() == kBool);
  CHECK(b.item<bool>() == false);
  CHECK(scalar_tensor(1, kMeta).device() == kMeta);
  // Views of a wrapped number are ordinary tensors.
  CHECK_FALSE(i.view({1}).is_wrapped_number());
}
