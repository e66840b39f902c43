// The CPU pooling kernels (kernels/cpu/pool2d.h) against float64 loops written from
// PyTorch's definitions: max over the in-bounds window elements (the first largest,
// or the last NaN), average over them divided by the window clipped to the padded
// input (count_include_pad), to the input, or by divisor_override. Shapes cover
// padding, stride, dilation, ceil_mode with partial last windows, the 2x2 fast path
// (even and odd sizes) and the FashionMNIST net's layers; gradients are also
// checked against central differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cpu/pool2d.h"

#include "support/kernel_compare.h"

using test_support::random_values;
using test_support::rel_err;

namespace {

using ember::DType;
using ember::cpu::Pool2dShape;

Pool2dShape shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh,
                  int64_t sw, int64_t ph = 0, int64_t pw = 0, bool ceil_mode = false,
                  int64_t dh = 1, int64_t dw = 1) {
  Pool2dShape s;
  s.n = n, s.c = c, s.h = h, s.w = w, s.kh = kh, s.kw = kw, s.stride_h = sh, s.stride_w = sw;
  s.pad_h = ph, s.pad_w = pw, s.ceil_mode = ceil_mode, s.dil_h = dh, s.dil_w = dw;
  return ember::cpu::pool2d_set_output_size(s);
}

struct Case {
  const char* name;
  Pool2dShape s;
};

// Shapes both poolings accept (no dilation).
std::vector<Case> cases() {
  return {
      {"2x2 stride 2 (fast path)", shape(3, 2, 24, 24, 2, 2, 2, 2)},
      {"2x2 stride 2, odd size (fast path, leftovers)", shape(2, 3, 7, 9, 2, 2, 2, 2)},
      {"2x2 stride 2, odd size, ceil_mode", shape(2, 2, 5, 7, 2, 2, 2, 2, 0, 0, true)},
      {"3x3 stride 2 pad 1", shape(2, 2, 9, 10, 3, 3, 2, 2, 1, 1)},
      {"3x2 stride 2x1 pad 1x0 ceil_mode", shape(1, 3, 8, 7, 3, 2, 2, 1, 1, 0, true)},
      {"3x3 stride 3 pad 1 ceil_mode", shape(2, 1, 10, 11, 3, 3, 3, 3, 1, 1, true)},
      {"2x2 stride 2 pad 1 ceil_mode, last window dropped",
       shape(1, 2, 3, 5, 2, 2, 2, 2, 1, 1, true)},
      {"4x4 stride 1 pad 2", shape(1, 2, 5, 6, 4, 4, 1, 1, 2, 2)},
      {"1x1", shape(2, 2, 3, 4, 1, 1, 1, 1)},
      {"net pool1, batch 5", shape(5, 6, 24, 24, 2, 2, 2, 2)},
      {"net pool2, batch 5", shape(5, 12, 8, 8, 2, 2, 2, 2)},
  };
}

// The input rows and columns a window covers, with padding coordinates kept (the
// caller checks bounds).
struct Window {
  std::vector<int64_t> ys, xs;
};
Window window(const Pool2dShape& s, int64_t oy, int64_t ox) {
  Window w;
  for (int64_t ky = 0; ky < s.kh; ++ky) w.ys.push_back(oy * s.stride_h - s.pad_h + ky * s.dil_h);
  for (int64_t kx = 0; kx < s.kw; ++kx) w.xs.push_back(ox * s.stride_w - s.pad_w + kx * s.dil_w);
  return w;
}

struct MaxRef {
  std::vector<double> y, gx;
  std::vector<int64_t> ind;
};

MaxRef max_reference(const Pool2dShape& s, const std::vector<double>& x,
                     const std::vector<double>& gy) {
  MaxRef r;
  r.gx.assign(x.size(), 0.0);
  for (int64_t p = 0; p < s.n * s.c; ++p)
    for (int64_t oy = 0; oy < s.h_out; ++oy)
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        const Window w = window(s, oy, ox);
        int64_t best = -1, last_nan = -1;
        for (int64_t iy : w.ys)
          for (int64_t ix : w.xs) {
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            const int64_t k = iy * s.w + ix;
            const double v = x[p * s.h * s.w + k];
            if (std::isnan(v)) last_nan = k;
            if (best < 0 || v > x[p * s.h * s.w + best]) best = k;
          }
        const int64_t k = last_nan >= 0 ? last_nan : best;
        r.y.push_back(x[p * s.h * s.w + k]);
        r.ind.push_back(k);
        r.gx[p * s.h * s.w + k] += gy[r.y.size() - 1];
      }
  return r;
}

struct AvgRef {
  std::vector<double> y, gx;
};

AvgRef avg_reference(const Pool2dShape& s, const std::vector<double>& x,
                     const std::vector<double>& gy) {
  AvgRef r;
  r.gx.assign(x.size(), 0.0);
  for (int64_t p = 0; p < s.n * s.c; ++p)
    for (int64_t oy = 0; oy < s.h_out; ++oy)
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        const Window w = window(s, oy, ox);
        double sum = 0;
        int64_t inside = 0, in_padded = 0;
        for (int64_t iy : w.ys)
          for (int64_t ix : w.xs) {
            if (iy < s.h + s.pad_h && ix < s.w + s.pad_w) ++in_padded;
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            ++inside;
            sum += x[p * s.h * s.w + iy * s.w + ix];
          }
        const double div = s.divisor_override ? double(s.divisor_override)
                           : s.count_include_pad ? double(in_padded)
                                                 : double(inside);
        const double g = gy[r.y.size()];
        r.y.push_back(inside ? sum / div : 0.0);
        if (!inside) continue;
        for (int64_t iy : w.ys)
          for (int64_t ix : w.xs)
            if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
              r.gx[p * s.h * s.w + iy * s.w + ix] += g / div;
      }
  return r;
}

size_t in_size(const Pool2dShape& s) { return size_t(s.n * s.c * s.h * s.w); }
size_t out_size(const Pool2dShape& s) { return size_t(s.n * s.c * s.h_out * s.w_out); }

template <class T>
void check_max(const Pool2dShape& s, const std::vector<double>& x, double tol) {
  std::mt19937 g(5);
  const auto gy = random_values(out_size(s), g);
  const MaxRef r = max_reference(s, x, gy);
  const DType dt = ember::dtype_of_v<T>;
  const std::vector<T> tx(x.begin(), x.end()), tgy(gy.begin(), gy.end());
  std::vector<T> y(out_size(s), T(7)), gx(in_size(s), T(7));
  std::vector<int64_t> ind(out_size(s), -7);
  ember::cpu::max_pool2d_forward(dt, s, tx.data(), y.data(), ind.data());
  CHECK(ind == r.ind);
  // The values are input elements: exactly equal (or both NaN), with or without
  // indices.
  std::vector<T> y2(out_size(s), T(7));
  ember::cpu::max_pool2d_forward(dt, s, tx.data(), y2.data(), nullptr);
  auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  int64_t wrong = 0;
  for (size_t i = 0; i < y.size(); ++i)
    wrong += !same(double(y[i]), double(T(r.y[i]))) + !same(double(y2[i]), double(y[i]));
  CHECK(wrong == 0);
  ember::cpu::max_pool2d_backward(dt, s, tgy.data(), ind.data(), gx.data());
  CHECK(rel_err(gx, r.gx) <= tol);
  // The backward pass needs only the sizes (the front-end passes no window).
  Pool2dShape sizes_only;
  sizes_only.n = s.n, sizes_only.c = s.c, sizes_only.h = s.h, sizes_only.w = s.w;
  sizes_only.h_out = s.h_out, sizes_only.w_out = s.w_out;
  std::vector<T> gx2(in_size(s), T(7));
  ember::cpu::max_pool2d_backward(dt, sizes_only, tgy.data(), ind.data(), gx2.data());
  CHECK(gx2 == gx);
}

template <class T>
void check_avg(const Pool2dShape& s, const std::vector<double>& x, double tol) {
  std::mt19937 g(6);
  const auto gy = random_values(out_size(s), g);
  const AvgRef r = avg_reference(s, x, gy);
  const DType dt = ember::dtype_of_v<T>;
  const std::vector<T> tx(x.begin(), x.end()), tgy(gy.begin(), gy.end());
  std::vector<T> y(out_size(s), T(7)), gx(in_size(s), T(7));
  ember::cpu::avg_pool2d_forward(dt, s, tx.data(), y.data());
  CHECK(rel_err(y, r.y) <= tol);
  ember::cpu::avg_pool2d_backward(dt, s, tgy.data(), gx.data());
  CHECK(rel_err(gx, r.gx) <= tol);
}

template <class T>
void check_all(double tol) {
  for (const Case& c : cases()) {
    INFO(c.name << " (" << ember::dtype_name(ember::dtype_of_v<T>) << ")");
    std::mt19937 g(11);
    const auto x = random_values(in_size(c.s), g);
    check_max<T>(c.s, x, tol);
    Pool2dShape s = c.s;
    for (bool include : {true, false}) {
      s.count_include_pad = include;
      INFO("count_include_pad " << include);
      check_avg<T>(s, x, tol);
    }
    s.divisor_override = 3;
    INFO("divisor_override 3");
    check_avg<T>(s, x, tol);
  }
  // Dilation, max pooling only.
  for (const Pool2dShape& s : {shape(2, 2, 9, 8, 3, 3, 1, 1, 2, 2, false, 2, 2),
                               shape(1, 3, 10, 9, 2, 3, 2, 2, 1, 1, true, 3, 2)}) {
    INFO("dilated " << s.dil_h << "x" << s.dil_w);
    std::mt19937 g(12);
    check_max<T>(s, random_values(in_size(s), g), tol);
  }
}

}  // namespace

TEST_CASE("pool2d output size follows PyTorch", "[kernels][pool2d]") {
  using ember::cpu::pool2d_output_size;
  CHECK(pool2d_output_size(24, 2, 2, 0, 1, false) == 12);
  CHECK(pool2d_output_size(5, 2, 2, 0, 1, false) == 2);
  CHECK(pool2d_output_size(5, 2, 2, 0, 1, true) == 3);
  CHECK(pool2d_output_size(6, 3, 3, 1, 1, true) == 3);
  CHECK(pool2d_output_size(4, 2, 2, 1, 1, true) == 3);
  // ceil_mode would add a window starting in the right padding: it is dropped.
  CHECK(pool2d_output_size(3, 2, 2, 1, 1, true) == 2);
  CHECK(pool2d_output_size(9, 3, 1, 2, 2, false) == 9);
  CHECK(pool2d_output_size(1, 3, 1, 0, 1, false) == -1);  // rejected by the front-end
}

TEST_CASE("pool2d float64 matches the definition", "[kernels][pool2d]") {
  check_all<double>(1e-12);
}

TEST_CASE("pool2d float32 matches the definition", "[kernels][pool2d]") {
  check_all<float>(1e-6);
}

TEST_CASE("max_pool2d propagates NaN and reports ties and -inf as PyTorch", "[kernels][pool2d]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // One 4x4 plane, 2x2 windows: [NaN first], [two NaNs: the last wins], [a tie: the
  // first wins], [all -inf: the first element].
  const std::vector<double> x = {nan, 1,   nan, 2,     //
                                 3,   4,   5,   nan,   //
                                 7,   7,   -inf, -inf, //
                                 0,   7,   -inf, -inf};
  {
    const Pool2dShape s = shape(1, 1, 4, 4, 2, 2, 2, 2);  // the 2x2 fast path
    check_max<double>(s, x, 0);
    check_max<float>(s, x, 0);
    std::vector<float> y(4);
    std::vector<int64_t> ind(4);
    const std::vector<float> xf(x.begin(), x.end());
    ember::cpu::max_pool2d_forward(DType::Float32, s, xf.data(), y.data(), ind.data());
    CHECK(std::isnan(y[0]));
    CHECK(ind[0] == 0);
    CHECK(std::isnan(y[1]));
    CHECK(ind[1] == 7);
    CHECK(y[2] == 7);
    CHECK(ind[2] == 8);
    CHECK(y[3] == -std::numeric_limits<float>::infinity());
    CHECK(ind[3] == 10);
  }
  // The general path (3x3 windows, stride 1) on the same plane.
  const Pool2dShape s3 = shape(1, 1, 4, 4, 3, 3, 1, 1);
  check_max<double>(s3, x, 0);
  check_max<float>(s3, x, 0);
}

TEST_CASE("pool2d gradients match central differences", "[kernels][pool2d]") {
  const Pool2dShape s = shape(1, 2, 5, 6, 3, 2, 2, 2, 1, 1, true);
  std::mt19937 g(9);
  auto x = random_values(in_size(s), g);
  const auto gy = random_values(out_size(s), g);
  for (bool is_max : {true, false}) {
    INFO((is_max ? "max" : "avg"));
    auto loss = [&] {
      std::vector<double> y(out_size(s));
      if (is_max) ember::cpu::max_pool2d_forward(DType::Float64, s, x.data(), y.data(), nullptr);
      else ember::cpu::avg_pool2d_forward(DType::Float64, s, x.data(), y.data());
      double l = 0;
      for (size_t i = 0; i < y.size(); ++i) l += gy[i] * y[i];
      return l;
    };
    std::vector<double> gx(in_size(s)), num(in_size(s));
    std::vector<int64_t> ind(out_size(s));
    std::vector<double> y(out_size(s));
    if (is_max) {
      ember::cpu::max_pool2d_forward(DType::Float64, s, x.data(), y.data(), ind.data());
      ember::cpu::max_pool2d_backward(DType::Float64, s, gy.data(), ind.data(), gx.data());
    } else {
      ember::cpu::avg_pool2d_backward(DType::Float64, s, gy.data(), gx.data());
    }
    const double h = 1e-6;  // far below the gaps between the random values
    for (size_t i = 0; i < x.size(); ++i) {
      const double keep = x[i];
      x[i] = keep + h;
      const double up = loss();
      x[i] = keep - h;
      const double down = loss();
      x[i] = keep;
      num[i] = (up - down) / (2 * h);
    }
    CHECK(rel_err(gx, num) <= 1e-7);
  }
}

TEST_CASE("pool2d rejects other dtypes", "[kernels][pool2d]") {
  const Pool2dShape s = shape(1, 1, 2, 2, 2, 2, 2, 2);
  CHECK_THROWS_WITH(ember::cpu::max_pool2d_forward(DType::Int64, s, nullptr, nullptr, nullptr),
                    "max_pool2d_forward: no kernel for device cpu and dtype int64");
  CHECK_THROWS_AS(ember::cpu::avg_pool2d_backward(DType::BFloat16, s, nullptr, nullptr),
                  ember::NotImplementedError);
}
