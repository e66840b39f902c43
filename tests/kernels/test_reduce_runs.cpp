// The loops one reduction run goes through (kernels/cpu/reduce_runs.h) against
// float64 loops written here: the first max/min and its position (ties, NaN, -inf,
// runs across block boundaries, strided and half inputs) and var's one-pass
// moments (block edges, data far from zero, an outlier, NaN and inf), each at every
// instruction-set level this CPU runs; float sums of rows of every length; and the
// column sum's batched row adds against a plain loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
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
// Rows in a span of the half types' var (up to kHalfSpanRows): one sub-batch of 8
// rows or less, whole and partial later ones.
constexpr int kSpan = ember::cpu::column_rows_detail::kHalfSpanRows;
const int kSpanRows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 40, 63, 64};

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

// The column schedule's var update for a batch of rows (column_rows.h), written
// here from its description: per column, the shift (the running mean, or the first
// row when count0 == 0), the sums of d and d * d, then the merge. One statement per
// operation, so that nothing is contracted into a multiply-add.
template <class T>
void batch_moments_reference(const std::vector<std::vector<T>>& rows, int nrows, int64_t count0,
                             std::vector<double>& mean, std::vector<double>& m2, int64_t n) {
  const double rr = nrows, total = static_cast<double>(count0) + rr, w = rr / total;
  const double c = static_cast<double>(count0) * w, inv_r = 1.0 / rr;
  for (int64_t j = 0; j < n; ++j) {
    const double shift = count0 == 0 ? static_cast<double>(rows[0][j]) : mean[j];
    double sum = 0, sq = 0;
    for (int r = 0; r < nrows; ++r) {
      const double d = static_cast<double>(rows[r][j]) - shift;
      sum = sum + d;
      const double dd = d * d;
      sq = sq + dd;
    }
    const double e = sum * inv_r;
    const double step = e * w;
    mean[j] = shift + step;
    const double se = sum * e;
    const double dev = sq - se;
    const double own = dev < 0 ? 0 : dev;  // a NaN stays
    const double ee = e * e;
    const double cross = ee * c;
    m2[j] = m2[j] + (own + cross);
  }
}

// The half types' var update for a span (reduce_columns.h's moments_rows_half),
// written here from its description: the shift K (the running mean rounded to
// float32, or on a first span the float32 sum of m = min(16, R) rows i * R / m,
// divided by m), d in float32, summed by sub-batches of 8 rows (from 0) whose sums
// are then added to the span's, the merge in double against the held mean M (K on a
// first span); a column whose q is not finite takes batch_moments_reference's double
// update instead.
void half_batch_moments_reference(const std::vector<std::vector<float>>& rows, int nrows, int64_t count0,
                                  std::vector<double>& mean, std::vector<double>& m2, int64_t n) {
  const double rr = nrows, total = static_cast<double>(count0) + rr, w = rr / total;
  const double c = static_cast<double>(count0) * w, inv_r = 1.0 / rr;
  std::vector<double> dm = mean, d2 = m2;
  batch_moments_reference(rows, nrows, count0, dm, d2, n);
  const int first = std::min(nrows, 16);
  for (int64_t j = 0; j < n; ++j) {
    float shift = static_cast<float>(mean[j]);
    if (count0 == 0) {
      float t = 0;
      for (int i = 0; i < first; ++i) t = i == 0 ? rows[0][j] : t + rows[i * nrows / first][j];
      shift = t / static_cast<float>(first);
    }
    const double held = count0 == 0 ? static_cast<double>(shift) : mean[j];
    float sum = 0, sq = 0;
    for (int r0 = 0; r0 < nrows; r0 += 8) {
      float sum8 = 0, sq8 = 0;
      for (int r = r0; r < nrows && r < r0 + 8; ++r) {
        const float d = rows[r][j] - shift;
        sum8 = sum8 + d;
        const float dd = d * d;
        sq8 = sq8 + dd;
      }
      sum = sum + sum8;
      sq = sq + sq8;
    }
    if (!std::isfinite(sq)) {
      mean[j] = dm[j];
      m2[j] = d2[j];
      continue;
    }
    const double e = static_cast<double>(sum) * inv_r;
    const double delta = (static_cast<double>(shift) - held) + e;
    const double step = delta * w;
    mean[j] = held + step;
    const double se = static_cast<double>(sum) * e;
    const double dev = static_cast<double>(sq) - se;
    const double own = dev < 0 ? 0 : dev;
    const double dd = delta * delta;
    const double cross = dd * c;
    m2[j] = m2[j] + (own + cross);
  }
}

// The extremes' plain loop over a batch: row r (position pos0 + r) replaces best[j]
// and pos[j] when it is beyond it, or a NaN where best[j] is not (ties keep the
// earlier row; a NaN held stays).
void plain_extremes(const std::vector<std::vector<float>>& rows, int nrows, int64_t n, int64_t pos0, bool want_max,
                    std::vector<float>& best, std::vector<int64_t>& pos) {
  for (int64_t j = 0; j < n; ++j)
    for (int r = 0; r < nrows; ++r) {
      const float v = rows[r][j];
      if (!std::isnan(best[j]) && (std::isnan(v) || (want_max ? v > best[j] : v < best[j]))) {
        best[j] = v;
        pos[j] = pos0 + r;
      }
    }
}

// The same bits (so -0 is not 0), or both NaN.
bool same_or_nan(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
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
          plain_extremes(rows, nrows, n, 100, want_max, wb, wp);
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
        batch_moments_reference(rows, nrows, count0, wm, w2, n);
        std::vector<double> gm = mean, g2 = m2;
        k->moments_rows_f32(ptrs, nrows, count0, gm.data(), g2.data(), n);
        INFO("moments: n " << n << ", " << nrows << " rows after " << count0);
        int64_t bad = 0;
        for (int64_t j = 0; j < n + 16; ++j) bad += same_or_nan(gm[j], wm[j]) && same_or_nan(g2[j], w2[j]) ? 0 : 1;
        CHECK(bad == 0);
        if (n > 2) CHECK((std::isnan(g2[1]) && std::isnan(g2[2])));
      }
    }
}

TEST_CASE("extreme_rows and moments_rows on float16 and bfloat16 bits: the plain loops' results on the widened rows",
          "[kernels][reduce]") {
  // The 16-bit loops widen each value to float32 as they load it. Their results must
  // be the plain loops' (written above and here) on rows widened by half.h's scalar
  // conversions: extremes and positions bit for bit, with ties, NaN and infinities;
  // moments (float32 batch sums) bit for bit with a NaN, an infinity and a bfloat16
  // deviation whose square overflows float32. Rows of the half values' own
  // widths (2 bytes a value), partial last vectors included, in spans of 1 to 64
  // rows (kSpanRows: whole and partial sub-batches of var).
  ember::testing::IsaGuard guard;
  if (!ember::cpu::set_isa("avx512")) return;
  const auto* k = ember::cpu::column_row_kernels();
  REQUIRE(k != nullptr);
  std::mt19937 g(29);
  std::uniform_int_distribution<int> small(-6, 6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (bool bf16 : {false, true}) {
    const auto narrow = [&](float f) { return bf16 ? ember::float_to_bfloat16_bits(f) : ember::float_to_half_bits(f); };
    const auto widen = [&](uint16_t h) { return bf16 ? ember::bfloat16_bits_to_float(h) : ember::half_bits_to_float(h); };
    const auto extremes = bf16 ? k->extreme_rows_bf16 : k->extreme_rows_f16;
    const auto moments = bf16 ? k->moments_rows_bf16 : k->moments_rows_f16;
    for (int64_t n : kSizes)
      for (int nrows : kSpanRows) {
        std::vector<std::vector<uint16_t>> bits(static_cast<size_t>(nrows), std::vector<uint16_t>(static_cast<size_t>(n)));
        std::vector<std::vector<float>> wide(static_cast<size_t>(nrows), std::vector<float>(static_cast<size_t>(n)));
        const uint16_t* ptrs[kSpan];
        for (int r = 0; r < nrows; ++r) ptrs[r] = bits[r].data();
        const auto fill = [&](auto value) {
          for (int r = 0; r < nrows; ++r)
            for (int64_t j = 0; j < n; ++j) {
              bits[r][j] = narrow(value(r, j));
              wide[r][j] = widen(bits[r][j]);
            }
        };
        for (bool specials : {false, true}) {
          fill([&](int, int64_t) { return static_cast<float>(small(g)) / 2; });  // ties
          if (specials) {
            bits[static_cast<size_t>(nrows - 1)][static_cast<size_t>(n - 1)] = narrow(nan);
            bits[0][static_cast<size_t>(n / 2)] = narrow(nrows > 1 ? inf : -inf);
            bits[static_cast<size_t>(nrows - 1)][static_cast<size_t>(n / 3)] = narrow(-inf);
            for (int r = 0; r < nrows; ++r)
              for (int64_t j = 0; j < n; ++j) wide[r][j] = widen(bits[r][j]);
          }
          for (bool want_max : {true, false}) {
            std::vector<float> best(static_cast<size_t>(n) + 16), wb;
            std::vector<int64_t> pos(static_cast<size_t>(n) + 16, -7), wp;
            for (float& v : best) v = static_cast<float>(small(g)) / 2;
            best[0] = nan;  // a NaN already held stays
            wb = best;
            wp = pos;
            const int64_t pos0 = (int64_t(1) << 33) + 40;  // positions past 2^31
            plain_extremes(wide, nrows, n, pos0, want_max, wb, wp);
            extremes(ptrs, nrows, pos0, want_max, best.data(), pos.data(), n);
            INFO((bf16 ? "bfloat16" : "float16") << " extremes: n " << n << ", " << nrows << " rows, "
                                                 << (want_max ? "max" : "min") << (specials ? ", NaN and infinities" : ""));
            int64_t bad = 0;
            for (int64_t j = 0; j < n + 16; ++j)
              bad += (std::isnan(wb[j]) ? std::isnan(best[j]) : best[j] == wb[j]) && pos[j] == wp[j] ? 0 : 1;
            CHECK(bad == 0);
          }
        }
        fill([&](int, int64_t) { return 100 + u(g); });  // rounded to the 16-bit type
        if (n > 1) bits[0][1] = narrow(nan);
        if (n > 2) bits[static_cast<size_t>(nrows - 1)][2] = narrow(inf);
        // bfloat16: deviations of 3e19 whose squares overflow float32 (the double
        // update) in column 3 and in one column of each other vector of a 64-column
        // group (21, 38, 55) and the last; float16's largest values square to 4e9,
        // far below, and take the float32 sums (column 3 and the last), while an
        // infinity sends columns 21, 38 and 55 to the double update. Column 6 is all
        // -0.
        for (int64_t j : {int64_t(3), int64_t(21), int64_t(38), int64_t(55), n - 1})
          if (j > 2 && j < n)
            bits[static_cast<size_t>(nrows - 1)][static_cast<size_t>(j)] =
                narrow(bf16 ? -3e19f : j == 3 || j == n - 1 ? 65504.0f : -inf);
        if (n > 6)
          for (int r = 0; r < nrows; ++r) bits[r][6] = narrow(-0.0f);
        for (int r = 0; r < nrows; ++r)
          for (int64_t j = 0; j < n; ++j) wide[r][j] = widen(bits[r][j]);
        for (int64_t count0 : {int64_t(5), int64_t(0)}) {
          std::vector<double> mean(static_cast<size_t>(n) + 16), m2(static_cast<size_t>(n) + 16);
          for (double& v : mean) v = 100 + u(g) / 3.0;  // not a float32: the shift rounds it
          for (double& v : m2) v = count0 == 0 ? 0 : u(g) + 1;
          // Held means far from the batch (column 4: 1e4), NaN (column 5: NaN
          // moments, or, on a first batch, never read) and past float32's range
          // (column 7: 1e39, a shift of inf, so the double update).
          if (n > 7) {
            mean[4] = 1e4 + u(g) / 3.0;
            mean[5] = nan;
            mean[7] = 1e39;
          }
          std::vector<double> wm = mean, w2 = m2;
          half_batch_moments_reference(wide, nrows, count0, wm, w2, n);
          moments(ptrs, nrows, count0, mean.data(), m2.data(), n);
          INFO((bf16 ? "bfloat16" : "float16") << " moments: n " << n << ", " << nrows << " rows after " << count0);
          int64_t bad = 0;
          for (int64_t j = 0; j < n + 16; ++j) bad += same_or_nan(mean[j], wm[j]) && same_or_nan(m2[j], w2[j]) ? 0 : 1;
          CHECK(bad == 0);
          if (n > 2) CHECK((std::isnan(m2[1]) && std::isnan(m2[2])));
        }
      }
  }
}

TEST_CASE("moments_rows_half: the half types' float32 batches as the plain loop, overflowing columns in double",
          "[kernels][reduce]") {
  // reduce_columns.h's baseline loop for float16 and bfloat16 rows (widened to
  // float32; CPUs without AVX-512): bit for bit half_batch_moments_reference, across
  // its 64-column blocks, with a NaN, an infinity and, for bfloat16, deviations of
  // 3e19 and 1e30 whose squares overflow float32 (those columns alone take the
  // double update; the rest of their block keeps the float32 one). Then the float32
  // sums against a float64 two-pass m2 of the same values: within 1e-6 of it.
  using ember::cpu::reduce_detail::moments_rows_half;
  std::mt19937 g(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bool bf16 : {false, true}) {
    const auto round = [&](float f) {
      return bf16 ? ember::bfloat16_bits_to_float(ember::float_to_bfloat16_bits(f))
                  : ember::half_bits_to_float(ember::float_to_half_bits(f));
    };
    for (int64_t n : {int64_t(1), int64_t(5), int64_t(63), int64_t(64), int64_t(65), int64_t(130)})
      for (int nrows : kSpanRows)
        for (int64_t count0 : {int64_t(5), int64_t(0)}) {
          std::vector<std::vector<float>> rows(static_cast<size_t>(nrows), std::vector<float>(static_cast<size_t>(n)));
          const float* ptrs[kSpan];
          for (int r = 0; r < nrows; ++r) {
            for (float& v : rows[r]) v = round(100 + 3 * u(g));
            ptrs[r] = rows[r].data();
          }
          const size_t last = static_cast<size_t>(nrows - 1);
          if (n > 1) rows[0][1] = std::numeric_limits<float>::quiet_NaN();
          if (n > 2) rows[last][2] = std::numeric_limits<float>::infinity();
          if (n > 3) rows[last][3] = round(bf16 ? 3e19f : 65504.0f);
          if (n > 64) rows[0][64] = round(bf16 ? -1e30f : -65504.0f);
          std::vector<double> mean(static_cast<size_t>(n)), m2(static_cast<size_t>(n));
          for (double& v : mean) v = 100 + u(g) / 3.0;  // not a float32: the shift rounds it
          for (double& v : m2) v = count0 == 0 ? 0 : u(g) + 1;
          std::vector<double> wm = mean, w2 = m2;
          half_batch_moments_reference(rows, nrows, count0, wm, w2, n);
          moments_rows_half(ptrs, nrows, count0, mean.data(), m2.data(), n);
          INFO((bf16 ? "bfloat16" : "float16") << ": n " << n << ", " << nrows << " rows after " << count0);
          int64_t bad = 0;
          for (int64_t j = 0; j < n; ++j) bad += same_or_nan(mean[j], wm[j]) && same_or_nan(m2[j], w2[j]) ? 0 : 1;
          CHECK(bad == 0);
          if (n > 2) CHECK((std::isnan(m2[1]) && std::isnan(m2[2])));
          if (n > 3 && bf16 && (count0 > 0 || nrows > 1)) CHECK(m2[3] > 1e38);  // finite, 9e38 / 8 or more
        }
    // The float32 sums' accuracy: m2 and the mean against a float64 two-pass sum of
    // the same values, for a column's first span of 8, 20 or 64 rows, and for such a
    // span after a first span of 64 (as the column schedule folds a slice's rows). The
    // data: values spread over [-900, 1100] (so that d = x - K needs more than the
    // half type's bits and d * d rounds), with or without an outlier (+30000) in the
    // first row; and two tight clusters a random gap apart, one of them the first 8
    // rows, every 8th row or every 4th, the other the rest. A first span's shift is
    // the mean of 16 rows spread over it (rows i * R / 16): q's error grows with how
    // far the span's mean is from the shift, which those 16 rows bound (q at most R /
    // 16 = 4 times the span's m2); a later span's shift is the running mean of at
    // least 64 rows. Measured over 30 rounds: 1.4e-6 at worst (every 4th row); the
    // first row as the shift gave 1.9e-5 with the outlier, the mean of the first 8
    // rows 4.4e-6 with the first 8 rows a cluster, which 2.5e-6 rejects.
    enum Data { kSpread, kOutlier, kFirst8, kEvery8, kEvery4 };
    const auto accuracy = [&](Data data, int nrows, bool after_first, double bound) {
      const int64_t n = 64;
      const int before = after_first ? kSpan : 0, total = before + nrows;
      std::vector<std::vector<float>> rows(static_cast<size_t>(total), std::vector<float>(n));
      for (int64_t j = 0; j < n; ++j) {
        const double a = std::ldexp(1.5 + u(g) / 2, static_cast<int>(g() % 10));
        const double gap = std::ldexp(1.5 + u(g) / 2, static_cast<int>(g() % 10)) * (g() % 2 ? 1 : -1);
        const double noise = std::ldexp(std::fabs(gap), -static_cast<int>(g() % 12));
        for (int r = 0; r < total; ++r) {
          const bool in_a = data == kFirst8 ? r < 8 : data == kEvery8 ? r % 8 == 0 : r % 4 == 0;
          const double v = data == kSpread || data == kOutlier
                               ? 100 + (data == kOutlier && r == 0 ? 30000 : 0) + 1000 * u(g)
                               : a + (in_a ? 0 : gap) + noise * u(g);
          rows[r][j] = round(static_cast<float>(v));
        }
      }
      const float* ptrs[2 * kSpan];
      for (int r = 0; r < total; ++r) ptrs[r] = rows[r].data();
      std::vector<double> mean(n), m2(n);
      if (before) moments_rows_half(ptrs, before, 0, mean.data(), m2.data(), n);
      moments_rows_half(ptrs + before, nrows, before, mean.data(), m2.data(), n);
      double worst = 0;
      for (int64_t j = 0; j < n; ++j) {
        double mu = 0, sq = 0;
        for (int r = 0; r < total; ++r) mu += rows[r][j];
        mu /= total;
        for (int r = 0; r < total; ++r) sq += (rows[r][j] - mu) * (rows[r][j] - mu);
        if (sq == 0) continue;
        worst = std::max({worst, std::fabs(m2[j] - sq) / sq, std::fabs(mean[j] - mu) / std::sqrt(sq)});
      }
      INFO((bf16 ? "bfloat16" : "float16") << ": accuracy against float64, data " << static_cast<int>(data) << ", "
                                           << nrows << " rows after " << before << ": worst relative error " << worst);
      CHECK(worst <= bound);
    };
    for (int rep = 0; rep < 30; ++rep)
      for (Data data : {kSpread, kOutlier, kFirst8, kEvery8, kEvery4})
        for (int nrows : {8, 20, 64})
          for (bool after_first : {false, true}) accuracy(data, nrows, after_first, 2.5e-6);
  }
}

TEST_CASE("moments_rows_baseline: float32 and float64 batches as the plain loop, float64 past 2^500 by Welford",
          "[kernels][reduce]") {
  // reduce_columns.h's baseline var loop (CPUs without AVX-512, and every float64
  // column): bit for bit the plain loop above, for both dtypes, with a NaN and an
  // infinity (NaN moments). Then float64 columns that the batch form would overflow,
  // in a block with ordinary ones: +-1e200 and +-1e308 give m2 = inf with a finite
  // mean, +-1e152 the float64 m2 of a long double two-pass sum within 1e-12, and
  // the ordinary columns of the same 64-column block stay bit for bit the plain
  // loop's; a first batch (count0 == 0) ignores the mean the state held (NaN here).
  using ember::cpu::reduce_detail::moments_rows_baseline;
  std::mt19937 g(29);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto run = [&]<class T>(T) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(63), int64_t(64), int64_t(65), int64_t(130)})
      for (int nrows = 1; nrows <= ember::cpu::column_rows_detail::kMaxRows; ++nrows)
        for (int64_t count0 : {int64_t(5), int64_t(0)}) {
          std::vector<std::vector<T>> rows(static_cast<size_t>(nrows), std::vector<T>(static_cast<size_t>(n)));
          const T* ptrs[ember::cpu::column_rows_detail::kMaxRows];
          for (int r = 0; r < nrows; ++r) {
            for (T& v : rows[r]) v = static_cast<T>(100 + u(g));
            ptrs[r] = rows[r].data();
          }
          if (n > 1) rows[0][1] = std::numeric_limits<T>::quiet_NaN();
          if (n > 2) rows[static_cast<size_t>(nrows - 1)][2] = std::numeric_limits<T>::infinity();
          std::vector<double> mean(static_cast<size_t>(n)), m2(static_cast<size_t>(n));
          for (double& v : mean) v = 100 + u(g);
          for (double& v : m2) v = count0 == 0 ? 0 : u(g) + 1;
          std::vector<double> wm = mean, w2 = m2;
          batch_moments_reference(rows, nrows, count0, wm, w2, n);
          moments_rows_baseline(ptrs, nrows, count0, mean.data(), m2.data(), n);
          INFO((sizeof(T) == 8 ? "float64" : "float32") << ": n " << n << ", " << nrows << " rows after " << count0);
          // float64's NaN and infinity columns take Welford's update (whose mean of an
          // infinity is inf, where the batch form's is NaN): m2 is NaN either way.
          int64_t bad = 0;
          for (int64_t j = 0; j < n; ++j) {
            const bool welford = sizeof(T) == 8 && (j == 1 || j == 2);
            bad += (welford || same_or_nan(mean[j], wm[j])) && same_or_nan(m2[j], w2[j]) ? 0 : 1;
          }
          CHECK(bad == 0);
          if (n > 2) CHECK((std::isnan(m2[1]) && std::isnan(m2[2])));
        }
  };
  run(0.0f);
  run(0.0);
  // float64 past 2^500: columns 0 (+-1e200), 1 (+-1e152, spread), 65 (+-1e308); the
  // rest ordinary. Two batches of 8 rows: the first from a state whose mean holds NaN
  // (a first batch never reads it) and whose m2 is 0.
  const int64_t n = 70;
  const int nrows = 8;
  std::vector<double> mean(n, std::numeric_limits<double>::quiet_NaN()), m2(n, 0.0);
  std::vector<std::vector<double>> all;  // every row of both batches, for column 1's reference
  for (int64_t count0 : {int64_t(0), int64_t(8)}) {
    std::vector<std::vector<double>> rows(nrows, std::vector<double>(n));
    const double* ptrs[ember::cpu::column_rows_detail::kMaxRows];
    for (int r = 0; r < nrows; ++r) {
      for (double& v : rows[r]) v = 100 + u(g);
      const double sign = r % 2 ? 1.0 : -1.0;
      rows[r][0] = sign * 1e200;
      rows[r][1] = sign * 1e152 * (1 + u(g) / 4);
      rows[r][65] = sign * 1e308;
      ptrs[r] = rows[r].data();
      all.push_back(rows[r]);
    }
    std::vector<double> wm = mean, w2 = m2;
    batch_moments_reference(rows, nrows, count0, wm, w2, n);
    moments_rows_baseline(ptrs, nrows, count0, mean.data(), m2.data(), n);
    INFO("float64 past 2^500, rows " << count0 << " to " << count0 + nrows);
    int64_t bad = 0;
    for (int64_t j = 0; j < n; ++j)
      if (j != 0 && j != 1 && j != 65) bad += mean[j] == wm[j] && m2[j] == w2[j] ? 0 : 1;
    CHECK(bad == 0);
    CHECK(std::isinf(m2[0]));
    CHECK(std::isinf(m2[65]));
    CHECK(std::isfinite(mean[0]));
    CHECK(std::isfinite(mean[65]));
    long double mu = 0, sq = 0;
    for (const auto& row : all) mu += row[1];
    mu /= static_cast<long double>(all.size());
    for (const auto& row : all) sq += (row[1] - mu) * (row[1] - mu);
    CHECK(std::fabs(static_cast<double>(m2[1] - sq)) <= 1e-12 * static_cast<double>(sq));
    CHECK(std::fabs(static_cast<double>(mean[1] - mu)) <= 1e-12 * 1e152);
  }
}
