// The loops one reduction run goes through (kernels/cpu/reduce_runs.h) against
// float64 loops written here: the first max/min and its position (ties, NaN, -inf,
// runs across block boundaries, strided and half inputs) and var's one-pass
// moments (block edges, data far from zero, an outlier, NaN and inf), each at every
// instruction-set level this CPU runs; float sums of rows of every length; and the
// column sum's batched row adds against a plain loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/isa_guard.h"
#include "kernels/cpu/column_rows.h"
#include "kernels/cpu/reduce_columns.h"
#include "kernels/cpu/reduce_runs.h"

using namespace ember;
using namespace ember::cpu::reduce_detail;

namespace {

// Sizes around the 16-lane loops and the 1024 (max) and 2048 (var) blocks.
const int64_t kSizes[] = {1, 2, 15, 16, 17, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049, 5000};

// v stored as T, then read back as double (what the kernel sees).
template <class T>
double as_stored(double v) {
  return static_cast<double>(static_cast<acc_t<T>>(static_cast<T>(static_cast<float>(v))));
}

// Index of the first maximum (want_max) or minimum; the first NaN wins.
int64_t first_extreme(const std::vector<double>& v, bool want_max) {
  int64_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
    if (want_max ? v[i] > v[best] : v[i] < v[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

// n values of T at stride `stride` (the gaps hold a value larger than any in the run).
template <class T>
std::vector<T> strided(const std::vector<double>& v, int64_t stride) {
  std::vector<T> out(v.size() * stride, static_cast<T>(100.0f));
  for (size_t i = 0; i < v.size(); ++i) out[i * stride] = static_cast<T>(static_cast<float>(v[i]));
  return out;
}

template <class T>
void check_extreme(const std::vector<double>& raw, int64_t stride) {
  std::vector<double> v;
  for (double x : raw) v.push_back(as_stored<T>(x));
  const std::vector<T> mem = strided<T>(raw, stride);
  const int64_t n = static_cast<int64_t>(v.size());
  for (bool want_max : {true, false}) {
    INFO((want_max ? "max" : "min") << " of " << n << " at stride " << stride);
    Extreme<acc_t<T>> e{acc_t<T>{}, -1};
    if (want_max) run_extreme<true>(mem.data(), stride, n, 7, e);
    else run_extreme<false>(mem.data(), stride, n, 7, e);
    const int64_t want = first_extreme(v, want_max);
    CHECK(e.pos == want + 7);
    if (std::isnan(v[want])) CHECK(std::isnan(static_cast<double>(e.value)));
    else CHECK(static_cast<double>(e.value) == v[want]);
    CHECK(std::signbit(static_cast<double>(e.value)) == std::signbit(v[want]));  // -0 against +0
    // The same run in two pieces, folded into one state, gives the same answer.
    const int64_t h = n / 2;
    Extreme<acc_t<T>> f{acc_t<T>{}, -1};
    if (h > 0) {
      if (want_max) run_extreme<true>(mem.data(), stride, h, 0, f);
      else run_extreme<false>(mem.data(), stride, h, 0, f);
    }
    if (want_max) run_extreme<true>(mem.data() + h * stride, stride, n - h, h, f);
    else run_extreme<false>(mem.data() + h * stride, stride, n - h, h, f);
    CHECK(f.pos == want);
  }
}

template <class T>
void extreme_cases(std::mt19937_64& rng) {
  std::vector<int64_t> sizes(std::begin(kSizes), std::end(kSizes));
  sizes.push_back(140001);  // three of the AVX-512 scan's 64K-value blocks
  for (int64_t n : sizes)
    for (int64_t stride : {1, 3}) {
      // Small integers: ties everywhere, so the first position matters.
      std::uniform_int_distribution<int> small(-20, 20);
      std::vector<double> v(n);
      for (double& x : v) x = small(rng) / 2.0;
      check_extreme<T>(v, stride);
      // Increasing data: every block beats the one before it (ties, once the type's
      // spacing passes 1/8, keep the first), and the max sits in the last lane.
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i) / 8;
      check_extreme<T>(v, stride);
      if constexpr (!std::is_integral_v<T>) {
        // Zeros of both signs: the first zero wins, with its own sign, in the last
        // block (after a run of -1) and everywhere.
        for (double first : {-0.0, 0.0}) {
          std::vector<double> z(n, -1.0);
          if (n >= 2) {
            z[n - 2] = first;
            z[n - 1] = -first;
            check_extreme<T>(z, stride);
          }
          for (int64_t i = 0; i < n; ++i) z[i] = i % 3 == 0 ? first : -first;
          check_extreme<T>(z, stride);
        }
      }
      if constexpr (!std::is_integral_v<T>) {
        // One NaN, then two (the first wins), in the first, a middle and the last block.
        for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
          std::vector<double> w(n);
          for (double& x : w) x = small(rng) / 2.0;
          w[at] = NAN;
          check_extreme<T>(w, stride);
          if (at + 1 < n) {
            w[n - 1] = NAN;
            check_extreme<T>(w, stride);
          }
        }
        // Infinities only: the first one is the extreme.
        std::vector<double> inf(n, -INFINITY);
        check_extreme<T>(inf, stride);
        for (int64_t i = 0; i < n; i += 3) inf[i] = INFINITY;
        check_extreme<T>(inf, stride);
      }
    }
}

// float64 moments of the stored values.
void reference_moments(const std::vector<double>& v, double& mean, double& m2) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
}

template <class T>
void check_moments(const std::vector<double>& raw, int64_t stride, double rel) {
  std::vector<double> v;
  for (double x : raw) v.push_back(as_stored<T>(x));
  const std::vector<T> mem = strided<T>(raw, stride);
  const int64_t n = static_cast<int64_t>(v.size());
  double mean, m2;
  reference_moments(v, mean, m2);
  double sq = 0;  // the scale of the deviations, for an absolute floor on the error
  for (double x : v) sq += (x - mean) * (x - mean) + 1e-30;
  const Moments got = run_moments(mem.data(), stride, n);
  INFO(n << " values at stride " << stride << ": mean " << got.mean << " vs " << mean << ", M2 " << got.m2
         << " vs " << m2);
  CHECK(got.n == n);
  if (std::isnan(m2)) {
    CHECK(std::isnan(got.m2));
    return;
  }
  CHECK(std::fabs(got.mean - mean) <= rel * (std::fabs(mean) + std::sqrt(sq / n)));
  CHECK(std::fabs(got.m2 - m2) <= rel * sq);
  CHECK(got.m2 >= 0);
  // Two pieces merged give the whole.
  const int64_t h = n / 2;
  Moments a = run_moments(mem.data(), stride, h);
  a.merge(run_moments(mem.data() + h * stride, stride, n - h));
  CHECK(a.n == n);
  CHECK(std::fabs(a.m2 - m2) <= rel * sq);
}

template <class T>
void moment_cases(std::mt19937_64& rng, double rel) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t n : kSizes)
    for (int64_t stride : {1, 2}) {
      std::vector<double> v(n);
      for (double& x : v) x = u(rng);
      check_moments<T>(v, stride, rel);
      // Far from zero: a sum of squares minus a squared sum would lose every digit.
      for (double& x : v) x = 1000 + u(rng);
      check_moments<T>(v, stride, rel);
      // One outlier in a block of small values.
      for (double& x : v) x = u(rng) / 100;
      v[n / 3] = 50;
      check_moments<T>(v, stride, rel);
      // All equal: exactly zero.
      std::vector<double> same(n, 3.25);
      const std::vector<T> mem = strided<T>(same, stride);
      CHECK(run_moments(mem.data(), stride, n).m2 == 0);
      // A NaN or an infinity makes var NaN (inf - inf), as in PyTorch.
      for (double bad : {double(NAN), double(INFINITY)}) {
        v[n - 1] = bad;
        const std::vector<T> b = strided<T>(v, stride);
        CHECK(std::isnan(run_moments(b.data(), stride, n).m2));
      }
    }
}

}  // namespace

TEST_CASE("run_extreme: the first max/min and its position, NaN first", "[kernels][reduce]") {
  std::mt19937_64 rng(77);
  SECTION("float32, at every level (AVX-512 has its own scans, extreme.h)") {
    ember::testing::IsaGuard guard;
    for (const char* level : {"generic", "avx2", "avx512"}) {
      if (!ember::cpu::set_isa(level)) continue;
      INFO("level " << level);
      extreme_cases<float>(rng);
    }
  }
  SECTION("float64") { extreme_cases<double>(rng); }
  SECTION("float16") { extreme_cases<Half>(rng); }
  SECTION("bfloat16") { extreme_cases<BFloat16>(rng); }
  SECTION("int32") { extreme_cases<int32_t>(rng); }
}

TEST_CASE("run_moments: var's count, mean and M2 in one pass match float64", "[kernels][reduce]") {
  std::mt19937_64 rng(78);
  SECTION("float32 and the half types (widened to float32 blocks), at every level (AVX-512 has its own loops, moments.h)") {
    ember::testing::IsaGuard guard;
    for (const char* level : {"generic", "avx2", "avx512"}) {
      if (!ember::cpu::set_isa(level)) continue;
      INFO("level " << level);
      moment_cases<float>(rng, 1e-5);
      moment_cases<Half>(rng, 1e-5);
      moment_cases<BFloat16>(rng, 1e-5);
    }
  }
  SECTION("float64") { moment_cases<double>(rng, 1e-13); }
}

TEST_CASE("sum_contiguous: float rows of every length match a float64 sum", "[kernels][reduce]") {
  // Rows under 2048 values are summed in double lanes (all but exact: the
  // baseline's, or AVX-512's sum_f32_wide), at every level; longer ones in
  // 2048-value float blocks, each added in double.
  ember::testing::IsaGuard guard;
  std::mt19937 g(17);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    for (int64_t n : kSizes)
      for (int64_t tail : {0, 3, 196}) {
        const int64_t len = n + tail;
        std::vector<float> p(static_cast<size_t>(len));
        double want = 0, magnitude = 0;
        for (float& v : p) {
          v = u(g);
          want += v;
          magnitude += std::fabs(v);
        }
        INFO(level << ": n " << len);
        const double got = sum_contiguous(p.data(), len);
        CHECK(std::fabs(got - want) <= (len < 2048 ? 1e-13 : 1e-6) * magnitude);
      }
  }
}

TEST_CASE("add_rows_f32: a batch of rows added into part, the same bits as adding row by row", "[kernels][reduce]") {
  // column_rows.h's kernel keeps part in registers across the batch; each lane must
  // still add its rows in order, so a plain float loop gives the exact bits. Lengths
  // around the 64-value step and the masked tail, every batch size, inf and NaN.
  ember::testing::IsaGuard guard;
  std::mt19937 g(19);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const char* level : {"avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const auto* k = ember::cpu::column_row_kernels();
    REQUIRE(k != nullptr);
    for (int64_t n : kSizes)
      for (int nrows = 1; nrows <= ember::cpu::column_rows_detail::kMaxRows; ++nrows)
        for (bool special : {false, true}) {
          // Rows a little longer than n: the kernel must not touch past n.
          std::vector<std::vector<float>> rows(static_cast<size_t>(nrows), std::vector<float>(static_cast<size_t>(n + 16)));
          const float* ptrs[ember::cpu::column_rows_detail::kMaxRows];
          for (int r = 0; r < nrows; ++r) {
            for (float& v : rows[r]) v = u(g) * 1e3f;
            ptrs[r] = rows[r].data();
          }
          if (special) {
            rows[0][static_cast<size_t>(n / 2)] = std::numeric_limits<float>::infinity();
            rows[static_cast<size_t>(nrows - 1)][static_cast<size_t>(n - 1)] = std::numeric_limits<float>::quiet_NaN();
            if (nrows > 1) rows[1][0] = -std::numeric_limits<float>::infinity();
          }
          std::vector<float> part(static_cast<size_t>(n + 16)), want;
          for (float& v : part) v = u(g);
          want = part;
          for (int64_t j = 0; j < n; ++j)
            for (int r = 0; r < nrows; ++r) want[j] = want[j] + rows[r][j];
          k->add_rows_f32(ptrs, nrows, part.data(), n);
          INFO(level << ": n " << n << ", " << nrows << " rows" << (special ? ", inf and NaN" : ""));
          int64_t bad = 0;
          for (int64_t j = 0; j < n + 16; ++j) {
            const bool same = std::isnan(want[j]) ? std::isnan(part[j]) : part[j] == want[j];
            bad += same ? 0 : 1;
          }
          CHECK(bad == 0);
        }
  }
}

TEST_CASE("extreme_rows_f32 and moments_rows_f32: a batch of rows, the same results as plain loops", "[kernels][reduce]") {
  // The column schedule's other two row loops against plain loops written here: the
  // extreme and its position (ties keep the earlier row, the first NaN stays) bit for
  // bit, on rows without a NaN or an infinity (every 16 columns, the partial last
  // ones included, take the fast loop) and on rows with them (those columns take the
  // exact loop); and the batch's moments merged in double (no multiply-add
  // contracted) bit for bit, by the AVX-512 loop and by reduce_columns.h's baseline
  // loop (var's on CPUs without AVX-512, and float64's), with a NaN and an infinity
  // in two columns.
  ember::testing::IsaGuard guard;
  std::mt19937 g(23);
  std::uniform_int_distribution<int> small(-6, 6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  if (!ember::cpu::set_isa("avx512")) return;
  const auto* k = ember::cpu::column_row_kernels();
  REQUIRE(k != nullptr);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : kSizes)
    for (int nrows = 1; nrows <= ember::cpu::column_rows_detail::kMaxRows; ++nrows) {
      std::vector<std::vector<float>> rows(static_cast<size_t>(nrows), std::vector<float>(static_cast<size_t>(n + 16)));
      const float* ptrs[ember::cpu::column_rows_detail::kMaxRows];
      for (int r = 0; r < nrows; ++r) ptrs[r] = rows[r].data();
      for (bool specials : {false, true}) {
        for (int r = 0; r < nrows; ++r)
          for (float& v : rows[r]) v = static_cast<float>(small(g)) / 2;  // ties
        if (specials) {
          rows[static_cast<size_t>(nrows - 1)][static_cast<size_t>(n - 1)] = nan;
          if (nrows > 1) rows[0][static_cast<size_t>(n - 1)] = nan;
          // Infinities (which send their 16 columns to the exact loop, as a NaN does)
          // in the middle, away from the NaNs where n allows.
          rows[0][static_cast<size_t>(n / 2)] = nrows > 1 ? inf : -inf;
          rows[static_cast<size_t>(nrows - 1)][static_cast<size_t>(n / 3)] = -inf;
        }
        for (bool want_max : {true, false}) {
          std::vector<float> best(static_cast<size_t>(n + 16)), wb;
          std::vector<int64_t> pos(static_cast<size_t>(n + 16), -7), wp;
          for (float& v : best) v = static_cast<float>(small(g)) / 2;
          best[0] = nan;  // a NaN already held stays
          wb = best;
          wp = pos;
          for (int64_t j = 0; j < n; ++j)
            for (int r = 0; r < nrows; ++r) {
              const float v = rows[r][j];
              const bool take = !std::isnan(wb[j]) && (std::isnan(v) || (want_max ? v > wb[j] : v < wb[j]));
              if (take) {
                wb[j] = v;
                wp[j] = 100 + r;
              }
            }
          k->extreme_rows_f32(ptrs, nrows, 100, want_max, best.data(), pos.data(), n);
          INFO("extremes: n " << n << ", " << nrows << " rows, " << (want_max ? "max" : "min")
                              << (specials ? ", NaN and infinities" : ""));
          int64_t bad = 0;
          for (int64_t j = 0; j < n + 16; ++j) {
            const bool same = std::isnan(wb[j]) ? std::isnan(best[j]) : best[j] == wb[j];
            bad += same && pos[j] == wp[j] ? 0 : 1;
          }
          CHECK(bad == 0);
        }
      }
      // Moments of smooth data after 5 earlier rows (the shift is the running mean),
      // and of a column's first batch (count 0: the shift is the first row); column 1
      // holds a NaN and column 2 an infinity where n allows (their moments NaN).
      for (int r = 0; r < nrows; ++r)
        for (float& v : rows[r]) v = 100 + u(g);
      if (n > 1) rows[0][1] = nan;
      if (n > 2) rows[static_cast<size_t>(nrows - 1)][2] = inf;
      for (int64_t count0 : {int64_t(5), int64_t(0)}) {
        std::vector<double> mean(static_cast<size_t>(n + 16)), m2(static_cast<size_t>(n + 16));
        for (double& v : mean) v = 100 + u(g);
        for (double& v : m2) v = count0 == 0 ? 0 : u(g) + 1;
        std::vector<double> wm = mean, w2 = m2;
        const double rr = nrows, total = static_cast<double>(count0) + rr, w = rr / total;
        const double c = static_cast<double>(count0) * w, inv_r = 1.0 / rr;
        for (int64_t j = 0; j < n; ++j) {
          const double shift = count0 == 0 ? static_cast<double>(rows[0][j]) : wm[j];
          double sum = 0, sq = 0;
          for (int r = 0; r < nrows; ++r) {
            const double d = static_cast<double>(rows[r][j]) - shift;
            sum = sum + d;
            const double dd = d * d;  // a statement each: no multiply-add contracted
            sq = sq + dd;
          }
          const double e = sum * inv_r;
          const double step = e * w;
          wm[j] = shift + step;
          const double se = sum * e;
          const double dev = sq - se;
          const double own = dev < 0 ? 0 : dev;  // a NaN stays
          const double ee = e * e;
          const double cross = ee * c;
          w2[j] = w2[j] + (own + cross);
        }
        const auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
        for (bool baseline : {false, true}) {
          std::vector<double> gm = mean, g2 = m2;
          if (baseline) ember::cpu::reduce_detail::moments_rows_baseline(ptrs, nrows, count0, gm.data(), g2.data(), n);
          else k->moments_rows_f32(ptrs, nrows, count0, gm.data(), g2.data(), n);
          INFO("moments: n " << n << ", " << nrows << " rows after " << count0 << (baseline ? ", baseline" : ", avx512"));
          int64_t bad = 0;
          for (int64_t j = 0; j < n + 16; ++j) bad += same(gm[j], wm[j]) && same(g2[j], w2[j]) ? 0 : 1;
          CHECK(bad == 0);
          if (n > 2) CHECK((std::isnan(g2[1]) && std::isnan(g2[2])));
        }
      }
    }
}
