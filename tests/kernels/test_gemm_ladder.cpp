// Every rung of the CPU GEMM ladder (kernels/ladder/gemm_ladder.h, table kCpuRungs)
// against a float64 triple loop, on sizes that are not multiples of any tile or
// block (1x1x1, 7x13x5, 67x65x129) and on one that crosses the cache blocks of
// rungs 3 and 4 in every dimension. A rung added to the table is tested here with
// no further change.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/ladder/gemm_ladder.h"

namespace {

using ember::ladder::kCpuRungs;

struct Dims {
  int64_t m, n, k;
};

// Checks c against sum_p a[i][p] * b[p][j] computed in float64. Any float32
// summation order is within (k + 1) * 2^-24 * sum_p |a[i][p] * b[p][j]| of the exact
// sum (the standard bound for a dot product; FMAs only tighten it), so each element
// is held to that, with a factor of two of slack; an index error is far outside it.
void check_against_float64(const Dims& d, const std::vector<float>& a,
                           const std::vector<float>& b, const std::vector<float>& c) {
  const double unit = std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      double want = 0, magnitude = 0;
      for (int64_t p = 0; p < d.k; ++p) {
        const double t = double(a[size_t(i * d.k + p)]) * double(b[size_t(p * d.n + j)]);
        want += t;
        magnitude += std::fabs(t);
      }
      const double got = c[size_t(i * d.n + j)];
      const double bound = 2.0 * double(d.k + 1) * unit * magnitude;
      if (!(std::fabs(got - want) <= bound)) {
        if (bad++ < 3)
          UNSCOPED_INFO("c[" << i << "][" << j << "] = " << got << ", float64 gives " << want
                             << " (bound " << bound << ")");
      }
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("every GEMM ladder rung matches a float64 triple loop", "[kernels][gemm][ladder]") {
  const std::vector<Dims> sizes = {{1, 1, 1}, {7, 13, 5}, {67, 65, 129}, {5, 1, 300},
                                   // past rung 3's KC = 128, NC = 256 and rung 4's
                                   // MC = 64, KC = 256, NC = 512, each with a remainder
                                   {131, 533, 263}};
  std::mt19937 g(12);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Dims& d : sizes) {
    std::vector<float> a(size_t(d.m * d.k)), b(size_t(d.k * d.n));
    for (float& v : a) v = dist(g);
    for (float& v : b) v = dist(g);
    for (const auto& rung : kCpuRungs) {
      INFO("rung '" << rung.name << "', m=" << d.m << " n=" << d.n << " k=" << d.k);
      // C starts as NaN: a rung must overwrite C, never add to what was there.
      std::vector<float> c(size_t(d.m * d.n), std::numeric_limits<float>::quiet_NaN());
      rung.fn(d.m, d.n, d.k, a.data(), b.data(), c.data());
      check_against_float64(d, a, b, c);
    }
  }
}

TEST_CASE("the GEMM ladder ends with the production kernel", "[kernels][gemm][ladder]") {
  // The bench's last row and the docs' last rung are Ember's own GEMM; names are
  // the bench's case names, so they must be distinct.
  REQUIRE(std::size(kCpuRungs) >= 2);
  CHECK(kCpuRungs[std::size(kCpuRungs) - 1].fn == &ember::ladder::gemm_production);
  std::set<std::string> names;
  for (const auto& rung : kCpuRungs) {
    CHECK(names.insert(rung.name).second);
    CHECK(rung.largest_timed_n >= 1);
  }
}
