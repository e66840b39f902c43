// The CPU GEMM (kernels/cpu/gemm.h) against a float64 triple loop, for every
// micro-kernel this CPU can run: edge tiles, strided, transposed and broadcast
// operands, column-major C, alpha/beta, beta == 0 over NaN, k == 0, empty shapes,
// several cache blocks and threads, and batches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"
#include "support/gemm_matrix.h"
#include "support/sanitized.h"

namespace {

using gemm_test::Layout;
using gemm_test::layout_name;
using gemm_test::make;
using gemm_test::Mat;
using gemm_test::ThreadsGuard;
using ember::cpu::gemm;
using ember::cpu::gemm_batched;

template <class T>
double eps() {
  return double(std::numeric_limits<T>::epsilon());
}

// Checks C_after = alpha A B + beta C_before element by element, allowing rounding
// error proportional to sum |alpha a b| + |beta c| (the scale of each element's
// terms), and checks that C's buffer is untouched outside the matrix.
template <class T>
void check(int64_t m, int64_t n, int64_t k, T alpha, Mat<T>& a, Mat<T>& b, T beta,
           const Mat<T>& c_before, Mat<T>& c) {
  std::vector<char> inside(c.buf.size(), 0);
  int64_t bad = 0;
  double worst = 0;
  const gemm_test::RefSums ref = gemm_test::reference_sums(a, b, m, n, k);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = double(alpha) * ref.at_sum(i, j);
      double mag = std::fabs(double(alpha)) * ref.at_mag(i, j);
      if (beta != T(0)) {
        const double c0 = double(c_before.buf[size_t(i * c.rs + j * c.cs)]);
        want += double(beta) * c0;
        mag += std::fabs(double(beta) * c0);
      }
      const double got = double(c.at(i, j));
      const double tol = 2.0 * double(k + 2) * eps<T>() * mag + 1e-300;
      const double err = std::fabs(got - want);
      if (!(err <= tol)) {
        if (bad < 5) UNSCOPED_INFO("C(" << i << "," << j << ") = " << got << ", want " << want);
        ++bad;
      }
      if (mag > 0 && err / mag > worst) worst = err / mag;
      inside[size_t(i * c.rs + j * c.cs)] = 1;
    }
  }
  int64_t touched = 0;
  for (size_t e = 0; e < c.buf.size(); ++e) {
    if (inside[e]) continue;
    const T x = c.buf[e], y = c_before.buf[e];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) ++touched;
  }
  INFO("worst relative error " << worst);
  CHECK(bad == 0);
  CHECK(touched == 0);
}

template <class T>
void run_case(int64_t m, int64_t n, int64_t k, T alpha, T beta, Layout la, Layout lb, Layout lc,
              bool nan_c = false, uint32_t seed = 1) {
  std::mt19937 g(seed);
  Mat<T> a = make<T>(m, k, la, g), b = make<T>(k, n, lb, g), c = make<T>(m, n, lc, g);
  if (nan_c) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c.at(i, j) = std::numeric_limits<T>::quiet_NaN();
  }
  const Mat<T> c_before = c;
  INFO("m=" << m << " n=" << n << " k=" << k << " alpha=" << alpha << " beta=" << beta
            << " A " << layout_name(la) << " B " << layout_name(lb) << " C " << layout_name(lc)
            << (nan_c ? " C=NaN" : ""));
  gemm(m, n, k, alpha, a.p(), a.rs, a.cs, b.p(), b.rs, b.cs, beta, c.p(), c.rs, c.cs);
  check(m, n, k, alpha, a, b, beta, c_before, c);
}

// Runs f once for each kernel set this CPU supports, then restores the automatic
// choice.
template <class F>
void for_each_kernel(F&& f) {
  for (const char* name : {"avx512", "avx2", "generic"}) {
    if (!ember::cpu::set_isa(name)) continue;
    INFO("kernel " << name);
    REQUIRE(std::string(ember::cpu::gemm_kernel_name()) == name);
    f();
  }
  ember::cpu::set_isa("auto");
}

const Layout kDense[] = {Layout::Row, Layout::Col};

}  // namespace

TEMPLATE_TEST_CASE("gemm matches a float64 reference on square and odd sizes", "[gemm]", float,
                   double) {
  using T = TestType;
  ThreadsGuard threads(2);
  for_each_kernel([] {
    for (int64_t s : {1, 3, 17, 33, 65, 127}) {
      for (Layout la : kDense)
        for (Layout lb : kDense)
          for (Layout lc : kDense) run_case<T>(s, s, s, T(1.5), T(0.5), la, lb, lc);
    }
    run_case<T>(255, 255, 255, T(1), T(0), Layout::Row, Layout::Row, Layout::Row);
    run_case<T>(255, 255, 255, T(1), T(0), Layout::Row, Layout::Col, Layout::Row);
    for (Layout la : kDense)
      for (Layout lb : kDense)
        for (Layout lc : kDense) run_case<T>(300, 129, 71, T(-0.75), T(2), la, lb, lc);
    run_case<T>(300, 129, 71, T(1), T(1), Layout::PaddedRow, Layout::PaddedRow,
                Layout::PaddedRow);
    run_case<T>(129, 300, 71, T(1), T(-1), Layout::Strided, Layout::Strided, Layout::Strided);
    run_case<T>(71, 300, 129, T(2), T(0), Layout::Strided, Layout::Col, Layout::PaddedRow);
  });
}

TEMPLATE_TEST_CASE("gemm with one row of A (the one-pass row kernel) matches a float64 reference",
                   "[gemm]", float, double) {
  using T = TestType;
  ThreadsGuard threads(2);
  for_each_kernel([] {
    // n and k around the kernels' vector widths (4 vectors of columns, 8 columns
    // at a time, k in whole vectors plus a tail), every B layout the row kernel
    // takes and the strided ones it hands to the blocked path, beta 0 over NaN.
    for (int64_t n : {1, 3, 4, 5, 31, 64, 65, 130})
      for (int64_t k : {1, 7, 16, 17, 100})
        for (Layout la : {Layout::Row, Layout::Strided})
          for (Layout lb : {Layout::Row, Layout::Col, Layout::PaddedRow, Layout::Strided}) {
            run_case<T>(1, n, k, T(1.5), T(0.5), la, lb, Layout::Row);
            run_case<T>(1, n, k, T(1), T(0), la, lb, Layout::Row, true);
          }
    run_case<T>(1, 256, 784, T(1), T(0), Layout::Row, Layout::Col, Layout::Row);  // a batch-1 Linear
    run_case<T>(1, 256, 784, T(1), T(1), Layout::Row, Layout::Row, Layout::Row);
    // Columns split over the team at a multiple of 16, the last range ragged.
    run_case<T>(1, 1001, 200, T(1), T(0.5), Layout::Row, Layout::Col, Layout::Row);
    run_case<T>(1, 1001, 200, T(2), T(0), Layout::Row, Layout::Row, Layout::Row, true);
  });
}

// A small weight read in place: the row kernel takes four columns side by side
// (GemmImpl::rows_pass), the seed network's Linear layers at batch 1, when every
// column is on a 64-byte boundary or the columns are shorter than the one-column
// path's alignment head needs (k < 256: 60 and 120 values, the seed network's
// last two layers, on columns half a line off). Buffers aligned here (or one
// element past), since std::vector's are not.
TEMPLATE_TEST_CASE("gemm with one row and an in-cache weight matches a float64 reference", "[gemm]",
                   float, double) {
  using T = TestType;
  for_each_kernel([] {
    for (bool aligned : {true, false})
      for (int64_t k : {16, 60, 64, 120, 192, 300})
        for (int64_t n : {1, 3, 4, 5, 120, 131}) {
          std::mt19937 g(5);
          std::uniform_real_distribution<double> d(-1.0, 1.0);
          // 64-byte columns, or k values one after the other from one element past a line.
          const int64_t ld = aligned ? (k * int64_t(sizeof(T)) + 63) / 64 * 64 / int64_t(sizeof(T)) : k;
          std::vector<T> store(size_t(n * ld + k + 64 / sizeof(T) + 1));
          T* base = store.data();
          while (reinterpret_cast<uintptr_t>(base) % 64) ++base;
          base += aligned ? 0 : 1;
          T* a = base + n * ld;  // one row of k values after the weight
          for (int64_t i = 0; i < n * ld + k; ++i) base[i] = T(d(g));
          std::vector<T> c(size_t(n), T(0.25));
          ember::cpu::gemm(1, n, k, T(1), a, k, 1, base, 1, ld, T(2), c.data(), n, 1);
          double worst = 0;
          for (int64_t j = 0; j < n; ++j) {
            double want = 2 * 0.25;
            for (int64_t q = 0; q < k; ++q) want += double(a[q]) * double(base[j * ld + q]);
            worst = std::max(worst, std::abs(double(c[size_t(j)]) - want));
          }
          INFO("k " << k << " n " << n << (aligned ? ", aligned columns" : ", columns one after the other"));
          CHECK(worst <= (sizeof(T) == 4 ? 2e-5 : 1e-13));
          // The same columns as the first n of a weight too large for the in-cache
          // path (the one-column stream): the same bits.
          const int64_t n_big = (256 << 10) / (k * int64_t(sizeof(T))) + n + 1;
          std::vector<T> big_store(size_t(n_big * ld + 64 / sizeof(T) + 1));
          T* big = big_store.data();
          while (reinterpret_cast<uintptr_t>(big) % 64) ++big;
          big += aligned ? 0 : 1;
          std::copy(base, base + n * ld, big);
          std::vector<T> c_big(size_t(n_big), T(0.25));
          ember::cpu::gemm(1, n_big, k, T(1), a, k, 1, big, 1, ld, T(2), c_big.data(), n_big, 1);
          CHECK(std::equal(c.begin(), c.end(), c_big.begin()));
        }
  });
}

TEMPLATE_TEST_CASE("gemm with a few rows of A (passes over B in place) matches a float64 reference",
                   "[gemm]", float, double) {
  using T = TestType;
  ThreadsGuard threads(2);
  for_each_kernel([] {
    // Every row count up to and past the few-rows limit (one pass of 4 or 2 rows,
    // then the rest), columns around the vector widths (blocks of 4 vectors, single
    // vectors, single columns), k with and without a tail.
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9})
      for (int64_t n : {1, 5, 33, 48, 70})
        for (int64_t k : {1, 17, 100})
          for (Layout la : {Layout::Row, Layout::PaddedRow, Layout::Strided})
            for (Layout lb : {Layout::Row, Layout::Col, Layout::Strided}) {
              run_case<T>(m, n, k, T(1.5), T(0.5), la, lb, Layout::PaddedRow);
              run_case<T>(m, n, k, T(1), T(0), la, lb, Layout::Row, true);
            }
    // Large enough to split the columns over the team.
    run_case<T>(5, 1001, 200, T(1), T(0.5), Layout::Row, Layout::Col, Layout::Row);
    run_case<T>(7, 1001, 200, T(1), T(0), Layout::Row, Layout::Row, Layout::Row, true);
  });
}

// The few-rows path splits B's columns over the team from 512K multiply-adds; each
// range must be cut into the same column blocks as the whole row, or a column's sum
// (one FMA chain in a block, four in a single vector) would change with the thread
// count.
TEMPLATE_TEST_CASE("gemm with a few rows gives the same bits on 1, 2 and 3 threads", "[gemm]", float, double) {
  using T = TestType;
  for_each_kernel([] {
    for (int64_t m : {4, 7})
      for (Layout lb : {Layout::Row, Layout::Col}) {
        const int64_t n = 200, k = 784;
        std::mt19937 g(11);
        Mat<T> a = make<T>(m, k, Layout::Row, g), b = make<T>(k, n, lb, g);
        std::vector<std::vector<T>> outs;
        for (int threads : {1, 2, 3}) {
          ThreadsGuard guard(threads);
          std::vector<T> c(size_t(m * n), T(0));
          ember::cpu::gemm(m, n, k, T(1), a.p(), a.rs, a.cs, b.p(), b.rs, b.cs, T(0), c.data(), n, 1);
          outs.push_back(std::move(c));
        }
        INFO("m " << m << (lb == Layout::Row ? " B row-major" : " B column-major"));
        CHECK(outs[1] == outs[0]);
        CHECK(outs[2] == outs[0]);
      }
  });
}

TEMPLATE_TEST_CASE("gemm applies alpha and beta", "[gemm]", float, double) {
  using T = TestType;
  for_each_kernel([] {
    const T values[] = {T(0), T(1), T(-1), T(0.5), T(3)};
    for (T alpha : values)
      for (T beta : values)
        run_case<T>(37, 45, 29, alpha, beta, Layout::Row, Layout::Row, Layout::Row);
  });
}

TEMPLATE_TEST_CASE("gemm with beta == 0 never reads C", "[gemm]", float, double) {
  using T = TestType;
  for_each_kernel([] {
    for (Layout lc : {Layout::Row, Layout::Col, Layout::Strided}) {
      run_case<T>(33, 65, 17, T(1), T(0), Layout::Row, Layout::Row, lc, true);
      run_case<T>(5, 3, 1, T(2), T(0), Layout::Row, Layout::Row, lc, true);
      run_case<T>(33, 65, 0, T(1), T(0), Layout::Row, Layout::Row, lc, true);    // k == 0
      run_case<T>(33, 65, 17, T(0), T(0), Layout::Row, Layout::Row, lc, true);   // alpha == 0
    }
  });
}

TEMPLATE_TEST_CASE("gemm with k == 0 scales C by beta", "[gemm]", float, double) {
  using T = TestType;
  for (T beta : {T(0), T(1), T(-2)})
    for (Layout lc : {Layout::Row, Layout::Col})
      run_case<T>(19, 23, 0, T(1), beta, Layout::Row, Layout::Row, lc);
}

TEMPLATE_TEST_CASE("gemm with m == 0 or n == 0 touches nothing", "[gemm]", float, double) {
  using T = TestType;
  for (auto [m, n] : {std::pair<int64_t, int64_t>{0, 5}, {5, 0}, {0, 0}}) {
    run_case<T>(m, n, 7, T(1), T(0), Layout::Row, Layout::Row, Layout::Row, true);
    run_case<T>(m, n, 7, T(1), T(2), Layout::Row, Layout::Row, Layout::Row);
  }
}

TEMPLATE_TEST_CASE("gemm reads broadcast operands through zero strides", "[gemm]", float,
                   double) {
  using T = TestType;
  ThreadsGuard threads(2);
  for_each_kernel([] {
    for (Layout la : {Layout::BcastRows, Layout::BcastCols})
      for (Layout lb : {Layout::BcastRows, Layout::BcastCols, Layout::Row})
        run_case<T>(45, 70, 33, T(1), T(0.5), la, lb, Layout::Row);
    run_case<T>(130, 140, 150, T(1), T(0), Layout::Row, Layout::BcastCols, Layout::Col);
  });
}

TEMPLATE_TEST_CASE("gemm across cache blocks and thread counts", "[gemm]", float, double) {
  using T = TestType;
  for_each_kernel([] {
    // 1, 2 and 3 threads; 3 only under AddressSanitizer (support/sanitized.h).
    for (int threads : cache_block_test_teams()) {
      ThreadsGuard guard(threads);
      INFO("threads " << threads);
      // Rows beyond one MC block on one thread, depth beyond one KC block, and a
      // B big enough that threads share its packed copy.
      run_case<T>(300, 600, 600, T(1), T(0.25), Layout::Row, Layout::Row, Layout::Row);
      run_case<T>(300, 600, 600, T(1), T(0), Layout::Col, Layout::Col, Layout::Col);
      // Columns beyond one NC block, split among threads.
      run_case<T>(30, 4200, 600, T(1), T(1), Layout::Row, Layout::Row, Layout::Row);
    }
  });
}

TEMPLATE_TEST_CASE("gemm_batched matches gemm on each matrix", "[gemm]", float, double) {
  using T = TestType;
  ThreadsGuard threads(2);
  std::mt19937 g(7);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  // Small matrices (spread over threads by batch), large ones in an even batch (by
  // batch too) and in an odd one (threaded inside each gemm); b_bs == 0 shares one
  // B across the batch, as a layer's weight is.
  struct Shape { int64_t batch, m, n, k; bool shared_b; };
  for (Shape s : {Shape{16, 20, 20, 20, false}, Shape{16, 7, 5, 3, true},
                  Shape{4, 70, 80, 90, false}, Shape{3, 170, 160, 150, false},
                  Shape{3, 170, 160, 150, true}}) {
    INFO("batch " << s.batch << " of " << s.m << "x" << s.n << "x" << s.k
                  << (s.shared_b ? " shared B" : ""));
    const int64_t a_bs = s.m * s.k, b_bs = s.shared_b ? 0 : s.k * s.n, c_bs = s.m * s.n;
    std::vector<T> a(size_t(s.batch * a_bs)), b(size_t(s.shared_b ? s.k * s.n : s.batch * b_bs)),
        c(size_t(s.batch * c_bs));
    for (T& v : a) v = T(d(g));
    for (T& v : b) v = T(d(g));
    for (T& v : c) v = T(d(g));
    std::vector<T> want = c;
    for (int64_t i = 0; i < s.batch; ++i)
      gemm(s.m, s.n, s.k, T(1.5), a.data() + i * a_bs, s.k, 1, b.data() + i * b_bs, s.n, 1, T(-1),
           want.data() + i * c_bs, s.n, 1);
    gemm_batched(s.batch, s.m, s.n, s.k, T(1.5), a.data(), a_bs, s.k, 1, b.data(), b_bs, s.n, 1,
                 T(-1), c.data(), c_bs, s.n, 1);
    // gemm itself is checked against float64 above; batched and single calls run the
    // same kernel on the same blocks, so they agree to rounding.
    double worst = 0;
    for (size_t e = 0; e < c.size(); ++e)
      worst = std::max(worst, std::fabs(double(c[e]) - double(want[e])));
    CHECK(worst <= 64 * eps<T>() * double(s.k));
  }
}

TEST_CASE("gemm called from inside a parallel region runs on its own thread", "[gemm]") {
  // Each thread of the caller's team multiplies its own matrices; gemm sees that it
  // is already inside a parallel region and opens no nested team.
  ThreadsGuard threads(2);
  constexpr int kTeam = 2;
  const int64_t m = 150, n = 140, k = 130;
  std::mt19937 g(11);
  std::vector<Mat<float>> a, b, c, c0;
  for (int t = 0; t < kTeam; ++t) {
    a.push_back(make<float>(m, k, Layout::Row, g));
    b.push_back(make<float>(k, n, Layout::Row, g));
    c.push_back(make<float>(m, n, Layout::Row, g));
    c0.push_back(c.back());
  }
#pragma omp parallel for num_threads(kTeam)
  for (int t = 0; t < kTeam; ++t)
    gemm(m, n, k, 1.0f, a[t].p(), a[t].rs, a[t].cs, b[t].p(), b[t].rs, b[t].cs, 0.5f, c[t].p(),
         c[t].rs, c[t].cs);
  for (int t = 0; t < kTeam; ++t) check(m, n, k, 1.0f, a[t], b[t], 0.5f, c0[t], c[t]);
}
