// The CPU softmax kernel (kernels/cpu/softmax.h) against float64 loops written here,
// at every instruction-set level this CPU runs, for each of its loops: long rows,
// short rows (a block of rows at a time, rows shorter than a vector included),
// column stripes over a non-last dim (widths not a multiple of the vector, dims long
// enough to narrow the stripe), half inputs widened in place, and rows holding a
// NaN, an all -inf row and huge logits; float32 short rows written in place;
// outputs large enough for streaming stores (over the last dim, and down a strided
// one into aligned storage), and probabilities small enough to be subnormal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/base/parallel.h"
#include "kernels/base/scalar.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/softmax.h"
#include "kernels/isa_guard.h"

using namespace ember;

namespace {

using testing::IsaGuard;

struct Shape3 {
  int64_t outer, dim, inner;
};

const Shape3 kShapes[] = {
    {1, 1, 1},    {7, 1, 1},   {300, 10, 1}, {1000, 3, 1},  {5, 31, 1},  {5, 32, 1},   {3, 100, 1},
    {2, 4097, 1}, {600, 7, 1}, {2, 5, 17},   {3, 40, 300},  {2, 1100, 20}, {1, 7, 1000}, {4, 2, 2},
    {2, 600, 33}, {9, 16, 1},   {33, 20, 1},   {64, 16, 1},  {48, 1, 1},  {20, 5, 1},   {40, 12, 1},
    {2, 40, 1000}};

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

// Runs cpu::softmax on v (values the type T holds exactly) and compares with float64.
// in_place: y is x (the kernels allow it; the short-row blocks are pipelined, so a
// block's stores must not reach rows still to be read). aligned: y starts on a
// 64-byte boundary, as a tensor's storage does (the strided loop streams its stores
// only then).
template <class T>
void compare(const std::vector<double>& v, Shape3 s, bool log, double rtol, bool in_place, bool aligned) {
  const int64_t n = s.outer * s.dim * s.inner;
  std::vector<T> x(n), y(n), y_aligned(aligned ? n + 64 / sizeof(T) : 0);
  T* out = y.data();
  if (aligned) {
    out = y_aligned.data();
    while (reinterpret_cast<uintptr_t>(out) % 64) ++out;
  }
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(static_cast<float>(v[i]));
  if constexpr (std::is_same_v<T, double>)
    for (int64_t i = 0; i < n; ++i) x[i] = v[i];
  if (in_place) {
    cpu::softmax(dtype_of_v<T>, s.outer, s.dim, s.inner, x.data(), x.data(), log);
    y = x;
  } else {
    cpu::softmax(dtype_of_v<T>, s.outer, s.dim, s.inner, x.data(), out, log);
    if (aligned) std::copy(out, out + n, y.begin());
  }
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
  INFO((in_place ? "in place " : "") << (log ? "log_softmax" : "softmax") << " of (" << s.outer << ", " << s.dim << ", " << s.inner << "): " << bad
       << " wrong, first at " << first << (first >= 0 ? ": got " : "")
       << (first >= 0 ? static_cast<double>(static_cast<acc_t<T>>(y[first])) : 0.0) << " want "
       << (first >= 0 ? want[first] : 0.0));
  CHECK(bad == 0);
}

// compare() on random logits of shape s (normal, sigma 3) with a NaN, an all -inf
// row and huge logits.
template <class T>
void check(Shape3 s, bool log, std::mt19937_64& rng, double rtol, bool in_place = false, bool aligned = false) {
  const int64_t n = s.outer * s.dim * s.inner;
  std::normal_distribution<double> normal(0, 3);
  std::vector<double> v(n);
  for (double& e : v) e = static_cast<double>(static_cast<float>(static_cast<T>(static_cast<float>(normal(rng)))));
  // The first slice's first column holds a NaN, the last one is all -inf (and so is
  // the first slice's when the slices have more than one column: a stripe written
  // while the next is read), and (when there are three or more) the middle one has
  // logits whose exp overflows.
  if (s.dim > 1 || s.outer > 1) {
    v[0] = NAN;
    const int64_t last = s.outer - 1, col = s.inner - 1;
    for (int64_t d = 0; d < s.dim; ++d) v[(last * s.dim + d) * s.inner + col] = -INFINITY;
    if (s.inner > 1 && s.outer > 1)
      for (int64_t d = 0; d < s.dim; ++d) v[d * s.inner + col] = -INFINITY;
    if (s.outer >= 3)
      for (int64_t d = 0; d < s.dim; ++d) v[(1 * s.dim + d) * s.inner] += std::is_same_v<T, double> ? 1000 : 200;  // exp overflows
  }
  if (is_half_v<T>)  // the huge logits as the half type holds them
    for (double& e : v) e = static_cast<double>(static_cast<float>(static_cast<T>(static_cast<float>(e))));
  compare<T>(v, s, log, rtol, in_place, aligned);
}

// body(threads) at every instruction-set level this CPU runs, on 1 and 2 threads.
template <class F>
void each_level(F&& body) {
  IsaGuard guard;
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!cpu::set_isa(level)) continue;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      INFO("level " << level << ", " << threads << " threads");
      body(threads);
    }
  }
}

template <class T>
void all_shapes(double rtol) {
  std::mt19937_64 rng(91);
  each_level([&](int) {
    for (const Shape3& s : kShapes)
      for (bool log : {false, true}) check<T>(s, log, rng, rtol);
  });
}

}  // namespace

TEST_CASE("cpu::softmax matches float64 on long, short and strided rows at every level", "[kernels][softmax]") {
  SECTION("float32") { all_shapes<float>(2e-5); }
  SECTION("float64") { all_shapes<double>(1e-12); }
  SECTION("float16") { all_shapes<Half>(2e-3); }
  SECTION("bfloat16") { all_shapes<BFloat16>(1e-2); }
}

TEST_CASE("cpu::softmax of zero rows writes nothing", "[kernels][softmax]") {
  float x = 1, y = 7;
  for (int64_t dim : {int64_t{10}, int64_t{64}}) {
    cpu::softmax(DType::Float32, 0, dim, 1, &x, &y, false);
    cpu::softmax(DType::Float16, 0, dim, 1, &x, &y, true);
  }
  CHECK(y == 7);
}

TEST_CASE("cpu::softmax streams a large output and keeps subnormal probabilities", "[kernels][softmax]") {
  std::mt19937_64 rng(17);
  each_level([&](int threads) {
    // 1024 rows of 4097: 16 MiB and more of output (streaming stores), rows that
    // start off a vector boundary. (Once per level: about 0.5 s each.)
    if (threads == 2)
      for (bool log : {false, true}) check<float>({1024, 4097, 1}, log, rng, 2e-5);
    // Logits 0, -h, -2h, ... down to about -104: probabilities from 1 down through
    // the subnormals to 0. Rows of 10 (a vector each; 32 of them, two blocks of 16
    // rows), 20 (a block of rows), 300 (long rows), and the same down a strided dim.
    // The blocks of 16 rows of 10 run unshifted when every logit is within 64 of 0:
    // logits from 52 down to -52 take that route. Each must be within 2 units of the
    // last subnormal place (2^-148) or a relative 4e-6 of float64.
    struct Case {
      Shape3 s;
      float top;  // the first logit of each row
    };
    for (const Case c : {Case{{3, 10, 1}, 0}, Case{{32, 10, 1}, 0}, Case{{32, 10, 1}, 52}, Case{{3, 20, 1}, 0},
                         Case{{3, 300, 1}, 0}, Case{{2, 300, 5}, 0}}) {
      const Shape3 s = c.s;
      const int64_t n = s.outer * s.dim * s.inner;
      std::vector<float> x(n), y(n);
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t d = 0; d < s.dim; ++d)
          for (int64_t i = 0; i < s.inner; ++i)
            x[(o * s.dim + d) * s.inner + i] = c.top - 104.0f * static_cast<float>(d) / static_cast<float>(s.dim - 1) +
                                               0.25f * static_cast<float>(o % 3 + i);
      cpu::softmax(DType::Float32, s.outer, s.dim, s.inner, x.data(), y.data(), false);
      std::vector<double> xd(x.begin(), x.end());
      const std::vector<double> want = reference(xd, s, false);
      int64_t bad = 0, subnormal = 0;
      for (int64_t i = 0; i < n; ++i) {
        subnormal += want[i] > 0 && want[i] < 1.1754943508222875e-38;
        bad += !(std::fabs(y[i] - want[i]) <= 4e-6 * want[i] + std::ldexp(1.0, -148));
      }
      INFO("shape (" << s.outer << ", " << s.dim << ", " << s.inner << "): " << bad << " wrong");
      CHECK(subnormal > 0);
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("cpu::softmax streams a large strided output into aligned storage", "[kernels][softmax]") {
  // 16 MiB and more down a strided dim into 64-byte aligned storage, as a tensor's
  // is: the AVX-512 loop's output pass streams its stores only then. Stripes of 240
  // columns, 15 vectors: three whole groups of four and one of three (softmax takes
  // the path for whole vectors); of 250, whose last vector is masked. Each thread's
  // call takes its 20 stripes' share (10 on 2 threads), so all but its last are
  // written inside the next one's first pass. At the best level only (the others have no streaming strided loop;
  // about 0.6 s each).
  std::mt19937_64 rng(23);
  for (bool log : {false, true}) check<float>({20, 900, 240}, log, rng, 2e-5, false, true);
  check<float>({20, 900, 250}, false, rng, 2e-5, false, true);
}

TEST_CASE("cpu::log_softmax keeps its precision for logits near 1e6", "[kernels][softmax]") {
  // Every loop forms (x - max) - log sum, not x - (max + log sum): near 1e6 the
  // latter loses max's low bits (float32 spacing 0.0625 there; the loops lost up to
  // 0.03 that way, where PyTorch loses nothing). Long rows, blocks of 16 short rows
  // and the rows left over, short rows of 31, and strided dims.
  std::mt19937_64 rng(8);
  std::normal_distribution<double> normal(0, 3);
  each_level([&](int) {
    for (const Shape3 s : {Shape3{4, 1000, 1}, Shape3{35, 10, 1}, Shape3{5, 31, 1}, Shape3{2, 5, 17},
                           Shape3{3, 40, 300}, Shape3{2, 1100, 20}}) {
      std::vector<double> v(s.outer * s.dim * s.inner);
      for (double& e : v) e = static_cast<double>(static_cast<float>(1e6 + normal(rng)));
      for (bool log : {false, true}) compare<float>(v, s, log, 2e-5, false, false);
    }
  });
}

TEST_CASE("cpu::log_softmax of short rows keeps float32 precision near the max", "[kernels][softmax]") {
  // Rows of 10 (blocks of 16 rows whose logits all lie in [-64, 64]: the zero route,
  // (x - hi) - lo on AVX-512) and of 100 ((x - max) - log sum), with two close logits
  // from 40 to 64 (t and t - 0.1) and the others 0: each output within a few ulp.
  // x - log sum, as the unshifted blocks once formed log_softmax, rounded log sum
  // (about t) to half a spacing of 64, 2e-6, tens of ulp of the outputs near -0.7.
  std::vector<double> v(64 * 100);
  each_level([&](int) {
    for (int64_t n : {int64_t{10}, int64_t{100}}) {
      std::fill(v.begin(), v.end(), 0.0);
      for (int64_t r = 0; r < 64; ++r) {
        const float t = 40.0f + 0.375f * static_cast<float>(r);
        v[r * n + r % n] = t;
        v[r * n + (r + 1) % n] = static_cast<double>(t - 0.1f);
      }
      std::vector<float> x(v.begin(), v.begin() + 64 * n), y(x.size());
      cpu::softmax(DType::Float32, 64, n, 1, x.data(), y.data(), true);
      const std::vector<double> want = reference(std::vector<double>(v.begin(), v.begin() + 64 * n), {64, n, 1}, true);
      int64_t bad = 0, above = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        bad += !(std::fabs(y[i] - want[i]) <= 5e-7 * std::fabs(want[i]));
        above += y[i] > 0;
      }
      INFO("rows of " << n << ": " << bad << " outputs off by more than 5e-7 relative, " << above << " above 0");
      CHECK(bad == 0);
      CHECK(above == 0);
    }
  });
}

TEST_CASE("cpu::log_softmax of short rows within [-64, 64] keeps its log sum's precision", "[kernels][softmax]") {
  // Blocks of 16 rows whose logits all lie in [-64, 64] skip the max on AVX-512 and
  // form (x - hi) - lo from the log sum's two parts; one float log sum (up to 67)
  // would put outputs near the max 2e-6 off. Rows of random logits, and rows where
  // one logit dominates (its log-probability about -e^-40 or less: a hair below 0,
  // which no output may exceed).
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-64, 64);
  each_level([&](int) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{10}, int64_t{16}}) {
      const int64_t rows = 256;
      std::vector<double> v(static_cast<size_t>(rows * n));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j)
          v[size_t(r * n + j)] = static_cast<double>(static_cast<float>(
              r % 2 ? u(rng) : (j == r % n ? 20.0 + 44.0 * (u(rng) + 64) / 128 : u(rng) / 3 - 42)));
      std::vector<float> x(v.begin(), v.end()), y(x.size());
      cpu::softmax(DType::Float32, rows, n, 1, x.data(), y.data(), true);
      const std::vector<double> want = reference(v, {rows, n, 1}, true);
      int64_t bad = 0, above = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        bad += !(std::fabs(y[i] - want[i]) <= 3e-7 + 2.5e-7 * std::fabs(want[i]));  // 2 ulp + 3e-7
        above += y[i] > 0;
      }
      INFO("rows of " << n << ": " << bad << " outputs off by more than 3e-7 + 2.5e-7 relative, " << above
                      << " above 0");
      CHECK(bad == 0);
      CHECK(above == 0);
      if (n == 1) CHECK(std::all_of(y.begin(), y.end(), [](float o) { return o == 0.0f; }));  // log 1, exactly
    }
  });
}

TEST_CASE("cpu::softmax of half rows with large logits matches float64", "[kernels][softmax]") {
  // The AVX-512 half rows fold the shift into exp's FMA, 2^(x log2 e - m log2 e), while
  // |max| <= 2^20: every exponent is then off by the same rounding of m log2 e, which
  // log_softmax must take out of its log sum (up to 0.0027 near float16's 65504, and
  // up to 0.043 for the bfloat16 maxima from 2^19 to 2^20 past 2^20 / log2 e, where
  // these rows put theirs). Beyond 2^20
  // (bfloat16 rows up to 3e38) the shift is subtracted instead. A float16 row's
  // second value is 32 below its max (its log sum rounds to 0, so the max's
  // log_softmax is 0 but for that rounding); bfloat16 rows tie two maxima (0.5 each,
  // -ln 2).
  const Shape3 s{64, 64, 1};
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0, 3);
  std::vector<double> h(s.outer * s.dim), b(s.outer * s.dim);
  const auto as = [](auto t, double v) { return static_cast<double>(static_cast<float>(decltype(t)(static_cast<float>(v)))); };
  for (int64_t r = 0; r < s.outer; ++r) {
    for (int64_t d = 0; d < s.dim; ++d) {
      h[r * s.dim + d] = as(Half{}, normal(rng));
      b[r * s.dim + d] = as(BFloat16{}, normal(rng));
    }
    h[r * s.dim] = 65504.0 - 32.0 * static_cast<double>(r);
    h[r * s.dim + 1] = h[r * s.dim] - 32;
    const double scale = 1.0 + static_cast<double>(r) / 128;
    const double top[] = {std::ldexp(scale, 19), std::ldexp(scale, 21), 1e30 * scale, 3e38};
    b[r * s.dim] = as(BFloat16{}, top[r % 4]);
    b[r * s.dim + 1] = b[r * s.dim];
  }
  each_level([&](int) {
    for (bool log : {false, true}) {
      compare<Half>(h, s, log, 2e-3, false, false);
      compare<BFloat16>(b, s, log, 1e-2, false, false);
    }
  });
}

TEST_CASE("cpu::softmax of float32 short rows in place matches float64", "[kernels][softmax]") {
  std::mt19937_64 rng(17);
  each_level([&](int) {
    for (const Shape3 s : {Shape3{300, 10, 1}, Shape3{1000, 3, 1}, Shape3{20, 5, 1}, Shape3{64, 16, 1}, Shape3{517, 7, 1}})
      for (bool log : {false, true}) check<float>(s, log, rng, 2e-5, true);
  });
}

TEST_CASE("cpu::softmax of float32 down a strided dim in place matches float64", "[kernels][softmax]") {
  // The AVX-512 loop writes a stripe's outputs while it reads the next stripe (the
  // next outer index, or the next 256 columns of the same one): in place, the two
  // never share a value.
  std::mt19937_64 rng(19);
  each_level([&](int) {
    for (const Shape3 s : {Shape3{3, 40, 300}, Shape3{2, 40, 1000}, Shape3{4, 70, 64}})
      for (bool log : {false, true}) check<float>(s, log, rng, 2e-5, true);
  });
}
