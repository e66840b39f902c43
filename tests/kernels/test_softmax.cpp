// The CPU softmax kernel (kernels/cpu/softmax.h) against float64 loops written here,
// at every instruction-set level this CPU runs, for each of its loops: long rows,
// short rows (a block of rows at a time, rows shorter than a vector included),
// column stripes over a non-last dim (widths not a multiple of the vector, dims long
// enough to narrow the stripe), half inputs widened in place, and rows holding a
// NaN, an all -inf row and huge logits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/base/parallel.h"
#include "kernels/base/scalar.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/softmax.h"

using namespace ember;

namespace {

struct IsaGuard {
  int threads = get_num_threads();
  ~IsaGuard() {
    cpu::set_isa("auto");
    set_num_threads(threads);
  }
};

struct Shape3 {
  int64_t outer, dim, inner;
};

const Shape3 kShapes[] = {
    {1, 1, 1},    {7, 1, 1},   {300, 10, 1}, {1000, 3, 1},  {5, 31, 1},  {5, 32, 1},   {3, 100, 1},
    {2, 4097, 1}, {600, 7, 1}, {2, 5, 17},   {3, 40, 300},  {2, 1100, 20}, {1, 7, 1000}, {4, 2, 2},
    {2, 600, 33}};

// softmax (or log_softmax) over dim of the (outer, dim, inner) array x, in float64.
std::vector<double> reference(const std::vector<double>& x, Shape3 s, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t d) { return (o * s.dim + d) * s.inner + i; };
      double m = -INFINITY, sum = 0;
      for (int64_t d = 0; d < s.dim; ++d) m = std::max(m, x[at(d)]);
      bool nan = false;
      for (int64_t d = 0; d < s.dim; ++d) nan = nan || std::isnan(x[at(d)]);
      for (int64_t d = 0; d < s.dim; ++d) sum += std::exp(x[at(d)] - m);
      for (int64_t d = 0; d < s.dim; ++d)
        y[at(d)] = nan || std::isinf(m) ? NAN : log ? x[at(d)] - m - std::log(sum) : std::exp(x[at(d)] - m) / sum;
    }
  return y;
}

template <class T>
void check(Shape3 s, bool log, std::mt19937_64& rng, double rtol) {
  const int64_t n = s.outer * s.dim * s.inner;
  std::normal_distribution<double> normal(0, 3);
  std::vector<double> v(n);
  for (double& e : v) e = static_cast<double>(static_cast<float>(static_cast<T>(static_cast<float>(normal(rng)))));
  // The first slice's first column holds a NaN, the last one is all -inf, and (when
  // there are three or more) the middle one has logits whose exp overflows.
  if (s.dim > 1 || s.outer > 1) {
    v[0] = NAN;
    const int64_t last = s.outer - 1, col = s.inner - 1;
    for (int64_t d = 0; d < s.dim; ++d) v[(last * s.dim + d) * s.inner + col] = -INFINITY;
    if (s.outer >= 3)
      for (int64_t d = 0; d < s.dim; ++d) v[(1 * s.dim + d) * s.inner] += std::is_same_v<T, double> ? 1000 : 200;  // exp overflows
  }
  if (is_half_v<T>)  // the huge logits as the half type holds them
    for (double& e : v) e = static_cast<double>(static_cast<float>(static_cast<T>(static_cast<float>(e))));
  std::vector<T> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(static_cast<float>(v[i]));
  if constexpr (std::is_same_v<T, double>)
    for (int64_t i = 0; i < n; ++i) x[i] = v[i];
  cpu::softmax(dtype_of_v<T>, s.outer, s.dim, s.inner, x.data(), y.data(), log);
  const std::vector<double> want = reference(v, s, log);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double got = static_cast<double>(static_cast<acc_t<T>>(y[i]));
    // Relative, plus for softmax the spacing of the dtype's smallest values (float16
    // stores probabilities under 6e-5 as subnormals, 2^-24 apart).
    const double atol = log ? rtol : std::is_same_v<T, Half> ? std::ldexp(1.0, -24) : rtol * 1e-6;
    const bool ok = std::isnan(want[i]) ? std::isnan(got) : std::fabs(got - want[i]) <= rtol * std::fabs(want[i]) + atol;
    if (!ok && bad++ == 0) first = i;
  }
  INFO((log ? "log_softmax" : "softmax") << " of (" << s.outer << ", " << s.dim << ", " << s.inner << "): " << bad
       << " wrong, first at " << first << (first >= 0 ? ": got " : "")
       << (first >= 0 ? static_cast<double>(static_cast<acc_t<T>>(y[first])) : 0.0) << " want "
       << (first >= 0 ? want[first] : 0.0));
  CHECK(bad == 0);
}

template <class T>
void all_shapes(double rtol) {
  IsaGuard guard;
  std::mt19937_64 rng(91);
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!cpu::set_isa(level)) continue;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      INFO("level " << level << ", " << threads << " threads");
      for (const Shape3& s : kShapes)
        for (bool log : {false, true}) check<T>(s, log, rng, rtol);
    }
  }
}

}  // namespace

TEST_CASE("cpu::softmax matches float64 on long, short and strided rows at every level", "[kernels][softmax]") {
  SECTION("float32") { all_shapes<float>(2e-5); }
  SECTION("float64") { all_shapes<double>(1e-12); }
  SECTION("float16") { all_shapes<Half>(2e-3); }
  SECTION("bfloat16") { all_shapes<BFloat16>(1e-2); }
}
