// The CPU conv2d kernels (kernels/cpu/conv2d.h) against the definition: a float64
// loop over every (output, input channel, kernel tap) term gives y, and the same
// terms read the other way give grad_x (each input collects from the outputs it
// reaches), grad_w (grad_y correlated with x) and grad_b. Shapes cover stride,
// padding, dilation, groups, non-square kernels and inputs, 1x1 kernels, single
// images and batches (one thread and the team), and the FashionMNIST net's layers;
// the gradients are also checked against central differences, and the weight
// gradient must have the same bits whatever the thread count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/base/half.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"

#include "conv2d_reference.h"
#include "isa_guard.h"
#include "support/kernel_compare.h"

using test_support::random_values;
using test_support::rel_err;

namespace {

using ember::DType;
using ember::cpu::Conv2dShape;
using conv2d_ref::Case;
using conv2d_ref::cases;
using conv2d_ref::reference;
using conv2d_ref::Reference;
using conv2d_ref::shape;
using conv2d_ref::sizes;
using conv2d_ref::Sizes;

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
void check_against_reference(const Case& c, double tol) {
  const Conv2dShape& s = c.s;
  std::mt19937 g(1234);
  const Sizes z = sizes(s);
  const auto x = random_values(z.x, g), w = random_values(z.w, g), b = random_values(s.c_out, g),
             gy = random_values(z.y, g);
  const Reference r = reference(s, x, w, c.bias ? &b : nullptr, gy);
  const DType dt = ember::dtype_of_v<T>;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  // Outputs start as NaN: every element must be overwritten, none read.
  const auto tx = as<T>(x), tw = as<T>(w), tb = as<T>(b), tgy = as<T>(gy);
  std::vector<T> y(z.y, nan), gx(z.x, nan), gw(z.w, nan), gb(s.c_out, nan);
  ember::cpu::conv2d_forward(dt, s, tx.data(), tw.data(), c.bias ? tb.data() : nullptr, y.data());
  ember::cpu::conv2d_backward_input(dt, s, tgy.data(), tw.data(), gx.data());
  ember::cpu::conv2d_backward_weight(dt, s, tgy.data(), tx.data(), gw.data(), gb.data());
  INFO(c.name << " (" << ember::dtype_name(dt) << ")");
  CHECK(rel_err(y, r.y) <= tol);
  CHECK(rel_err(gx, r.gx) <= tol);
  CHECK(rel_err(gw, r.gw) <= tol);
  CHECK(rel_err(gb, r.gb) <= tol);
  // Without a bias gradient the weight gradient is unchanged.
  std::vector<T> gw2(z.w, nan);
  ember::cpu::conv2d_backward_weight(dt, s, tgy.data(), tx.data(), gw2.data(), nullptr);
  CHECK(rel_err(gw2, r.gw) <= tol);
}

// Runs f once for every instruction set this CPU can run the stride-1 kernels
// with, then goes back to the automatic choice.
template <class F>
void for_each_isa(F&& f) {
  struct Restore {
    ~Restore() { ember::cpu::set_isa("auto"); }
  } restore;
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!ember::cpu::set_isa(isa)) continue;
    INFO("kernels: " << isa);
    f();
  }
}

// The direct kernels' table that set_isa(isa) makes conv2d use.
const ember::cpu::conv2d_detail::DirectKernels* direct_set(const std::string& isa) {
  using namespace ember::cpu::conv2d_detail;
  if (isa == "avx512") return direct_kernels_avx512();
  if (isa == "avx2") return direct_kernels_avx2();
  return direct_kernels_generic();
}

}  // namespace

TEST_CASE("conv2d float64 matches the direct definition", "[kernels][conv2d]") {
  for_each_isa([] {
    for (const Case& c : cases()) check_against_reference<double>(c, 1e-10);
  });
}

TEST_CASE("conv2d float32 matches the direct definition", "[kernels][conv2d]") {
  for_each_isa([] {
    for (const Case& c : cases()) check_against_reference<float>(c, 1e-4);
  });
}

TEST_CASE("conv2d gradients match central differences", "[kernels][conv2d]") {
  // L = sum(gy * conv(x, w, b)); dL/dx, dL/dw, dL/db by central differences.
  for (const Conv2dShape& s : {shape(2, 4, 4, 5, 2, 2, 3, 1, 2, 1, 1, 1, 2, 2),
                               shape(1, 2, 5, 4, 3, 3, 2, 2, 1, 2, 0, 1, 1, 1)}) {
    std::mt19937 g(7);
    const Sizes z = sizes(s);
    auto x = random_values(z.x, g), w = random_values(z.w, g), b = random_values(s.c_out, g);
    const auto gy = random_values(z.y, g);
    auto loss = [&] {
      std::vector<double> y(z.y);
      ember::cpu::conv2d_forward(DType::Float64, s, x.data(), w.data(), b.data(), y.data());
      double l = 0;
      for (int64_t i = 0; i < z.y; ++i) l += gy[i] * y[i];
      return l;
    };
    auto numeric = [&](std::vector<double>& v) {
      const double h = 1e-6;
      std::vector<double> d(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + h;
        const double up = loss();
        v[i] = keep - h;
        const double down = loss();
        v[i] = keep;
        d[i] = (up - down) / (2 * h);
      }
      return d;
    };
    std::vector<double> gx(z.x), gw(z.w), gb(s.c_out);
    ember::cpu::conv2d_backward_input(DType::Float64, s, gy.data(), w.data(), gx.data());
    ember::cpu::conv2d_backward_weight(DType::Float64, s, gy.data(), x.data(), gw.data(),
                                       gb.data());
    CHECK(rel_err(gx, numeric(x)) <= 1e-7);
    CHECK(rel_err(gw, numeric(w)) <= 1e-7);
    CHECK(rel_err(gb, numeric(b)) <= 1e-7);
  }
}

TEST_CASE("conv2d repeated calls reuse scratch and give the same result", "[kernels][conv2d]") {
  // A large call then a small one then the large one again: the grow-only scratch
  // must not leak state between calls.
  const Conv2dShape big = shape(4, 6, 12, 12, 12, 5, 5), small = shape(2, 1, 6, 6, 2, 3, 3);
  std::mt19937 g(3);
  const auto xb = as<float>(random_values(sizes(big).x, g));
  const auto wb = as<float>(random_values(sizes(big).w, g));
  const auto xs = as<float>(random_values(sizes(small).x, g));
  const auto ws = as<float>(random_values(sizes(small).w, g));
  std::vector<float> y1(sizes(big).y), y2(sizes(big).y), ys(sizes(small).y);
  ember::cpu::conv2d_forward(DType::Float32, big, xb.data(), wb.data(), nullptr, y1.data());
  ember::cpu::conv2d_forward(DType::Float32, small, xs.data(), ws.data(), nullptr, ys.data());
  ember::cpu::conv2d_forward(DType::Float32, big, xb.data(), wb.data(), nullptr, y2.data());
  CHECK(y1 == y2);
}

TEST_CASE("conv2d weight gradient has the same bits on any number of threads", "[kernels][conv2d]") {
  // The batch is cut into ranges fixed by the shape, so a seeded training run does
  // not depend on --threads. Batches of one range, two, and the most (16); both paths.
  struct Restore {
    int threads = ember::get_num_threads();
    ~Restore() { ember::set_num_threads(threads); }
  } restore;
  const Conv2dShape shapes[] = {shape(100, 1, 28, 28, 6, 5, 5), shape(100, 6, 12, 12, 12, 5, 5),
                                shape(16, 6, 12, 12, 12, 5, 5), shape(7, 6, 12, 12, 12, 5, 5),
                                shape(850, 6, 12, 12, 12, 5, 5),
                                shape(40, 3, 17, 17, 8, 3, 3, 2, 2, 1, 1)};
  for (const Conv2dShape& s : shapes) {
    std::mt19937 g(7);
    const Sizes z = sizes(s);
    const auto x = as<float>(random_values(z.x, g)), gy = as<float>(random_values(z.y, g));
    std::vector<float> gw1(z.w), gb1(s.c_out);
    ember::set_num_threads(1);
    ember::cpu::conv2d_backward_weight(DType::Float32, s, gy.data(), x.data(), gw1.data(), gb1.data());
    for (int threads : {2, 3, 5}) {
      INFO("batch " << s.n << ", c_in " << s.c_in << ", stride " << s.stride_h << ", threads " << threads);
      ember::set_num_threads(threads);
      std::vector<float> gw(z.w), gb(s.c_out);
      ember::cpu::conv2d_backward_weight(DType::Float32, s, gy.data(), x.data(), gw.data(), gb.data());
      CHECK(gw == gw1);
      CHECK(gb == gb1);
    }
  }
}

TEST_CASE("conv2d forward and input gradient keep their bits however the team's ranges are sized",
          "[kernels][conv2d]") {
  // The image ranges follow each thread's measured rate (team_rates.h); each output
  // comes from one image, so a skewed split must give the one-thread bits: the
  // plain and fused (ReLU + 2x2 max pool: values and window bytes) forward and input
  // gradient in float32, and in bfloat16 where the stride-1 bfloat16 kernels run.
  struct Restore {
    int threads = ember::get_num_threads();
    ~Restore() {
      ember::set_num_threads(threads);
      ember::cpu::conv2d_detail::conv2d_team_rates().reset();
    }
  } restore;
  ember::cpu::TeamRates& rates = ember::cpu::conv2d_detail::conv2d_team_rates();
  for (const Conv2dShape& s : {shape(100, 1, 28, 28, 6, 5, 5), shape(37, 6, 12, 12, 12, 5, 5),
                               shape(40, 3, 17, 17, 8, 3, 3, 2, 2, 1, 1)}) {
    std::mt19937 g(11);
    const Sizes z = sizes(s);
    const int64_t pooled = s.n * s.c_out * (s.h_out / 2) * (s.w_out / 2);
    const auto x = as<float>(random_values(z.x, g)), w = as<float>(random_values(z.w, g));
    const auto gy = as<float>(random_values(z.y, g)), gp = as<float>(random_values(pooled, g));
    std::vector<ember::BFloat16> xh(x.begin(), x.end()), wh(w.begin(), w.end()), gph(gp.begin(), gp.end());
    const bool bf16 = ember::cpu::conv2d_bf16_direct(s);
    // Every output, as bytes.
    const auto outputs = [&] {
      std::vector<float> y(z.y), gx(z.x), yp(pooled), gxp(z.x);
      std::vector<uint8_t> win(pooled), winh(pooled);
      std::vector<ember::BFloat16> yh(pooled), gxh(z.x);
      ember::cpu::conv2d_forward(DType::Float32, s, x.data(), w.data(), nullptr, y.data());
      ember::cpu::conv2d_backward_input(DType::Float32, s, gy.data(), w.data(), gx.data());
      ember::cpu::conv2d_relu_pool_forward(DType::Float32, s, x.data(), w.data(), nullptr, yp.data(), win.data());
      ember::cpu::conv2d_relu_pool_backward_input(DType::Float32, s, gp.data(), win.data(), w.data(), gxp.data());
      if (bf16) {
        ember::cpu::conv2d_relu_pool_forward(DType::BFloat16, s, xh.data(), wh.data(), nullptr, yh.data(), winh.data());
        ember::cpu::conv2d_relu_pool_backward_input(DType::BFloat16, s, gph.data(), winh.data(), wh.data(), gxh.data());
      }
      const auto bytes = [](const auto& v) {
        const auto* p = reinterpret_cast<const uint8_t*>(v.data());
        return std::vector<uint8_t>(p, p + v.size() * sizeof(v[0]));
      };
      return std::vector<std::vector<uint8_t>>{bytes(y),   bytes(gx),  bytes(yp), bytes(win), bytes(gxp),
                                               bytes(yh),  bytes(winh), bytes(gxh)};
    };
    ember::set_num_threads(1);
    const auto one = outputs();
    // Thread 0 measured 3x slower than thread 1 (ranges of about 1/4 and 3/4 of the
    // batch), then the reverse, then the rates real calls measure.
    for (const int slow : {0, 1, -1}) {
      rates.reset();
      const int64_t items[2] = {20, 20}, ns[2] = {slow == 0 ? 300 : 100, slow == 0 ? 100 : 300};
      if (slow >= 0) {
        for (int i = 0; i < 20; ++i) rates.update(2, items, ns);
        CHECK(rates.rate(slow) < 0.6f);
        CHECK(rates.rate(1 - slow) > 1.4f);
      }
      ember::set_num_threads(2);
      INFO("batch " << s.n << ", stride " << s.stride_h << ", bfloat16 " << bf16 << ", slow thread " << slow);
      const auto two = outputs();
      for (size_t k = 0; k < one.size(); ++k) {
        INFO("output " << k);
        CHECK(two[k] == one[k]);
      }
    }
  }
}

TEST_CASE("conv2d forward of one image has the same bits on one thread and on a team sharing its channels",
          "[kernels][conv2d]") {
  // Each output channel's sums are one thread's, in the kernel's own order, however
  // the channels are shared: 40 channels, 20 per thread on two, 12/12/16 on three.
  struct Restore {
    int threads = ember::get_num_threads();
    ~Restore() { ember::set_num_threads(threads); }
  } restore;
  const Conv2dShape s = shape(1, 8, 24, 24, 40, 3, 3, 1, 1, 1, 1);
  std::mt19937 g(5);
  const Sizes z = sizes(s);
  const auto x = as<float>(random_values(z.x, g)), w = as<float>(random_values(z.w, g)),
             b = as<float>(random_values(s.c_out, g));
  const auto xd = random_values(z.x, g), wd = random_values(z.w, g), bd = random_values(s.c_out, g);
  const auto run = [&] {
    std::vector<float> y(z.y);
    std::vector<double> yd(z.y);
    ember::cpu::conv2d_forward(DType::Float32, s, x.data(), w.data(), b.data(), y.data());
    ember::cpu::conv2d_forward(DType::Float64, s, xd.data(), wd.data(), bd.data(), yd.data());
    return std::make_pair(y, yd);
  };
  ember::set_num_threads(1);
  const auto one = run();
  for (int threads : {2, 3}) {
    ember::set_num_threads(threads);
    INFO("threads " << threads);
    const auto team = run();
    CHECK(team.first == one.first);
    CHECK(team.second == one.second);
  }
}

// The float32 forward of a batch run one image at a time on one thread: the grid
// tiles, which the lane tiles' results are compared with bit for bit.
std::vector<float> one_image_at_a_time(const Conv2dShape& batch, const std::vector<float>& x, const float* w,
                                       const float* b, bool relu) {
  Conv2dShape one = batch;
  one.n = 1;
  const Sizes z1 = sizes(one);
  std::vector<float> y(sizes(batch).y, std::numeric_limits<float>::quiet_NaN());
  const int threads = ember::get_num_threads();
  ember::set_num_threads(1);
  for (int64_t i = 0; i < batch.n; ++i)
    ember::cpu::conv2d_forward(DType::Float32, one, x.data() + i * z1.x, w, b, y.data() + i * z1.y, relu);
  ember::set_num_threads(threads);
  return y;
}

// Entries of a and b whose bits differ.
int64_t bit_differences(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t differ = 0;
  for (size_t k = 0; k < a.size(); ++k) differ += std::bit_cast<uint32_t>(a[k]) != std::bit_cast<uint32_t>(b[k]);
  return differ;
}

int64_t nan_count(const std::vector<float>& a) {
  return std::count_if(a.begin(), a.end(), [](float v) { return std::isnan(v); });
}

TEST_CASE("conv2d forward with channels in the lanes has the grid tiles' bits", "[kernels][conv2d]") {
  // A batch of 1024 output positions or more takes the channel-lane tiles where the
  // shape suits them; one image at a time takes the grid tiles. Each output's sum
  // runs in the same order on both, so the bits agree, ReLU's included. NaNs (with
  // their own payloads) and zeros in x reach some outputs. (Where one product has a
  // NaN in both x and the weight, which payload survives depends on the operand
  // order each tile's multiply-add happens to get: not compared.)
  for (const Conv2dShape& batch : {shape(12, 8, 14, 14, 32, 3, 3, 1, 1, 1, 1),
                                   shape(16, 16, 13, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2)}) {
    Conv2dShape one = batch;
    one.n = 1;
    std::mt19937 g(9);
    const Sizes z = sizes(batch), z1 = sizes(one);
    auto x = as<float>(random_values(z.x, g));
    const auto w = as<float>(random_values(z.w, g)), b = as<float>(random_values(batch.c_out, g));
    for (size_t i = 0; i < x.size(); i += 997) x[i] = std::bit_cast<float>(0x7fc00000u | uint32_t(i));
    std::fill(x.begin() + 3 * z1.x, x.begin() + 4 * z1.x, 0.0f);  // image 3: bias only (and ReLU of it)
    for_each_isa([&] {
      CHECK(direct_set(ember::cpu::isa_name(ember::cpu::active_isa()))->f32.lane_fits(batch, ember::Conv2dDims(batch)));
      for (bool relu : {false, true}) {
        INFO("channels " << batch.c_out << ", groups " << batch.groups << ", relu " << relu);
        std::vector<float> lanes(z.y);
        ember::cpu::conv2d_forward(DType::Float32, batch, x.data(), w.data(), b.data(), lanes.data(), relu);
        const std::vector<float> grid = one_image_at_a_time(batch, x, w.data(), b.data(), relu);
        CHECK(bit_differences(lanes, grid) == 0);
        CHECK(nan_count(grid) > 0);
      }
    });
  }
}

TEST_CASE("conv2d lane tiles: every run length, -0 through ReLU, no bias", "[kernels][conv2d]") {
  // Rows 3 to 13 wide (one run of each length the levels take), 20, 24 and 25 (cut
  // into runs: 10 + 10, 12 + 12, 8 + 8 + 9 on AVX-512), one and two groups of 64
  // channels (two channel tiles a group on AVX-512): the batch (lane tiles) against
  // one image at a time (grid tiles), bit for bit. Image 0 is all +0 and channel 5
  // has negative weights and a bias of -0, so its outputs there are exactly -0, and
  // +0 after ReLU.
  for_each_isa([] {
    const std::string isa = ember::cpu::isa_name(ember::cpu::active_isa());
    const auto* k = direct_set(isa);
    for (int64_t wo : {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20, 24, 25})
      for (int64_t groups : {1, 2}) {
        const int64_t rows = 3, n = (2048 + rows * wo - 1) / (rows * wo);
        const Conv2dShape batch = shape(n, 8 * groups, rows, wo, 64 * groups, 3, 3, 1, 1, 1, 1, 1, 1, groups);
        const ember::Conv2dDims d(batch);
        INFO(isa << ": w_out " << wo << ", groups " << groups << ", batch " << n);
        if (!k->f32.lane_fits(batch, d)) {
          CHECK(wo < (isa == "avx512" ? 6 : 3));  // shorter than the shortest run
          continue;
        }
        Conv2dShape one = batch;
        one.n = 1;
        std::mt19937 g(11);
        const Sizes z = sizes(batch), z1 = sizes(one);
        auto x = as<float>(random_values(z.x, g));
        auto w = as<float>(random_values(z.w, g));
        auto b = as<float>(random_values(batch.c_out, g));
        std::fill(x.begin(), x.begin() + int64_t(z1.x), 0.0f);
        for (int64_t j = 0; j < d.K; ++j) w[size_t(5 * d.K + j)] = -std::fabs(w[size_t(5 * d.K + j)]) - 0.5f;
        b[5] = -0.0f;
        for (bool relu : {false, true})
          for (bool with_bias : {true, false}) {
            INFO("relu " << relu << ", bias " << with_bias);
            const float* bp = with_bias ? b.data() : nullptr;
            std::vector<float> lanes(z.y, std::numeric_limits<float>::quiet_NaN());
            ember::cpu::conv2d_forward(DType::Float32, batch, x.data(), w.data(), bp, lanes.data(), relu);
            CHECK(bit_differences(lanes, one_image_at_a_time(batch, x, w.data(), bp, relu)) == 0);
            if (with_bias) {
              const uint32_t want = relu ? 0u : 0x80000000u;
              int64_t wrong = 0;
              for (int64_t p = 0; p < d.P; ++p) wrong += std::bit_cast<uint32_t>(lanes[size_t(5 * d.P + p)]) != want;
              CHECK(wrong == 0);
            }
          }
      }
  });
}

TEST_CASE("conv2d with a weight packed once: the lane tiles at any batch, one image's rows shared",
          "[kernels][conv2d]") {
  // conv2d_pack_weight lays W[g][co][k] out in blocks of bw channels,
  // [g][co / bw][k][co % bw]: checked against that index map. Given the packed weight, batches of every size take the lane tiles
  // (batch 1 with its output rows shared by the team: 5 rows on 4 threads split 1,
  // 1, 1, 2), and give the bits of the grid tiles run one image at a time without it.
  const int threads_before = ember::get_num_threads();
  // At batch 1 each thread pads only the input rows its output rows read: kernels of
  // 3, 5 and 2 rows, dilation 2 down the rows, padding on one axis only. A single
  // output row cannot be shared by rows, so its image goes to the grid tiles'
  // channel shares (or one thread).
  for (const Conv2dShape& s :
       {shape(1, 8, 14, 14, 64, 3, 3, 1, 1, 1, 1), shape(3, 16, 7, 9, 128, 3, 3, 1, 1, 1, 1, 1, 1, 2),
        shape(1, 64, 7, 12, 64, 3, 2, 1, 1, 0, 0, 1, 2), shape(1, 64, 3, 12, 64, 5, 1, 1, 1, 2, 0),
        shape(1, 32, 12, 10, 64, 3, 3, 1, 1, 0, 1, 2, 1), shape(1, 64, 3, 40, 64, 3, 3)}) {
    const ember::Conv2dDims d(s);
    std::mt19937 g(17);
    const Sizes z = sizes(s);
    auto x = as<float>(random_values(z.x, g));
    const auto w = as<float>(random_values(z.w, g)), b = as<float>(random_values(s.c_out, g));
    // One NaN per image: where two meet in one sum, which payload survives depends
    // on the operand order the compiler gave each tile's add (the baseline level).
    for (int64_t i = 0; i < s.n; ++i) x[size_t(i * (z.x / s.n) + 5 + 7 * i)] = std::bit_cast<float>(0x7fc00000u | uint32_t(i + 1));
    std::vector<float> packed(z.w, std::numeric_limits<float>::quiet_NaN());
    ember::cpu::conv2d_pack_weight(DType::Float32, s, w.data(), packed.data());
    // Blocks of bw channels, [g][co / bw][k][co % bw]: 32 for the 64 channels a
    // group here (the next test has the other widths).
    const int64_t bw = ember::cpu::conv2d_pack_block(s);
    CHECK(bw == 32);
    int64_t misplaced = 0;
    for (int64_t gi = 0; gi < d.G; ++gi)
      for (int64_t co = 0; co < d.cog; ++co)
        for (int64_t k = 0; k < d.K; ++k)
          misplaced += std::bit_cast<uint32_t>(packed[size_t(((gi * d.cog + co) / bw * d.K + k) * bw + co % bw)]) !=
                       std::bit_cast<uint32_t>(w[size_t((gi * d.cog + co) * d.K + k)]);
    CHECK(misplaced == 0);
    for_each_isa([&] {
      const std::string isa = ember::cpu::isa_name(ember::cpu::active_isa());
      CHECK(ember::cpu::conv2d_uses_packed_weight(DType::Float32, s));
      CHECK(direct_set(isa)->f32.lane_fits(s, d));
      for (int threads : {1, 2, 4})
        for (bool relu : {false, true}) {
          INFO(isa << ": batch " << s.n << ", channels " << s.c_out << ", groups " << s.groups << ", threads "
                   << threads << ", relu " << relu);
          ember::set_num_threads(threads);
          std::vector<float> lanes(z.y, std::numeric_limits<float>::quiet_NaN());
          // No plain weight: given the packed one, nothing reads it.
          ember::cpu::conv2d_forward(DType::Float32, s, x.data(), nullptr, b.data(), lanes.data(), relu,
                                     packed.data());
          const std::vector<float> grid = one_image_at_a_time(s, x, w.data(), b.data(), relu);
          CHECK(bit_differences(lanes, grid) == 0);
          CHECK(nan_count(grid) > 0);
          CHECK(nan_count(grid) < int64_t(grid.size()) / 2);
        }
    });
  }
  ember::set_num_threads(threads_before);
  // Which layers can use one: float32, stride 1, channels per group in whole tiles
  // (8 cover every level; 12 do not).
  CHECK_FALSE(ember::cpu::conv2d_uses_packed_weight(DType::Float64, shape(1, 8, 14, 14, 64, 3, 3)));
  CHECK_FALSE(ember::cpu::conv2d_uses_packed_weight(DType::Float32, shape(1, 8, 14, 14, 64, 3, 3, 2, 2)));
  CHECK_FALSE(ember::cpu::conv2d_uses_packed_weight(DType::Float32, shape(1, 8, 14, 14, 12, 3, 3)));
  CHECK_FALSE(ember::cpu::conv2d_uses_packed_weight(DType::Float32, shape(1, 8, 14, 14, 64, 3, 3, 1, 1, 0, 0, 1, 1, 16)));
  CHECK_THROWS_WITH(ember::cpu::conv2d_forward(DType::Float64, shape(1, 1, 3, 3, 8, 1, 1), nullptr, nullptr, nullptr,
                                               nullptr, false, &threads_before),
                    "conv2d_forward: a packed weight needs float32 values, got float64");
  CHECK_THROWS_WITH(ember::cpu::conv2d_pack_weight(DType::Float64, shape(1, 1, 3, 3, 8, 1, 1), nullptr, nullptr),
                    "conv2d_pack_weight: needs float32 values, got float64");
}

TEST_CASE("conv2d given only a packed weight: the grid tiles, row pairs, channel shares and the GEMM read it",
          "[kernels][conv2d]") {
  // A caller may keep the packed copy alone (an ONNX plan, onnx/prepack.cpp), so
  // the calls the lane tiles do not take read the packed layout through strides:
  // rows narrower than a lane run (4 wide: the grid tiles on AVX-512, the lane
  // tiles elsewhere), channels not in whole lane tiles (12, 20 and 24: the grid
  // tiles, in row pairs where w_out is half a vector: 8 on AVX-512, 4 on AVX2), one
  // image of 4x4 or of a single output row shared out by channels (on 4 threads the
  // shares of 64 channels start at 16 and 48, inside blocks of 32), and the GEMM of
  // stride 2, which lays the weight back out (8 and 4 channels a block there: its
  // few-row products sum in an order that depends on the weight's strides). Each
  // against the plain weight's bits, batch and one image at a time; the plain
  // weight is null, so a read of it would crash.
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 1, 3, 3, 64, 1, 1)) == 32);
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 1, 3, 3, 12, 1, 1)) == 12);
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 1, 3, 3, 48, 1, 1)) == 16);
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 2, 3, 3, 40, 1, 1, 1, 1, 0, 0, 1, 1, 2)) == 20);
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 2, 3, 3, 16, 1, 1, 1, 1, 0, 0, 1, 1, 2)) == 8);
  CHECK(ember::cpu::conv2d_pack_block(shape(1, 1, 3, 3, 24, 1, 1)) == 8);
  const int threads_before = ember::get_num_threads();
  for (const Conv2dShape& s :
       {shape(3, 16, 4, 4, 64, 3, 3, 1, 1, 1, 1), shape(3, 4, 10, 10, 12, 3, 3), shape(3, 4, 6, 6, 12, 3, 3),
        shape(2, 8, 9, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 2), shape(2, 8, 6, 6, 24, 3, 3, 1, 1, 1, 1),
        shape(1, 64, 4, 4, 48, 3, 3, 1, 1, 1, 1), shape(1, 64, 3, 20, 48, 3, 3), shape(1, 96, 4, 4, 64, 3, 3, 1, 1, 1, 1),
        shape(1, 96, 3, 20, 64, 3, 3), shape(2, 8, 9, 9, 64, 3, 3, 2, 2, 1, 1), shape(2, 8, 9, 9, 24, 3, 3, 2, 2, 1, 1),
        shape(2, 8, 11, 10, 64, 3, 3, 2, 1, 1, 0, 1, 2, 2), shape(2, 8, 9, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 2)}) {
    std::mt19937 g(23);
    const Sizes z = sizes(s);
    const auto x = as<float>(random_values(z.x, g));
    const auto w = as<float>(random_values(z.w, g)), b = as<float>(random_values(s.c_out, g));
    std::vector<float> packed(z.w);
    ember::cpu::conv2d_pack_weight(DType::Float32, s, w.data(), packed.data());
    for_each_isa([&] {
      const std::string isa = ember::cpu::isa_name(ember::cpu::active_isa());
      for (int threads : {1, 2, 4})
        for (bool relu : {false, true}) {
          INFO(isa << ": batch " << s.n << ", " << s.h << "x" << s.w << ", channels " << s.c_out << ", stride "
                   << s.stride_h << "x" << s.stride_w << ", groups " << s.groups << ", threads " << threads
                   << ", relu " << relu);
          ember::set_num_threads(threads);
          std::vector<float> got(z.y, std::numeric_limits<float>::quiet_NaN());
          ember::cpu::conv2d_forward(DType::Float32, s, x.data(), nullptr, b.data(), got.data(), relu, packed.data());
          std::vector<float> want(z.y, std::numeric_limits<float>::quiet_NaN());
          ember::cpu::conv2d_forward(DType::Float32, s, x.data(), w.data(), b.data(), want.data(), relu);
          CHECK(bit_differences(got, want) == 0);
          CHECK(bit_differences(got, one_image_at_a_time(s, x, w.data(), b.data(), relu)) == 0);
          CHECK(nan_count(got) == 0);
        }
    });
  }
  ember::set_num_threads(threads_before);
}

TEST_CASE("conv2d empty batch and unsupported dtypes", "[kernels][conv2d]") {
  Conv2dShape s = shape(0, 2, 5, 5, 3, 3, 3);
  std::vector<double> w(sizes(s).w, 1.0), gw(sizes(s).w, 5.0), gb(3, 5.0);
  ember::cpu::conv2d_forward(DType::Float64, s, nullptr, w.data(), nullptr, nullptr);
  ember::cpu::conv2d_backward_input(DType::Float64, s, nullptr, w.data(), nullptr);
  ember::cpu::conv2d_backward_weight(DType::Float64, s, nullptr, nullptr, gw.data(), gb.data());
  CHECK(std::all_of(gw.begin(), gw.end(), [](double v) { return v == 0; }));
  CHECK(std::all_of(gb.begin(), gb.end(), [](double v) { return v == 0; }));
  CHECK_THROWS_AS(ember::cpu::conv2d_forward(DType::Int32, shape(1, 1, 3, 3, 1, 1, 1), nullptr,
                                             nullptr, nullptr, nullptr),
                  ember::NotImplementedError);
  CHECK_THROWS_WITH(ember::cpu::conv2d_forward(DType::Float16, shape(1, 1, 3, 3, 1, 1, 1),
                                               nullptr, nullptr, nullptr, nullptr),
                    "conv2d_forward: no kernel for device cpu and dtype float16");
}

TEST_CASE("conv2d output size follows PyTorch", "[kernels][conv2d]") {
  using ember::cpu::conv2d_output_size;
  CHECK(conv2d_output_size(28, 5, 1, 0, 1) == 24);
  CHECK(conv2d_output_size(7, 3, 2, 1, 1) == 4);
  CHECK(conv2d_output_size(8, 3, 1, 2, 2) == 8);
  CHECK(conv2d_output_size(10, 2, 3, 0, 1) == 3);
  CHECK(conv2d_output_size(2, 5, 1, 1, 1) == 0);  // kernel wider than the padded input
}

TEST_CASE("conv2d bfloat16 (the bfloat16 GEMM path) matches the definition on bfloat16 values",
          "[kernels][conv2d][bf16]") {
  using ember::BFloat16;
  // The FashionMNIST net's layers are too small for it; they stay on float32.
  CHECK_FALSE(ember::cpu::conv2d_bf16_native(shape(100, 1, 28, 28, 6, 5, 5)));
  CHECK_FALSE(ember::cpu::conv2d_bf16_native(shape(100, 6, 12, 12, 12, 5, 5)));
  const std::vector<Case> bf16_cases = {
      {"3x3 pad 1", shape(3, 8, 9, 10, 32, 3, 3, 1, 1, 1, 1), true},
      {"stride 2, pad 1", shape(2, 8, 11, 9, 16, 3, 3, 2, 2, 1, 1), true},
      {"groups 2", shape(2, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2), false},
      {"dilation 2, pad 2", shape(2, 4, 12, 12, 16, 3, 3, 1, 1, 2, 2, 2, 2), true},
      {"batch 19: more images than weight-gradient ranges", shape(19, 4, 6, 6, 16, 3, 3, 1, 1, 1, 1), true},
  };
  if (std::string(ember::cpu::gemm_bf16_kernel_name()) != "avx512_bf16") {
    for (const Case& c : bf16_cases) CHECK_FALSE(ember::cpu::conv2d_bf16_native(c.s));
    SUCCEED("no vdpbf16ps on this CPU: bfloat16 convolutions are widened to float32 by the caller");
    return;
  }
  for (int threads : {1, 2}) {
    const int saved = ember::get_num_threads();
    ember::set_num_threads(threads);
    for (const Case& c : bf16_cases) {
      const Conv2dShape& s = c.s;
      INFO(c.name << ", " << threads << " threads");
      REQUIRE(ember::cpu::conv2d_bf16_native(s));
      std::mt19937 g(99);
      const Sizes z = sizes(s);
      // Inputs rounded to bfloat16 first, so the reference sees the kernel's values.
      auto rounded = [](std::vector<double> v) {
        for (double& e : v) e = double(float(BFloat16(float(e))));
        return v;
      };
      const auto x = rounded(random_values(z.x, g)), w = rounded(random_values(z.w, g)),
                 b = rounded(random_values(s.c_out, g)), gy = rounded(random_values(z.y, g));
      const Reference r = reference(s, x, w, c.bias ? &b : nullptr, gy);
      const auto tx = as<BFloat16>(x), tw = as<BFloat16>(w), tb = as<BFloat16>(b), tgy = as<BFloat16>(gy);
      const BFloat16 nan(std::numeric_limits<float>::quiet_NaN());
      std::vector<BFloat16> y(z.y, nan), gx(z.x, nan), gw(z.w, nan), gb(s.c_out, nan);
      ember::cpu::conv2d_forward(DType::BFloat16, s, tx.data(), tw.data(), c.bias ? tb.data() : nullptr, y.data());
      ember::cpu::conv2d_backward_input(DType::BFloat16, s, tgy.data(), tw.data(), gx.data());
      ember::cpu::conv2d_backward_weight(DType::BFloat16, s, tgy.data(), tx.data(), gw.data(), gb.data());
      auto widened = [](const std::vector<BFloat16>& v) { return std::vector<float>(v.begin(), v.end()); };
      // Sums in float32, then one rounding to bfloat16 (2^-9 relative).
      const double tol = 5e-3;
      CHECK(rel_err(widened(y), r.y) <= tol);
      CHECK(rel_err(widened(gx), r.gx) <= tol);
      CHECK(rel_err(widened(gw), r.gw) <= tol);
      CHECK(rel_err(widened(gb), r.gb) <= tol);
    }
    ember::set_num_threads(saved);
  }
}

TEST_CASE("conv2d bfloat16 (the stride-1 direct kernels) matches the definition on bfloat16 values",
          "[kernels][conv2d][bf16]") {
  using ember::BFloat16;
  const std::vector<Case> direct_cases = {
      {"the net's conv1, batch 3", shape(3, 1, 28, 28, 6, 5, 5), true},
      {"the net's conv2, batch 100 (thread team, two weight ranges)", shape(100, 6, 12, 12, 12, 5, 5), true},
      {"13 channels out (padded rows, an odd channel pair), pad 1", shape(2, 3, 9, 10, 13, 3, 3, 1, 1, 1, 1), true},
      {"dilation 2 (taps paired 2 apart), pad 2x1", shape(2, 2, 11, 12, 5, 3, 3, 1, 1, 2, 1, 2, 2), false},
      {"dilation 17 in x: every tap alone", shape(1, 2, 6, 40, 3, 2, 2, 1, 1, 0, 0, 1, 17), true},
      {"groups 2, 2x3 kernel", shape(2, 4, 7, 8, 6, 2, 3, 1, 1, 0, 1, 1, 1, 2), true},
      {"1x1 kernel, 70-wide rows", shape(2, 3, 3, 70, 4, 1, 1), true},
      {"3x3 images, batch 5 (a panel spans images; compact copies)", shape(5, 1, 3, 3, 2, 2, 2), true},
      {"3x5 images, batch 5 (a panel spans images; on the grid)", shape(5, 1, 3, 5, 2, 2, 2), true},
      // A third of each 12-wide row outside the output: compact positions, whose
      // per-channel copies (11 rows of 8) are not a whole number of vectors.
      {"12-wide rows, 8 outputs, 11 rows (compact positions)", shape(2, 3, 11, 12, 4, 5, 5), true},
      {"the same, dilation 2 in x (copies of pairs 2 apart)", shape(2, 3, 11, 14, 4, 5, 3, 1, 1, 0, 0, 1, 2), false},
      {"groups 2, 8 outputs in 12-wide rows (compact)", shape(2, 4, 9, 12, 6, 5, 5, 1, 1, 0, 0, 1, 1, 2), true},
      {"9 outputs in 13-wide rows (compact, odd width)", shape(1, 2, 8, 13, 3, 5, 5), true},
      // The largest gathers the copies take: the forward's pairs reach 63 values past
      // a vector's first, and so do the weight gradient's 32 shifted values.
      {"1 output in 4-wide rows, taps 3 apart (pair gather reach 63)", shape(2, 1, 6, 4, 2, 2, 2, 1, 1, 0, 0, 1, 3), true},
      {"8 outputs in 16-wide rows, taps 2 apart (copy reach 63)", shape(2, 2, 6, 16, 3, 2, 5, 1, 1, 0, 0, 1, 2), true},
  };
  ember::testing::IsaGuard guard;
  if (!ember::cpu::set_isa("avx512_bf16")) {
    for (const Case& c : direct_cases) CHECK_FALSE(ember::cpu::conv2d_bf16_direct(c.s));
    SUCCEED("no vdpbf16ps on this CPU: bfloat16 convolutions are widened to float32 by the caller");
    return;
  }
  for (int threads : {1, 2}) {
    ember::set_num_threads(threads);
    for (const Case& c : direct_cases) {
      const Conv2dShape& s = c.s;
      INFO(c.name << ", " << threads << " threads");
      REQUIRE(ember::cpu::conv2d_bf16_direct(s));
      REQUIRE_FALSE(ember::cpu::conv2d_bf16_native(s));
      std::mt19937 g(98);
      const Sizes z = sizes(s);
      auto rounded = [](std::vector<double> v) {
        for (double& e : v) e = double(float(BFloat16(float(e))));
        return v;
      };
      auto magnitude = [](std::vector<double> v) {
        for (double& e : v) e = std::abs(e);
        return v;
      };
      const auto x = rounded(random_values(z.x, g)), w = rounded(random_values(z.w, g)),
                 b = rounded(random_values(s.c_out, g)), gy = rounded(random_values(z.y, g));
      const Reference r = reference(s, x, w, c.bias ? &b : nullptr, gy);
      // The same sums over |terms|: what float32's rounding is relative to.
      const auto bm = magnitude(b);
      const Reference m = reference(s, magnitude(x), magnitude(w), c.bias ? &bm : nullptr, magnitude(gy));
      const auto tx = as<BFloat16>(x), tw = as<BFloat16>(w), tb = as<BFloat16>(b), tgy = as<BFloat16>(gy);
      const BFloat16 nan(std::numeric_limits<float>::quiet_NaN());
      std::vector<BFloat16> y(z.y, nan), gx(z.x, nan), gw(z.w, nan), gb(s.c_out, nan);
      ember::cpu::conv2d_forward(DType::BFloat16, s, tx.data(), tw.data(), c.bias ? tb.data() : nullptr, y.data());
      ember::cpu::conv2d_backward_input(DType::BFloat16, s, tgy.data(), tw.data(), gx.data());
      ember::cpu::conv2d_backward_weight(DType::BFloat16, s, tgy.data(), tx.data(), gw.data(), gb.data());
      // Float32 sums (within 1e-5 of the sum of |terms|), then one rounding to
      // bfloat16 (2^-9 relative; 2^-8 leaves room for the sum's error).
      auto bad = [](const std::vector<BFloat16>& got, const std::vector<double>& want, const std::vector<double>& mag) {
        int64_t n = 0;
        for (size_t i = 0; i < got.size(); ++i)
          n += !(std::abs(double(float(got[i])) - want[i]) <= std::ldexp(std::abs(want[i]), -8) + 1e-5 * mag[i]);
        return n;
      };
      CHECK(bad(y, r.y, m.y) == 0);
      CHECK(bad(gx, r.gx, m.gx) == 0);
      CHECK(bad(gw, r.gw, m.gw) == 0);
      CHECK(bad(gb, r.gb, m.gb) == 0);
    }
  }
}
