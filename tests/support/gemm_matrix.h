// Matrices, their float64 reference sums and a thread guard for the GEMM tests
// (test_gemm.cpp, test_gemm_bf16.cpp): a logical rows x cols matrix in a buffer laid
// out by one of the strides the kernels must read, with every buffer element random,
// padding included, so that a kernel reading outside the matrix produces a wrong
// answer rather than a lucky zero.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm_kernel.h"

namespace gemm_test {

// How a logical rows x cols matrix lies in its buffer.
enum class Layout {
  Row,        // row-major, tight
  Col,        // column-major, tight
  PaddedRow,  // row-major with a row stride longer than a row
  Strided,    // every other element of every third row: no unit stride at all
  BcastRows,  // row stride 0: every row is the same buffer row
  BcastCols,  // column stride 0: every column is the same buffer column
};

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Row: return "row";
    case Layout::Col: return "col";
    case Layout::PaddedRow: return "padded-row";
    case Layout::Strided: return "strided";
    case Layout::BcastRows: return "bcast-rows";
    case Layout::BcastCols: return "bcast-cols";
  }
  return "?";
}

template <class T>
struct Mat {
  int64_t rows = 0, cols = 0, rs = 0, cs = 0;
  std::vector<T> buf;
  T* p() { return buf.data(); }
  T& at(int64_t i, int64_t j) { return buf[size_t(i * rs + j * cs)]; }
};

// Values uniform in (-1, 1), converted to T (rounded, for the half types).
template <class T>
Mat<T> make(int64_t rows, int64_t cols, Layout l, std::mt19937& g) {
  Mat<T> x;
  x.rows = rows;
  x.cols = cols;
  switch (l) {
    case Layout::Row: x.rs = cols; x.cs = 1; break;
    case Layout::Col: x.rs = 1; x.cs = rows; break;
    case Layout::PaddedRow: x.rs = cols + 5; x.cs = 1; break;
    case Layout::Strided: x.rs = 3 * (2 * cols + 1); x.cs = 2; break;
    case Layout::BcastRows: x.rs = 0; x.cs = 1; break;
    case Layout::BcastCols: x.rs = 1; x.cs = 0; break;
  }
  int64_t span = 1;
  if (rows > 0 && cols > 0) span = (rows - 1) * x.rs + (cols - 1) * x.cs + 1;
  x.buf.resize(size_t(span + 7));
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (T& v : x.buf) v = T(float(d(g)));
  return x;
}

// The float64 sums behind the GEMM tests' naive references: for every (i, j) of an
// m x n product, the sum over p = 0..k-1 (in that order) of A(i,p) B(p,j), and the
// sum of those terms' magnitudes (the scale of each element's rounding bound). A and
// B are first copied into dense float64 arrays, A by rows and B by columns, so the
// triple loop reads plain memory: read through Mat::at, the loop took 64-85% of the
// time of the sanitizer run's largest GEMM test (62 s of its tensor suite's 302).
struct RefSums {
  int64_t n = 0;
  std::vector<double> sum, mag;  // m x n, row-major
  double at_sum(int64_t i, int64_t j) const { return sum[size_t(i * n + j)]; }
  double at_mag(int64_t i, int64_t j) const { return mag[size_t(i * n + j)]; }
};

template <class T>
double to_f64(T v) {
  if constexpr (std::is_floating_point_v<T>) return double(v);
  else return double(float(v));  // the half types widen through float, exactly
}

template <class T>
RefSums reference_sums(Mat<T>& a, Mat<T>& b, int64_t m, int64_t n, int64_t k) {
  std::vector<double> ad(size_t(m * k)), bt(size_t(n * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) ad[size_t(i * k + p)] = to_f64(a.at(i, p));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) bt[size_t(j * k + p)] = to_f64(b.at(p, j));
  RefSums r;
  r.n = n;
  r.sum.assign(size_t(m * n), 0.0);
  r.mag.assign(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double* x = ad.data() + i * k;
      const double* y = bt.data() + j * k;
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = x[p] * y[p];
        sum += t;
        mag += std::fabs(t);
      }
      r.sum[size_t(i * n + j)] = sum;
      r.mag[size_t(i * n + j)] = mag;
    }
  return r;
}

// Sets the thread count for one test and restores it after. It also keeps gemm
// from falling back to one thread when the machine is busy, so the threaded paths
// run whatever else the machine is doing.
struct ThreadsGuard {
  int saved = ember::get_num_threads();
  explicit ThreadsGuard(int n) {
    ember::set_num_threads(n);
    ember::cpu::gemm_detail::set_gemm_thread_backoff(false);
  }
  ~ThreadsGuard() {
    ember::cpu::gemm_detail::set_gemm_thread_backoff(true);
    ember::set_num_threads(saved);
  }
};

}  // namespace gemm_test
