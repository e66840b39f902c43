// The fused convolution + ReLU + 2x2 max-pool kernels (kernels/cpu/conv2d.h,
// conv2d_relu_pool_forward, _backward, _backward_input and _backward_weight) against the definitions in float64: a
// loop over every term of the convolution, ReLU, then PyTorch's max pooling (the
// first largest value of the window in row-major order, or the last NaN). Every
// instruction-set level, one thread and two, float32 and float64, the stride-1
// kernels and the im2col path, odd output sizes (a row and a column dropped),
// vector tails of every width, and NaN inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/isa.h"

#include "conv2d_reference.h"
#include "isa_guard.h"

namespace {

using ember::DType;
using ember::cpu::Conv2dShape;

Conv2dShape shape(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t k, int64_t stride = 1,
                  int64_t pad = 0, int64_t dil = 1, int64_t groups = 1) {
  Conv2dShape s;
  s.n = n, s.c_in = c_in, s.h = h, s.w = w, s.c_out = c_out, s.kh = k, s.kw = k;
  s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad, s.dil_h = s.dil_w = dil, s.groups = groups;
  return ember::cpu::conv2d_set_output_size(s);
}

// The convolution by its definition, [n][c_out][h_out][w_out] (conv2d_reference.h).
std::vector<double> conv_reference(const Conv2dShape& s, const std::vector<double>& x, const std::vector<double>& w,
                                   const std::vector<double>& b) {
  const std::vector<double> no_grad(size_t(s.n * s.c_out * s.h_out * s.w_out), 0.0);
  return conv2d_ref::reference(s, x, w, &b, no_grad).y;
}

double relu(double v) { return v > 0 || std::isnan(v) ? v : 0.0; }

template <class T>
void check(const Conv2dShape& s, bool with_nan, uint32_t seed) {
  const DType dt = sizeof(T) == 4 ? DType::Float32 : DType::Float64;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t cig = s.c_in / s.groups, ph = s.h_out / 2, pw = s.w_out / 2;
  std::vector<double> x(size_t(s.n * s.c_in * s.h * s.w)), w(size_t(s.c_out * cig * s.kh * s.kw)),
      b(size_t(s.c_out));
  for (auto* v : {&x, &w, &b})
    for (double& e : *v) e = T(u(gen));  // representable in T, so both sides start equal
  if (with_nan) x[x.size() / 3] = NAN, x[x.size() / 2] = NAN;
  const std::vector<double> conv = conv_reference(s, x, w, b);

  std::vector<T> xt(x.begin(), x.end()), wt(w.begin(), w.end()), bt(b.begin(), b.end());
  const size_t pooled = size_t(s.n * s.c_out * ph * pw), full = conv.size();
  std::vector<T> y(pooled, T(-7));
  std::vector<uint8_t> window(pooled, 9);
  ember::cpu::conv2d_relu_pool_forward(dt, s, xt.data(), wt.data(), bt.data(), y.data(), window.data());

  // Forward: each pooled value against relu(max) of its window in float64, and the
  // window byte: its position (bits 0-1) must hold the window's pre-ReLU maximum
  // (within the rounding of T's sums, which may reorder near-ties) or its last NaN,
  // bit 2 must say whether the pooled value is > 0, and no other bit is set.
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  int64_t bad_y = 0, bad_window = 0;
  for (int64_t p = 0; p < s.n * s.c_out; ++p)
    for (int64_t py = 0; py < ph; ++py)
      for (int64_t px = 0; px < pw; ++px) {
        const size_t o = size_t((p * ph + py) * pw + px);
        double v[4];
        for (int j = 0; j < 4; ++j) v[j] = conv[size_t((p * s.h_out + 2 * py + j / 2) * s.w_out + 2 * px + j % 2)];
        double m = relu(v[0]);
        int last_nan = std::isnan(v[0]) ? 0 : -1;
        for (int j = 1; j < 4; ++j) {
          if (relu(v[j]) > m || std::isnan(v[j])) m = relu(v[j]);
          if (std::isnan(v[j])) last_nan = j;
        }
        const double got = double(y[o]);
        if (std::isnan(m) ? !std::isnan(got) : !(std::abs(got - m) <= tol * std::max(1.0, std::abs(m)))) ++bad_y;
        const int k = window[o] & 3;
        if ((window[o] & ~7) || bool(window[o] & 4) != (y[o] > T(0))) {
          ++bad_window;
        } else if (last_nan >= 0) {
          bad_window += k != last_nan;
        } else {
          double pre_max = v[0];
          for (int j = 1; j < 4; ++j) pre_max = std::max(pre_max, v[j]);
          bad_window += !(v[k] >= pre_max - tol * std::max(1.0, std::abs(pre_max)));
        }
      }
  CHECK(bad_y == 0);
  CHECK(bad_window == 0);

  // Without a window (inference) the pooled values are the same.
  std::vector<T> y_only(pooled, T(-7));
  ember::cpu::conv2d_relu_pool_forward(dt, s, xt.data(), wt.data(), bt.data(), y_only.data(), nullptr);
  CHECK(std::memcmp(y_only.data(), y.data(), pooled * sizeof(T)) == 0);

  // Backward: the pooled gradient at the window's position where y > 0, zero
  // everywhere else, every element written; a -0 gradient arrives as +0, as the
  // three ops' max-pool backward (a zero plus the gradient) makes it.
  std::vector<T> gy(pooled);
  for (T& e : gy) e = T(u(gen));
  gy[0] = T(-0.0);
  std::vector<T> gconv(full, T(-7));
  ember::cpu::conv2d_relu_pool_backward(dt, s, gy.data(), window.data(), gconv.data());
  std::vector<T> want(full, T(0));
  for (int64_t p = 0; p < s.n * s.c_out; ++p)
    for (int64_t py = 0; py < ph; ++py)
      for (int64_t px = 0; px < pw; ++px) {
        const size_t o = size_t((p * ph + py) * pw + px);
        const int k = window[o] & 3;
        if (y[o] > T(0)) want[size_t((p * s.h_out + 2 * py + k / 2) * s.w_out + 2 * px + k % 2)] = gy[o] + T(0);
      }
  int64_t bad_grad = 0;
  for (size_t i = 0; i < full; ++i) bad_grad += std::memcmp(&gconv[i], &want[i], sizeof(T)) != 0;
  CHECK(bad_grad == 0);

  // The convolution's gradients read from the pooled gradient (the spread made
  // inside the kernels) have the bits of the convolution's own backward kernels
  // (test_conv2d.cpp checks those against float64) run on the spread gradient.
  const size_t xn = xt.size(), wn = wt.size(), bn = bt.size();
  std::vector<T> gx(xn, T(-7)), gx_want(xn, T(-5)), gw(wn, T(-7)), gw_want(wn, T(-5)), gb(bn, T(-7)),
      gb_want(bn, T(-5)), gw_only(wn, T(-3));
  ember::cpu::conv2d_backward_input(dt, s, gconv.data(), wt.data(), gx_want.data());
  ember::cpu::conv2d_backward_weight(dt, s, gconv.data(), xt.data(), gw_want.data(), gb_want.data());
  ember::cpu::conv2d_relu_pool_backward_input(dt, s, gy.data(), window.data(), wt.data(), gx.data());
  ember::cpu::conv2d_relu_pool_backward_weight(dt, s, gy.data(), window.data(), xt.data(), gw.data(), gb.data());
  ember::cpu::conv2d_relu_pool_backward_weight(dt, s, gy.data(), window.data(), xt.data(), gw_only.data(), nullptr);
  CHECK(std::memcmp(gx.data(), gx_want.data(), xn * sizeof(T)) == 0);
  CHECK(std::memcmp(gw.data(), gw_want.data(), wn * sizeof(T)) == 0);
  CHECK(std::memcmp(gb.data(), gb_want.data(), bn * sizeof(T)) == 0);
  CHECK(std::memcmp(gw_only.data(), gw_want.data(), wn * sizeof(T)) == 0);
}

struct Case {
  const char* name;
  Conv2dShape s;
};

std::vector<Case> cases() {
  return {
      {"net conv1, batch 1", shape(1, 1, 28, 28, 6, 5)},
      {"net conv2, batch 3", shape(3, 6, 12, 12, 12, 5)},
      {"net conv2, batch 100 (two weight-gradient ranges, a team of threads)", shape(100, 6, 12, 12, 12, 5)},
      {"odd output 7x9, padding 1 (a row and a column dropped)", shape(2, 2, 7, 9, 3, 3, 1, 1)},
      {"wide rows: 70 columns, every vector width in the tail", shape(1, 2, 5, 72, 2, 3)},
      {"dilation 2, groups 2", shape(2, 4, 11, 12, 4, 3, 1, 0, 2, 2)},
      {"stride 2 (im2col path), odd output", shape(3, 2, 15, 13, 5, 3, 2, 1)},
      {"2x2 output, one window", shape(1, 1, 3, 3, 1, 2)},
      {"3x3 images, batch 4 (a panel spans images)", shape(4, 1, 3, 3, 2, 2)},
      {"4x4 outputs (row pairs on AVX2), 13 channels", shape(2, 3, 6, 6, 13, 3)},
  };
}

// body(where) at every instruction-set level this CPU runs, on 1 and 2 threads;
// `where` names the setting for INFO.
template <class Body>
void at_every_level(Body&& body) {
  ember::testing::IsaGuard guard;
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    for (int threads : {1, 2}) {
      ember::set_num_threads(threads);
      body(std::string("level ") + level + ", " + std::to_string(threads) + " threads");
    }
  }
}

}  // namespace

TEST_CASE("conv2d_relu_pool kernels match conv, ReLU and max pooling at every level", "[kernels][conv2d]") {
  at_every_level([](const std::string& where) {
    for (const Case& c : cases())
      for (bool with_nan : {false, true}) {
        INFO(where << ", " << c.name << (with_nan ? ", NaN inputs" : ""));
        check<float>(c.s, with_nan, 7);
        check<double>(c.s, with_nan, 8);
      }
  });
}

TEST_CASE("conv2d_relu_pool with no input channels gives relu of the bias", "[kernels][conv2d]") {
  const Conv2dShape s = shape(2, 0, 6, 6, 3, 3);
  const float bias[3] = {0.5f, -1.0f, 2.0f};
  std::vector<float> y(2 * 3 * 2 * 2, -7.0f);
  std::vector<uint8_t> window(y.size());
  ember::cpu::conv2d_relu_pool_forward(DType::Float32, s, nullptr, nullptr, bias, y.data(), window.data());
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == std::max(0.0f, bias[i / 4 % 3]));
}

TEST_CASE("conv2d_relu_pool kernels refuse other dtypes", "[kernels][conv2d]") {
  const Conv2dShape s = shape(1, 1, 4, 4, 1, 3);
  std::vector<uint16_t> buf(64);
  std::vector<uint8_t> window(4);
  CHECK_THROWS_AS(ember::cpu::conv2d_relu_pool_forward(DType::Float16, s, buf.data(), buf.data(), nullptr,
                                                       buf.data(), window.data()),
                  ember::NotImplementedError);
  CHECK_THROWS_AS(ember::cpu::conv2d_relu_pool_backward_input(DType::Float16, s, buf.data(), window.data(),
                                                              buf.data(), buf.data()),
                  ember::NotImplementedError);
  CHECK_THROWS_WITH(ember::cpu::conv2d_relu_pool_backward_input(DType::Float16, s, buf.data(), window.data(),
                                                                buf.data(), buf.data()),
                    "conv2d_relu_pool_backward_input: no kernel for device cpu and dtype float16");
  // bfloat16 weight gradients exist only on the avx512_bf16 level's kernels.
  ember::testing::IsaGuard guard;
  REQUIRE(ember::cpu::set_isa("generic"));
  CHECK_THROWS_AS(ember::cpu::conv2d_relu_pool_backward_weight(DType::BFloat16, s, buf.data(), window.data(),
                                                               buf.data(), buf.data(), nullptr),
                  ember::NotImplementedError);
  CHECK_THROWS_WITH(ember::cpu::conv2d_relu_pool_backward_weight(DType::BFloat16, s, buf.data(), window.data(),
                                                                 buf.data(), buf.data(), nullptr),
                    "conv2d_relu_pool_backward_weight: no kernel for device cpu and dtype bfloat16");
  CHECK_THROWS_MATCHES(ember::cpu::conv2d_relu_pool_forward(DType::BFloat16, s, buf.data(), buf.data(), nullptr,
                                                            buf.data(), window.data()),
                       ember::NotImplementedError,
                       Catch::Matchers::Message("conv2d_relu_pool_forward: no kernel for device cpu and dtype bfloat16"));
  CHECK_THROWS_MATCHES(ember::cpu::conv2d_relu_pool_backward_input(DType::BFloat16, s, buf.data(), window.data(),
                                                                   buf.data(), buf.data()),
                       ember::NotImplementedError,
                       Catch::Matchers::Message(
                           "conv2d_relu_pool_backward_input: no kernel for device cpu and dtype bfloat16"));
}

namespace {

// The stride-1 kernel set of one instruction-set level, once set_isa accepted it.
const ember::cpu::conv2d_detail::DirectKernels* direct_set(const std::string& level) {
  using namespace ember::cpu::conv2d_detail;
  if (level == "avx512") return direct_kernels_avx512();
  return level == "avx2" ? direct_kernels_avx2() : direct_kernels_generic();
}

// NaN with a payload of its own, so that which NaN a window keeps shows in the bits.
template <class T>
T nan_with(uint32_t payload) {
  T v = std::numeric_limits<T>::quiet_NaN();
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    b |= payload & 0x3fffff;
    std::memcpy(&v, &b, 4);
  } else {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    b |= payload & 0x3fffff;
    std::memcpy(&v, &b, 8);
  }
  return v;
}

// The pooling epilogue without window bytes (inference: plain max while no NaN is
// seen, whole-vector steps that run past a row) against the same planes with them
// (the exact rule, position by position), bit for bit, on planes whose buffer ends
// at the last value read; y is followed by guard values that must stay.
template <class T>
void check_epilogue_planes(const ember::cpu::conv2d_detail::ReluPool<T>& rp, int64_t planes, int64_t h_out,
                           int64_t w_out, int64_t row_pad, std::mt19937& gen) {
  const int64_t row_stride = w_out + row_pad, plane_stride = h_out * row_stride + 3;
  const int64_t ph = h_out / 2, pw = w_out / 2, pooled = planes * ph * pw, guard = 64;
  std::vector<T> conv(size_t((planes - 1) * plane_stride + (h_out - 1) * row_stride + w_out));
  std::uniform_real_distribution<double> u(-1, 1);
  // NaNs where? none; a window's two values (the later payload must win); the very
  // last value read; the first; a padding column (read by no window).
  const size_t last_plane = size_t((planes - 1) * plane_stride);
  const std::vector<std::vector<size_t>> nan_spots = {
      {}, {last_plane + 1, last_plane + size_t(row_stride)}, {conv.size() - 1}, {0}, {size_t(row_pad > 0 ? w_out : 0)}};
  for (const auto& spots : nan_spots)
    for (bool negative : {false, true}) {
      for (T& e : conv) e = negative ? T(-0.0) * T(u(gen) > 0) - T(u(gen) > 0.5 ? 0 : 1) : T(u(gen));
      uint32_t payload = 1;
      for (size_t q : spots) conv[q] = nan_with<T>(payload++);
      std::vector<T> y_exact(size_t(pooled + guard), T(-5)), y_fast(size_t(pooled + guard), T(-5));
      std::vector<uint8_t> window(static_cast<size_t>(pooled));
      rp.forward_planes(conv.data(), planes, plane_stride, row_stride, h_out, w_out, y_exact.data(), window.data(),
                        false);
      rp.forward_planes(conv.data(), planes, plane_stride, row_stride, h_out, w_out, y_fast.data(), nullptr, false);
      INFO(planes << " planes of " << h_out << "x" << w_out << ", row stride " << row_stride << ", "
                  << spots.size() << " NaNs" << (negative ? ", values <= 0" : ""));
      CHECK(std::memcmp(y_fast.data(), y_exact.data(), y_exact.size() * sizeof(T)) == 0);
      CHECK(y_fast[size_t(pooled)] == T(-5));
    }
}

// v rounded to the nearest bfloat16 (8 significant bits, ties to even) through its
// exponent and std::nearbyint, independently of the kernels' integer rounding.
float bf16_reference(float v) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = 0;
  std::frexp(double(v), &e);                // |v| = m * 2^e, m in [0.5, 1)
  const int q = std::max(e - 8, -133);       // the spacing of bfloat16 values there (subnormals: 2^-133)
  return float(std::ldexp(std::nearbyint(std::ldexp(double(v), -q)), q));
}

// round_bf16: the pooled values and window bytes of the float32 convolution's
// outputs (conv2d_forward, whose sums the fused kernel shares) rounded to bfloat16
// first, exactly; returns how many windows had a tie only after rounding.
int64_t check_rounded(const Conv2dShape& s, bool with_nan, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> u(0, 1);
  const int64_t cig = s.c_in / s.groups, ph = s.h_out / 2, pw = s.w_out / 2;
  std::vector<float> x(size_t(s.n * s.c_in * s.h * s.w)), w(size_t(s.c_out * cig * s.kh * s.kw)), b(size_t(s.c_out));
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = u(gen);
  if (with_nan) x[x.size() / 3] = NAN;
  std::vector<float> conv(size_t(s.n * s.c_out * s.h_out * s.w_out));
  ember::cpu::conv2d_forward(DType::Float32, s, x.data(), w.data(), b.data(), conv.data());
  const size_t pooled = size_t(s.n * s.c_out * ph * pw);
  std::vector<float> y(pooled, -7.0f);
  std::vector<uint8_t> window(pooled, 9);
  ember::cpu::conv2d_relu_pool_forward(DType::Float32, s, x.data(), w.data(), b.data(), y.data(), window.data(),
                                       /*round_bf16=*/true);
  int64_t bad = 0, ties = 0;
  for (int64_t p = 0; p < s.n * s.c_out; ++p)
    for (int64_t py = 0; py < ph; ++py)
      for (int64_t px = 0; px < pw; ++px) {
        const size_t o = size_t((p * ph + py) * pw + px);
        float raw[4], v[4];
        for (int j = 0; j < 4; ++j) {
          raw[j] = conv[size_t((p * s.h_out + 2 * py + j / 2) * s.w_out + 2 * px + j % 2)];
          v[j] = bf16_reference(raw[j]);
        }
        float m = v[0];
        int k = 0;
        for (int j = 1; j < 4; ++j)
          if (v[j] > m || std::isnan(v[j])) m = v[j], k = j;
        for (int j = 0; j < 4; ++j) ties += j != k && v[j] == m && raw[j] != raw[k];
        const float want = m > 0 || std::isnan(m) ? m : 0.0f;
        const uint8_t want_window = uint8_t(k | (m > 0 ? 4 : 0));
        bad += std::memcmp(&y[o], &want, sizeof(float)) != 0 || window[o] != want_window;
      }
  CHECK(bad == 0);
  return ties;
}

}  // namespace

TEST_CASE("conv2d_relu_pool's epilogue without window bytes keeps the exact rule's bits", "[kernels][conv2d]") {
  ember::testing::IsaGuard guard;
  std::mt19937 gen(11);
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const auto* set = direct_set(level);
    REQUIRE(set != nullptr);
    INFO("level " << level);
    // Rows of 1 to 35 pooled values (every step width and last-step lane count),
    // with and without padding columns, one plane or several, h_out odd and even.
    for (int64_t w_out : {2, 3, 4, 8, 9, 16, 24, 33, 70})
      for (int64_t h_out : {2, 5, 8})
        for (int64_t row_pad : {0, 4})
          for (int64_t planes : {1, 3}) {
            check_epilogue_planes<float>(set->relu_pool_f32, planes, h_out, w_out, row_pad, gen);
            check_epilogue_planes<double>(set->relu_pool_f64, planes, h_out, w_out, row_pad, gen);
          }
  }
}

TEST_CASE("conv2d_relu_pool rounds to bfloat16 before ReLU and pooling when asked", "[kernels][conv2d]") {
  at_every_level([](const std::string& where) {
    int64_t ties = 0;
    for (const Case& c : cases())
      for (bool with_nan : {false, true}) {
        INFO(where << ", " << c.name << (with_nan ? ", NaN inputs" : ""));
        ties += check_rounded(c.s, with_nan, 9);
      }
    ties += check_rounded(shape(8, 1, 28, 28, 6, 5), false, 10);  // many windows: ties made by the rounding
    INFO(where);
    CHECK(ties > 0);
  });
  std::vector<double> buf(64);
  std::vector<uint8_t> window(4);
  CHECK_THROWS_MATCHES(ember::cpu::conv2d_relu_pool_forward(DType::Float64, shape(1, 1, 4, 4, 1, 3), buf.data(),
                                                            buf.data(), nullptr, buf.data(), window.data(), true),
                       ember::ValueError,
                       Catch::Matchers::Message("conv2d_relu_pool_forward: round_bf16 needs float32 values, got float64"));
}

namespace {

// The bfloat16 weight gradient of the fused block (conv2d_direct_bf16.cpp, vdpbf16ps)
// against float64 sums of the same bfloat16 values: within the rounding of the
// result to bfloat16 (2^-8 relative) plus float32 summation (1e-5 of the sum of
// |terms|), the bias too; the same bits on 1 and 2 threads. The output gradient comes
// from conv2d_relu_pool_backward on float32 (checked above).
void check_bf16_weight_grad(const Conv2dShape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> u(0, 1);
  const int64_t cig = s.c_in / s.groups, cog = s.c_out / s.groups, ph = s.h_out / 2, pw = s.w_out / 2;
  const int64_t K = cig * s.kh * s.kw;
  std::vector<float> x(size_t(s.n * s.c_in * s.h * s.w)), w(size_t(s.c_out * K)), b(size_t(s.c_out));
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = bf16_reference(u(gen));
  const size_t pooled = size_t(s.n * s.c_out * ph * pw);
  std::vector<float> y(pooled), gy(pooled), gconv(size_t(s.n * s.c_out * s.h_out * s.w_out));
  std::vector<uint8_t> window(pooled);
  ember::cpu::conv2d_relu_pool_forward(DType::Float32, s, x.data(), w.data(), b.data(), y.data(), window.data(), true);
  for (float& e : gy) e = bf16_reference(u(gen));
  ember::cpu::conv2d_relu_pool_backward(DType::Float32, s, gy.data(), window.data(), gconv.data());
  auto to16 = [](const std::vector<float>& v) {
    std::vector<ember::BFloat16> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = ember::BFloat16(v[i]);
    return r;
  };
  const auto x16 = to16(x), gy16 = to16(gy);
  std::vector<ember::BFloat16> gw(w.size(), ember::BFloat16(-7.f)), gb(b.size(), ember::BFloat16(-7.f));
  std::vector<ember::BFloat16> gw2(w.size(), ember::BFloat16(-5.f)), gb2(b.size(), ember::BFloat16(-5.f));
  ember::set_num_threads(1);
  ember::cpu::conv2d_relu_pool_backward_weight(DType::BFloat16, s, gy16.data(), window.data(), x16.data(), gw.data(),
                                               gb.data());
  ember::set_num_threads(2);
  ember::cpu::conv2d_relu_pool_backward_weight(DType::BFloat16, s, gy16.data(), window.data(), x16.data(), gw2.data(),
                                               gb2.data());
  CHECK(std::memcmp(gw.data(), gw2.data(), gw.size() * 2) == 0);
  CHECK(std::memcmp(gb.data(), gb2.data(), gb.size() * 2) == 0);
  // float64 references and the sums of |terms| that bound float32's rounding.
  std::vector<double> ref(w.size()), mag(w.size()), bref(b.size()), bmag(b.size());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t co = 0; co < s.c_out; ++co)
      for (int64_t oy = 0; oy < s.h_out; ++oy)
        for (int64_t ox = 0; ox < s.w_out; ++ox) {
          const double g = gconv[size_t(((n * s.c_out + co) * s.h_out + oy) * s.w_out + ox)];
          bref[size_t(co)] += g, bmag[size_t(co)] += std::abs(g);
          for (int64_t cl = 0; cl < cig; ++cl)
            for (int64_t ky = 0; ky < s.kh; ++ky)
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                const int64_t iy = oy - s.pad_h + ky * s.dil_h, ix = ox - s.pad_w + kx * s.dil_w;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                const int64_t ci = co / cog * cig + cl;
                const double t = g * x[size_t(((n * s.c_in + ci) * s.h + iy) * s.w + ix)];
                const size_t j = size_t(co * K + (cl * s.kh + ky) * s.kw + kx);
                ref[j] += t, mag[j] += std::abs(t);
              }
        }
  int64_t bad = 0;
  for (size_t j = 0; j < ref.size(); ++j)
    bad += !(std::abs(double(float(gw[j])) - ref[j]) <= std::ldexp(std::abs(ref[j]), -8) + 1e-5 * mag[j]);
  for (size_t j = 0; j < bref.size(); ++j)
    bad += !(std::abs(double(float(gb[j])) - bref[j]) <= std::ldexp(std::abs(bref[j]), -8) + 1e-5 * bmag[j]);
  CHECK(bad == 0);
  // Without the bias the weight gradient is the same.
  std::vector<ember::BFloat16> gw_only(w.size());
  ember::cpu::conv2d_relu_pool_backward_weight(DType::BFloat16, s, gy16.data(), window.data(), x16.data(),
                                               gw_only.data(), nullptr);
  CHECK(std::memcmp(gw_only.data(), gw.data(), gw.size() * 2) == 0);
}

}  // namespace

TEST_CASE("conv2d_relu_pool bfloat16 weight gradient on vdpbf16ps matches float64", "[kernels][conv2d]") {
  ember::testing::IsaGuard guard;
  if (!ember::cpu::set_isa("avx512_bf16")) {
    WARN("this CPU has no avx512_bf16: the bfloat16 direct kernels are not run");
    CHECK_FALSE(ember::cpu::conv2d_bf16_direct(shape(1, 1, 28, 28, 6, 5)));
    return;
  }
  CHECK_FALSE(ember::cpu::conv2d_bf16_direct(shape(3, 2, 15, 13, 5, 3, 2, 1)));  // stride 2: im2col only
  for (const Case& c : cases()) {
    if (!ember::cpu::conv2d_bf16_direct(c.s)) continue;
    INFO(c.name);
    check_bf16_weight_grad(c.s, 11);
  }
  INFO("net conv1, batch 100");
  check_bf16_weight_grad(shape(100, 1, 28, 28, 6, 5), 12);
}
