// The CUDA direct convolution's arithmetic (kernels/cuda/conv2d_direct_math.h), run
// on the CPU: every thread of each grid is simulated in turn and the results are
// compared with the definition (conv2d_reference.h). This checks the index math
// (groups, stride, padding, dilation, the weight gradient's rows, parts and
// position walk, kernel rows wider than one thread's taps) on machines without a
// GPU; the GPU run of the same kernels is in tests/cuda/test_gemm_conv.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cuda/conv2d_direct_math.h"

#include "conv2d_reference.h"
#include "support/kernel_compare.h"

using test_support::random_values;
using test_support::rel_err;

namespace {

namespace direct = ember::cuda::direct;
using conv2d_ref::shape;
using ember::Conv2dShape;

struct Identity {
  template <class T>
  T operator()(T v) const { return v; }
};

std::vector<conv2d_ref::Case> all_cases() {
  std::vector<conv2d_ref::Case> c = conv2d_ref::cases();
  // Kernel rows wider than kRowTaps (two and three chunks of taps), a 1-wide image,
  // and the seed network's layers at a batch whose positions need many parts.
  c.push_back({"1x11 kernel, pad 5", shape(2, 3, 4, 13, 2, 1, 11, 1, 1, 0, 5), true});
  c.push_back({"2x17 kernel, stride 2, dilation 1x2, groups 2", shape(2, 4, 5, 40, 4, 2, 17, 1, 2, 1, 3, 1, 2, 2), true});
  c.push_back({"width 1", shape(3, 2, 6, 1, 3, 3, 1, 1, 1, 1, 0), true});
  c.push_back({"net conv1, batch 20", shape(20, 1, 28, 28, 6, 5, 5), true});
  return c;
}

// The forward and input-gradient grids: thread i of each computes element i.
template <class T, int KH, int KW>
void check_forward_and_input(const conv2d_ref::Case& c, double tol) {
  const Conv2dShape& s = c.s;
  std::mt19937 g(99);
  const conv2d_ref::Sizes z = conv2d_ref::sizes(s);
  const auto x = random_values(z.x, g), w = random_values(z.w, g), b = random_values(s.c_out, g),
             gy = random_values(z.y, g);
  const conv2d_ref::Reference r = conv2d_ref::reference(s, x, w, c.bias ? &b : nullptr, gy);
  const std::vector<T> tx(x.begin(), x.end()), tw(w.begin(), w.end()), tgy(gy.begin(), gy.end());
  std::vector<T> y(z.y), gx(z.x);
  const int64_t P = s.h_out * s.w_out;
  for (int64_t i = 0; i < z.y; ++i)
    y[i] = direct::forward_at<T, KH, KW>(s, i, tx.data(), tw.data(), Identity{}) + (c.bias ? T(b[i / P % s.c_out]) : T(0));
  for (int64_t i = 0; i < z.x; ++i)
    gx[i] = direct::input_grad_at<T, KH, KW>(s, i, tgy.data(), tw.data(), Identity{});
  INFO(c.name << ", extents " << KH << "x" << KW);
  CHECK(rel_err(y, r.y) <= tol);
  CHECK(rel_err(gx, r.gx) <= tol);
}

// The weight-gradient grids: stage 1's rows * parts threads fill the workspace (every
// entry must be written: it starts as NaN), stage 2 sums each slot's 32 lane shares
// (the GPU adds them by a shuffle tree, here in order: only the rounding differs).
template <class T>
void check_weight(const conv2d_ref::Case& c, int64_t threads_wanted, double tol) {
  const Conv2dShape& s = c.s;
  std::mt19937 g(7);
  const conv2d_ref::Sizes z = conv2d_ref::sizes(s);
  const auto x = random_values(z.x, g), w = random_values(z.w, g), gy = random_values(z.y, g);
  const conv2d_ref::Reference r = conv2d_ref::reference(s, x, w, nullptr, gy);
  const std::vector<T> tx(x.begin(), x.end()), tgy(gy.begin(), gy.end());
  std::vector<T> first_gw;
  for (bool bias : {true, false}) {
    const direct::WeightGradPlan pl = direct::weight_grad_plan(s, bias, threads_wanted);
    INFO(c.name << ", threads wanted " << threads_wanted << ", bias " << bias << ": rows " << pl.rows
                << ", parts " << pl.parts);
    REQUIRE(pl.taps == z.w);
    REQUIRE(pl.slots == z.w + (bias ? s.c_out : 0));
    REQUIRE(pl.parts >= 1);
    CHECK(pl.parts <= std::max<int64_t>(1, pl.positions / direct::kMinTerms));
    std::vector<T> ws(size_t(pl.slots * pl.parts), std::numeric_limits<T>::quiet_NaN());
    for (int64_t t = 0; t < pl.rows * pl.parts; ++t)
      direct::weight_grad_partial<T>(s, pl, t, tgy.data(), tx.data(), ws.data(), Identity{});
    int64_t unwritten = 0;
    for (T v : ws) unwritten += std::isnan(v);
    CHECK(unwritten == 0);
    std::vector<T> gw(size_t(pl.taps)), gb(size_t(s.c_out));
    for (int64_t slot = 0; slot < pl.slots; ++slot) {
      T sum = 0;
      for (int lane = 0; lane < 32; ++lane) sum += direct::weight_grad_lane_sum(pl, slot, lane, 32, ws.data());
      (slot < pl.taps ? gw[slot] : gb[slot - pl.taps]) = sum;
    }
    CHECK(rel_err(gw, r.gw) <= tol);
    if (bias) CHECK(rel_err(gb, r.gb) <= tol);
    // grad_w has the same bits whether or not grad_b is asked for.
    if (bias) first_gw = gw;
    else CHECK(gw == first_gw);
  }
}

}  // namespace

TEST_CASE("cuda direct conv2d arithmetic: forward and input gradient match the definition",
          "[kernels][conv2d][direct]") {
  for (const conv2d_ref::Case& c : all_cases()) {
    check_forward_and_input<double, 0, 0>(c, 1e-12);
    check_forward_and_input<float, 0, 0>(c, 1e-5);
    // The kernels compile these extents in; the same shapes must give the same sums.
    if (c.s.kh == 5 && c.s.kw == 5) check_forward_and_input<double, 5, 5>(c, 1e-12);
    if (c.s.kh == 3 && c.s.kw == 3) check_forward_and_input<double, 3, 3>(c, 1e-12);
  }
}

TEST_CASE("cuda direct conv2d arithmetic: the weight gradient in parts matches the definition",
          "[kernels][conv2d][direct]") {
  // 1 thread wanted: one part per row; 7 and 1000: uneven splits; 2^21: as many
  // parts as kMinTerms allows (the GPU's two waves are about 540,000 threads).
  for (const conv2d_ref::Case& c : all_cases())
    for (int64_t threads : {int64_t(1), int64_t(7), int64_t(1000), int64_t(1) << 21}) {
      check_weight<double>(c, threads, 1e-12);
      check_weight<float>(c, threads, 1e-5);
    }
}

TEST_CASE("cuda direct conv2d arithmetic: the position walk matches division", "[kernels][conv2d][direct]") {
  std::mt19937 g(3);
  for (const Conv2dShape& s : {shape(5, 1, 9, 7, 1, 3, 3), shape(4, 1, 6, 1, 1, 1, 1), shape(3, 1, 2, 2, 1, 2, 2),
                               shape(7, 1, 28, 28, 1, 5, 5)}) {
    const int64_t P = s.h_out * s.w_out, positions = s.n * P;
    for (int64_t step : {int64_t(1), int64_t(2), s.w_out, s.w_out + 1, P - 1, P, P + 1, 2 * P + s.w_out + 1,
                         positions}) {
      if (step <= 0) continue;
      std::uniform_int_distribution<int64_t> start_of(0, std::max<int64_t>(0, std::min(step, positions) - 1));
      const int64_t start = start_of(g);
      direct::PositionWalk at(s, start, step);
      for (int64_t j = start; j < positions; j += step, at.advance(s)) {
        INFO("h_out " << s.h_out << " w_out " << s.w_out << " step " << step << " position " << j);
        REQUIRE(at.b == j / P);
        REQUIRE(at.oy == j % P / s.w_out);
        REQUIRE(at.ox == j % s.w_out);
      }
    }
  }
}

TEST_CASE("cuda direct conv2d: which shapes it suits", "[kernels][conv2d][direct]") {
  CHECK(direct::suits(shape(1000, 1, 28, 28, 6, 5, 5)));     // the seed network's conv1
  CHECK(direct::suits(shape(1000, 6, 12, 12, 12, 5, 5)));    // and conv2
  CHECK(direct::suits(shape(8, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32)));  // depthwise
  CHECK_FALSE(direct::suits(shape(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)));     // GEMM-sized
  CHECK_FALSE(direct::suits(shape(1, 1, 4, 4, 17, 3, 3)));
}
