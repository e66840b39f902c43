// conv2d_relu_pool2x2 (tensor/nn_ops.h) against the three ops it fuses,
// max_pool2d(relu(conv2d(.)), 2), run separately: the same output bits and the same
// gradient bits for x, the weight and the bias (the kernels compute the same sums
// and only skip storing the activations), on the fused path (float32, float64, and
// bfloat16 tensors or bfloat16 autocast through float32 with each convolution output
// rounded to bfloat16) and on the paths that run the three ops (float16, bfloat16
// layers the bfloat16 GEMM serves, outputs too small to pool); conv2d's
// errors unchanged; the seed network's outputs and gradients unchanged. Also
// linear_relu against relu(linear(.)), conv2d_relu against relu(conv2d(.)), and the
// seed network without grad.
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ember.h"
#include "nn/amp/autocast.h"
#include "nn/nn.h"
#include "kernels/cpu/conv2d.h"
#include "tensor/conv_args.h"

#include "../kernels/isa_guard.h"

using namespace ember;
using Catch::Matchers::Message;

namespace {

// Same shape, dtype and bits (so NaNs in the same places compare equal).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ac = a.detach().contiguous(), bc = b.detach().contiguous();
  return std::memcmp(ac.data_ptr(), bc.data_ptr(), size_t(ac.numel()) * dtype_size(a.dtype())) == 0;
}

struct Run {
  Tensor y, gx, gw, gb;
};

// One forward and backward of f on fresh leaves holding x, w and b.
template <class F>
Run run(F&& f, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& gy_seed) {
  Tensor xl = x.detach().clone().requires_grad_(), wl = w.detach().clone().requires_grad_();
  Tensor bl = b.defined() ? b.detach().clone().requires_grad_() : Tensor();
  Tensor y = f(xl, wl, bl);
  y.backward(gy_seed.to(y.dtype()).reshape(y.shape()));
  return {y, xl.grad(), wl.grad(), bl.defined() ? bl.grad() : Tensor()};
}

struct Conv {
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// The name of the node that made y, looking through the casts autocast and the
// bfloat16 path add around the op.
std::string op_node(const Tensor& y) {
  std::shared_ptr<Node> n = y.grad_fn();
  while (n && std::string(n->name()) == "ToCopyBackward0" && !n->next.empty() && n->next[0].valid())
    n = n->next[0].fn;
  return n ? n->name() : "";
}

// dt: the tensors' dtype; autocast: run both sides under bfloat16 autocast.
// inf: an input of +Inf and one of -Inf, so that windows hold infinities and the
// NaNs of Inf - Inf.
void compare(const Shape& xs, const Shape& ws, bool bias, Conv c, DType dt, bool nan = false, bool autocast = false,
             bool inf = false) {
  Generator gen(11);
  Tensor x = randn(xs, {dt}, &gen), w = randn(ws, {dt}, &gen) * 0.3;
  if (nan) x.view({-1}).select(0, x.numel() / 2).fill_(NAN);
  if (inf) x.view({-1}).select(0, x.numel() / 3).fill_(INFINITY), x.view({-1}).select(0, x.numel() / 5).fill_(-INFINITY);
  Tensor b = bias ? randn({ws[0]}, {dt}, &gen) : Tensor();
  auto under = [&](auto&& f) {
    std::optional<nn::amp::AutocastGuard> guard;
    if (autocast) guard.emplace(DeviceType::CPU, kBFloat16);
    return f();
  };
  auto fused = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return under([&] { return conv2d_relu_pool2x2(x_, w_, b_, c.stride, c.padding, c.dilation, c.groups); });
  };
  auto three = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return under([&] {
      return max_pool2d(conv2d(x_, w_, b_, c.stride, c.padding, c.dilation, c.groups).relu(), {2, 2}, {2, 2});
    });
  };
  Tensor probe = three(x, w, b);
  Tensor gy = randn({probe.numel()}, {kFloat64}, &gen);
  const Run a = run(fused, x, w, b, gy), e = run(three, x, w, b, gy);
  CHECK(op_node(a.y) == "Conv2dReluPoolBackward0");  // the fused pass ran
  CHECK(same_bits(a.y, e.y));
  CHECK(same_bits(a.gx, e.gx));
  CHECK(same_bits(a.gw, e.gw));
  if (bias) CHECK(same_bits(a.gb, e.gb));
}

}  // namespace

TEST_CASE("conv2d_relu_pool2x2 gives the bits of max_pool2d(relu(conv2d))", "[nn][conv2d]") {
  for (DType dt : {kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    compare({2, 1, 28, 28}, {6, 1, 5, 5}, true, {}, dt);                    // the seed net's conv1
    compare({3, 6, 12, 12}, {12, 6, 5, 5}, true, {}, dt);                   // and conv2
    compare({2, 4, 9, 11}, {6, 2, 3, 2}, false, {{1, 1}, {1, 0}, {1, 2}, 2}, dt);  // odd output
    compare({2, 3, 13, 12}, {4, 3, 3, 3}, true, {{2, 2}, {1, 1}, {1, 1}, 1}, dt);  // stride 2
    compare({2, 2, 10, 10}, {3, 2, 3, 3}, true, {}, dt, /*nan=*/true);
  }
}

// bfloat16: the values tie far more often than in float32 (8 significant bits), so
// the seed network's layers at batch 8 hold many windows whose maximum is shared;
// the fused pass must pick the position the bfloat16 max pool picks.
TEST_CASE("conv2d_relu_pool2x2 in bfloat16 and under bfloat16 autocast gives the bits of the three ops",
          "[nn][conv2d][amp]") {
  // At the CPU's own level (the bfloat16 direct kernels where it has vdpbf16ps) and
  // at avx512, where the bfloat16 blocks are widened to float32 and rounded.
  ember::testing::IsaGuard guard;
  for (const char* level : {"auto", "avx512"})
  for (bool autocast : {false, true}) {
    if (!cpu::set_isa(level)) continue;
    const DType dt = autocast ? kFloat32 : kBFloat16;
    INFO((autocast ? "float32 under bfloat16 autocast" : "bfloat16 tensors") << ", level " << level);
    compare({8, 1, 28, 28}, {6, 1, 5, 5}, true, {}, dt, false, autocast);     // the seed net's conv1
    compare({8, 6, 12, 12}, {12, 6, 5, 5}, true, {}, dt, false, autocast);    // and conv2
    compare({2, 4, 9, 11}, {6, 2, 3, 2}, false, {{1, 1}, {1, 0}, {1, 2}, 2}, dt, false, autocast);  // odd output
    compare({2, 3, 13, 12}, {4, 3, 3, 3}, true, {{2, 2}, {1, 1}, {1, 1}, 1}, dt, false, autocast);  // stride 2
    compare({2, 2, 10, 10}, {3, 2, 3, 3}, true, {}, dt, /*nan=*/true, autocast);
    compare({2, 1, 28, 28}, {6, 1, 5, 5}, true, {}, dt, /*nan=*/true, autocast);   // rows of 12 pooled values
    compare({2, 1, 28, 28}, {6, 1, 5, 5}, true, {}, dt, false, autocast, /*inf=*/true);
    compare({3, 6, 12, 12}, {12, 6, 5, 5}, true, {}, dt, false, autocast, /*inf=*/true);  // rows of 4
    // Rows of 17 pooled values (two 16-lane steps) and of 16 whose grid row is longer
    // than one step's 32 lanes (the gradient spread's two ways of zeroing).
    compare({2, 2, 9, 38}, {3, 2, 5, 5}, true, {}, dt, false, autocast);
    compare({2, 1, 10, 36}, {2, 1, 3, 5}, true, {}, dt, false, autocast);
    // Even rows of output whose last grid row reaches past the weight gradient's row
    // buffer (2 * 5 rows of 13 > 128 positions), over three image ranges.
    compare({150, 1, 12, 13}, {6, 1, 3, 3}, true, {}, dt, false, autocast);
    // Compact copies (a quarter of each grid row past the output): rows of 8 pooled
    // values from 17 outputs (odd) in 23-wide rows, and two groups.
    compare({2, 2, 9, 23}, {3, 2, 3, 7}, true, {}, dt, false, autocast);
    compare({2, 4, 9, 12}, {6, 2, 5, 5}, true, {{1, 1}, {0, 0}, {1, 1}, 2}, dt, false, autocast);
  }
}

TEST_CASE("conv2d_relu_pool2x2 without grad gives the bits of the three ops", "[nn][conv2d]") {
  NoGradGuard no_grad;
  Generator gen(12);
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = randn({1, 1, 28, 28}, {dt}, &gen), w = randn({6, 1, 5, 5}, {dt}, &gen), b = randn({6}, {dt}, &gen);
    CHECK(same_bits(conv2d_relu_pool2x2(x, w, b), max_pool2d(conv2d(x, w, b).relu(), {2, 2}, {2, 2})));
    Tensor x2 = randn({3, 6, 11, 12}, {dt}, &gen), w2 = randn({12, 6, 5, 5}, {dt}, &gen);
    CHECK(same_bits(conv2d_relu_pool2x2(x2, w2, Tensor()), max_pool2d(conv2d(x2, w2, Tensor()).relu(), {2, 2}, {2, 2})));
  }
}

TEST_CASE("conv2d_relu_pool2x2's output may be modified in place before backward", "[nn][conv2d]") {
  Generator gen(13);
  Tensor x = randn({2, 2, 8, 8}, {}, &gen), w = randn({3, 2, 3, 3}, {}, &gen), b = randn({3}, {}, &gen);
  Tensor gy = randn({2 * 3 * 3 * 3}, {kFloat64}, &gen);
  auto fused = [](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    Tensor y = conv2d_relu_pool2x2(x_, w_, b_);
    y.mul_(2.0);  // as a user may; nothing saved for backward is this tensor
    return y;
  };
  auto three = [](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    Tensor y = max_pool2d(conv2d(x_, w_, b_).relu(), {2, 2}, {2, 2});
    y.mul_(2.0);
    return y;
  };
  const Run a = run(fused, x, w, b, gy), e = run(three, x, w, b, gy);
  CHECK(same_bits(a.y, e.y));
  CHECK(same_bits(a.gx, e.gx));
  CHECK(same_bits(a.gw, e.gw));
  CHECK(same_bits(a.gb, e.gb));
}

TEST_CASE("conv2d and conv2d_relu_pool2x2 with no input channels give the bias", "[nn][conv2d]") {
  Tensor x = zeros({2, 0, 6, 6}), w = zeros({3, 0, 3, 3}), b = tensor(std::vector<float>{0.5f, -1.0f, 2.0f});
  Tensor y = conv2d(x, w, b);
  CHECK(same_bits(y, b.view({1, 3, 1, 1}).expand({2, 3, 4, 4}).contiguous()));
  CHECK(same_bits(conv2d_relu_pool2x2(x, w, b), b.relu().view({1, 3, 1, 1}).expand({2, 3, 2, 2}).contiguous()));
}

TEST_CASE("conv2d_relu_pool2x2 records one node on the CPU and none without grad", "[nn][conv2d]") {
  Tensor x = randn({1, 2, 8, 8}).requires_grad_(), w = randn({3, 2, 3, 3});
  Tensor y = conv2d_relu_pool2x2(x, w, Tensor());
  REQUIRE(y.grad_fn());
  CHECK(std::string(y.grad_fn()->name()) == "Conv2dReluPoolBackward0");
  CHECK(y.shape() == Shape{1, 3, 3, 3});
  NoGradGuard no_grad;
  CHECK_FALSE(conv2d_relu_pool2x2(x, w, Tensor()).grad_fn());
}

TEST_CASE("conv2d_relu_pool2x2 runs the three ops in float16, for GEMM-sized bfloat16 layers and below one window",
          "[nn][conv2d]") {
  Generator gen(5);
  Tensor x = randn({2, 2, 8, 8}, {}, &gen), w = randn({3, 2, 3, 3}, {}, &gen), b = randn({3}, {}, &gen);
  auto three = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return max_pool2d(conv2d(x_, w_, b_).relu(), {2, 2}, {2, 2});
  };
  {
    nn::amp::AutocastGuard autocast(DeviceType::CPU, kFloat16);
    Tensor y = conv2d_relu_pool2x2(x, w, b);
    CHECK(y.dtype() == kFloat16);
    CHECK(same_bits(y, three(x, w, b)));
  }
  Tensor xh = x.to(kFloat16).requires_grad_(), wh = w.to(kFloat16), bh = b.to(kFloat16);
  Tensor yh = conv2d_relu_pool2x2(xh, wh, bh);
  CHECK(op_node(yh) != "Conv2dReluPoolBackward0");
  CHECK(same_bits(yh, three(xh, wh, bh)));
  // 32 output channels of depth 64: a layer the bfloat16 GEMM serves where the CPU
  // has vdpbf16ps, and then the three ops run on it (the float32 path otherwise).
  Tensor xb = randn({2, 16, 6, 6}, {kBFloat16}, &gen), wb = randn({32, 16, 2, 2}, {kBFloat16}, &gen);
  CHECK(same_bits(conv2d_relu_pool2x2(xb, wb, Tensor()), three(xb, wb, Tensor())));
  // A 1-row convolution output cannot be pooled: max_pool2d's error.
  CHECK_THROWS_MATCHES(conv2d_relu_pool2x2(randn({1, 2, 3, 8}), w, b), ShapeError,
                       Message("max_pool2d: output size is too small (0x3) for input [1, 3, 1, 6]"));
}

TEST_CASE("conv2d_relu_pool2x2 reports conv2d's errors", "[nn][conv2d]") {
  Tensor w = randn({3, 2, 3, 3});
  CHECK_THROWS_MATCHES(conv2d_relu_pool2x2(randn({1, 4, 8, 8}), w, Tensor()), ShapeError,
                       Message("Given groups=1, weight of size [3, 2, 3, 3], expected input[1, 4, 8, 8] to have 2 "
                               "channels, but got 4 channels instead"));
  CHECK_THROWS_AS(conv2d_relu_pool2x2(randn({1, 2, 8, 8}, {kFloat64}), w, Tensor()), DTypeError);
  CHECK_THROWS_MATCHES(conv2d_relu_pool2x2(randn({1, 2, 8, 8}), w, Tensor(), {0, 1}), ValueError,
                       Message("non-positive stride is not supported"));
}

TEST_CASE("the seed network's fused blocks give the outputs and gradients of the three ops", "[nn][conv2d]") {
  manual_seed(3);
  nn::Network net;
  Generator gen(4);
  Tensor x = randn({4, 1, 28, 28}, {}, &gen);
  Tensor y = net(x);
  y.sum().backward();
  // The same network written out with the three ops.
  namespace F = nn::functional;
  std::vector<Tensor> grads;
  for (const Tensor& p : net.parameters()) grads.push_back(p.grad().clone());
  net.zero_grad();  // to none: the second backward's gradients are its own
  Tensor t = F::max_pool2d(F::relu(F::conv2d(x, net.conv1->weight, net.conv1->bias)), {2, 2});
  t = F::max_pool2d(F::relu(F::conv2d(t, net.conv2->weight, net.conv2->bias)), {2, 2});
  t = F::relu((*net.fc1)(t.flatten(1)));
  t = F::relu((*net.fc2)(t));
  Tensor y3 = (*net.out)(t);
  CHECK(same_bits(y, y3));
  y3.sum().backward();
  const auto params = net.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    INFO("parameter " << i);
    CHECK(same_bits(params[i].grad(), grads[i]));
  }
}

// linear_relu (tensor/ops.h): the ReLU applied in place to linear's direct-path
// output, or the two ops where that path does not run; the bits of relu(linear(.))
// either way, NaN kept.
TEST_CASE("linear_relu gives the bits of relu(linear) with and without grad", "[nn][linear]") {
  for (DType dt : {kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    Generator gen(5);
    Tensor x = randn({7, 33}, {dt}, &gen), w = randn({19, 33}, {dt}, &gen), b = randn({19}, {dt}, &gen);
    x.select(0, 2).select(0, 4).fill_(NAN);  // row 2 of the output is all NaN
    {
      NoGradGuard no_grad;
      CHECK(same_bits(linear_relu(x, w, b), linear(x, w, b).relu()));
      CHECK(same_bits(linear_relu(x, w, Tensor()), linear(x, w).relu()));                    // no bias
      CHECK(same_bits(linear_relu(x.view({7, 1, 33}), w, b), linear(x.view({7, 1, 33}), w, b).relu()));  // 3-D
    }
    Tensor gy = randn({7 * 19}, {kFloat64}, &gen);
    const Run fused = run([](const Tensor& x_, const Tensor& w_, const Tensor& b_) { return linear_relu(x_, w_, b_); },
                          x, w, b, gy);
    const Run two = run([](const Tensor& x_, const Tensor& w_, const Tensor& b_) { return linear(x_, w_, b_).relu(); },
                        x, w, b, gy);
    CHECK(same_bits(fused.y, two.y));
    CHECK(same_bits(fused.gx, two.gx));
    CHECK(same_bits(fused.gw, two.gw));
    CHECK(same_bits(fused.gb, two.gb));
  }
}

TEST_CASE("the seed network without grad gives the outputs of the unfused ops", "[nn][linear]") {
  manual_seed(3);
  nn::Network net;
  Generator gen(4);
  Tensor x = randn({3, 1, 28, 28}, {}, &gen);
  NoGradGuard no_grad;
  namespace F = nn::functional;
  Tensor t = F::max_pool2d(F::relu(F::conv2d(x, net.conv1->weight, net.conv1->bias)), {2, 2});
  t = F::max_pool2d(F::relu(F::conv2d(t, net.conv2->weight, net.conv2->bias)), {2, 2});
  t = F::relu(F::linear(t.flatten(1), net.fc1->weight, net.fc1->bias));
  t = F::relu(F::linear(t, net.fc2->weight, net.fc2->bias));
  CHECK(same_bits(net(x), F::linear(t, net.out->weight, net.out->bias)));
}

// conv2d_relu (tensor/nn_ops.h): ReLU applied to each image's output inside the
// convolution's pass where nothing is recorded (the bits of relu(conv2d(.)), NaN
// kept), the two ops otherwise; on both kernel families (the stride-1 direct
// kernels, one image's channels shared out, and im2col), 1 to 3 threads.
TEST_CASE("conv2d_relu gives the bits of relu(conv2d) without grad and records the two ops with it", "[nn][conv2d]") {
  testing::IsaGuard guard;
  struct Case {
    const char* what;
    Shape x, w;
    Conv c;
  };
  const std::vector<Case> cases = {
      {"stride 1, a batch", {3, 5, 11, 10}, {7, 5, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {"one image, 40 channels shared out", {1, 16, 14, 14}, {40, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {"stride 2, grouped, dilated (im2col)", {2, 6, 13, 12}, {8, 3, 3, 3}, {{2, 2}, {2, 2}, {2, 2}, 2}},
  };
  for (const Case& k : cases) {
    for (DType dt : {kFloat32, kFloat64}) {
      for (int threads : {1, 2, 3}) {
        INFO(k.what << ", " << dtype_name(dt) << ", " << threads << " threads");
        set_num_threads(threads);
        Generator gen(9);
        Tensor x = randn(k.x, {dt}, &gen), w = randn(k.w, {dt}, &gen), b = randn({k.w[0]}, {dt}, &gen);
        x.select(0, 0).select(0, 1).select(0, 4).select(0, 5).fill_(NAN);  // a few NaN outputs
        auto conv = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
          return conv2d(x_, w_, b_, k.c.stride, k.c.padding, k.c.dilation, k.c.groups);
        };
        {
          NoGradGuard no_grad;
          CHECK(same_bits(conv2d_relu(x, w, b, k.c.stride, k.c.padding, k.c.dilation, k.c.groups), conv(x, w, b).relu()));
          CHECK(same_bits(conv2d_relu(x, w, Tensor(), k.c.stride, k.c.padding, k.c.dilation, k.c.groups),
                          conv(x, w, Tensor()).relu()));
        }
        // With grad it records the two ops' nodes (ReLU's last), so backward is theirs.
        const Tensor wl = w.detach().clone().requires_grad_();
        CHECK(std::string(conv2d_relu(x, wl, b, k.c.stride, k.c.padding, k.c.dilation, k.c.groups).grad_fn()->name()) ==
              std::string(conv(x, wl, b).relu().grad_fn()->name()));
      }
    }
  }
  // Where it runs the two ops: bfloat16 and float16, conv2d's errors.
  {
    NoGradGuard no_grad;
    Generator gen(2);
    Tensor x = randn({2, 3, 8, 8}, {}, &gen), w = randn({4, 3, 3, 3}, {}, &gen);
    for (DType half : {kBFloat16, kFloat16})
      CHECK(same_bits(conv2d_relu(x.to(half), w.to(half), Tensor()), conv2d(x.to(half), w.to(half), Tensor()).relu()));
    CHECK_THROWS_WITH(conv2d_relu(x, randn({4, 2, 3, 3}, {}, &gen), Tensor()),
                      Catch::Contains("expected input[2, 3, 8, 8] to have 2 channels"));
  }
}

// conv2d_pack_weight (tensor/conv_inference.cpp): the weight's [G, K, cog] layout
// where this CPU's kernels use one, checked against reshape and transpose; an
// undefined tensor elsewhere. conv2d_packed: the bits of conv2d (then relu) with
// and without the packed weight, 1 and 2 threads, batch 1 (rows shared) and 3;
// the ops apart, recorded, with grad; its error for a packed tensor of another
// layout.
TEST_CASE("conv2d_packed gives conv2d's bits with a weight packed once", "[nn][conv2d]") {
  Generator gen(13);
  struct Case {
    const char* what;
    Shape x, w;
    int64_t groups;
  };
  for (const Case& k : std::vector<Case>{{"one image, 64 channels", {1, 8, 14, 14}, {64, 8, 3, 3}, 1},
                                         {"a batch of 3, 2 groups of 32 channels", {3, 8, 9, 13}, {64, 4, 3, 3}, 2}}) {
    Tensor x = randn(k.x, {}, &gen), w = randn(k.w, {}, &gen), b = randn({k.w[0]}, {}, &gen);
    x.select(0, 0).select(0, 1).select(0, 4).select(0, 5).fill_(NAN);
    const Tensor packed = conv2d_pack_weight(w, {1, 1}, k.groups);
    REQUIRE(packed.defined());
    const int64_t G = k.groups, K = k.w[1] * k.w[2] * k.w[3], cog = k.w[0] / G;
    CHECK(packed.shape() == Shape{G, cog / 32, K, 32});  // blocks of 32 channels
    CHECK(same_bits(packed, w.reshape({G, cog / 32, 32, K}).transpose(2, 3).contiguous()));
    for (int threads : {1, 2})
      for (bool relu : {false, true}) {
        INFO(k.what << ", " << threads << " threads, relu " << relu);
        set_num_threads(threads);
        NoGradGuard no_grad;
        const Tensor want = conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, k.groups);
        const Tensor got = conv2d_packed(x, w, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups, relu);
        CHECK(same_bits(got, relu ? want.relu() : want));
        CHECK(same_bits(conv2d_packed(x, w, Tensor(), b, {1, 1}, {1, 1}, {1, 1}, k.groups, relu), got));
        // The weight as a meta tensor, its values in packed only (an ONNX plan's).
        const Tensor meta = empty(w.shape(), {kFloat32, kMeta});
        CHECK(same_bits(conv2d_packed(x, meta, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups, relu), got));
        // Rows too narrow for the lane tiles (3 outputs wide), and stride 2.
        const Tensor narrow = x.narrow(3, 0, 3);
        CHECK(same_bits(conv2d_packed(narrow, meta, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups, relu),
                        conv2d_packed(narrow, w, Tensor(), b, {1, 1}, {1, 1}, {1, 1}, k.groups, relu)));
        CHECK(same_bits(conv2d_packed(x, meta, packed, b, {2, 2}, {1, 1}, {1, 1}, k.groups, relu),
                        conv2d_packed(x, w, Tensor(), b, {2, 2}, {1, 1}, {1, 1}, k.groups, relu)));
      }
    // With grad: conv2d's node (and ReLU's), the packed weight unused.
    const Tensor wl = w.detach().clone().requires_grad_();
    CHECK(std::string(conv2d_packed(x, wl, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups, true).grad_fn()->name()) ==
          std::string(conv2d(x, wl, b, {1, 1}, {1, 1}, {1, 1}, k.groups).relu().grad_fn()->name()));
    CHECK(std::string(conv2d_packed(x, wl, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups).grad_fn()->name()) ==
          std::string(conv2d(x, wl, b, {1, 1}, {1, 1}, {1, 1}, k.groups).grad_fn()->name()));
    // With grad and a meta weight: conv2d on the weight laid back out, x's gradient
    // recorded; float64 input: conv2d's dtype error, as with the plain weight.
    const Tensor xg = x.detach().clone().requires_grad_();
    const Tensor meta = empty(w.shape(), {kFloat32, kMeta});
    const Tensor y = conv2d_packed(xg, meta, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups);
    CHECK(y.requires_grad());
    NoGradGuard no_grad;
    CHECK(same_bits(y.detach(), conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, k.groups)));
    std::string plain_error;
    try {
      conv2d_packed(x.to(kFloat64), w, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups);
    } catch (const Error& e) {
      plain_error = e.what();
    }
    CHECK_FALSE(plain_error.empty());
    CHECK_THROWS_WITH(conv2d_packed(x.to(kFloat64), meta, packed, b, {1, 1}, {1, 1}, {1, 1}, k.groups), plain_error);
  }
  // A meta weight or groups conv2d rejects: its shape errors, before packed is read.
  {
    NoGradGuard no_grad;
    const Tensor w = randn({64, 8, 3, 3}, {}, &gen), packed = conv2d_pack_weight(w);
    const Tensor x = randn({1, 8, 6, 6}, {}, &gen);
    CHECK_THROWS_MATCHES(conv2d_packed(x, empty({64, 8, 3}, {kFloat32, kMeta}), packed, Tensor()), ShapeError,
                         Message("conv2d: expected a 4-dimensional weight, got [64, 8, 3]"));
    CHECK_THROWS_MATCHES(conv2d_packed(x, empty(w.shape(), {kFloat32, kMeta}), packed, Tensor(), {1, 1}, {0, 0},
                                       {1, 1}, 0),
                         ValueError, Message("non-positive groups is not supported"));
    // No input channels: an empty packed weight, the bias alone, as with the plain one.
    const Tensor x0 = empty({1, 0, 5, 5}), b0 = randn({8}, {}, &gen);
    const Tensor w0 = empty({8, 0, 3, 3}), p0 = empty({1, 1, 0, 8});
    CHECK(same_bits(conv2d_packed(x0, empty({8, 0, 3, 3}, {kFloat32, kMeta}), p0, b0),
                    conv2d(x0, w0, b0, {1, 1}, {0, 0}, {1, 1}, 1)));
    CHECK_THROWS_MATCHES(conv2d_packed(x, empty(w.shape(), {kFloat32, kMeta}), packed, Tensor(), {1, 1}, {0, 0},
                                       {1, 1}, 3),
                         ShapeError,
                         Message("Given groups=3, expected weight to be divisible by 3 at dimension 0, but got "
                                 "weight of size [64, 8, 3, 3] instead"));
  }
  // No kernel of any level uses one for stride 2, float64, or 12 channels a group.
  const Tensor w = randn({64, 8, 3, 3}, {}, &gen);
  CHECK_FALSE(conv2d_pack_weight(w, {2, 2}, 1).defined());
  CHECK_FALSE(conv2d_pack_weight(w.to(kFloat64)).defined());
  CHECK_FALSE(conv2d_pack_weight(randn({12, 8, 3, 3}, {}, &gen)).defined());
  CHECK_FALSE(conv2d_pack_weight(randn({64, 8, 3}, {}, &gen)).defined());
  // A packed tensor that cannot be this weight's layout.
  NoGradGuard no_grad;
  const Tensor x = randn({1, 8, 6, 6}, {}, &gen), packed = conv2d_pack_weight(w);
  CHECK_THROWS_MATCHES(conv2d_packed(x, w, packed.to(kFloat64), Tensor()), ValueError,
                       Message("conv2d_packed: expected packed to be conv2d_pack_weight(weight, stride, groups), a "
                               "contiguous float32 cpu tensor of shape [1, 2, 72, 32], but got a contiguous float64 "
                               "tensor of shape [1, 2, 72, 32] on cpu"));
  CHECK_THROWS_MATCHES(conv2d_packed(x, w, packed.reshape({72, 64}), Tensor()), ValueError,
                       Message("conv2d_packed: expected packed to be conv2d_pack_weight(weight, stride, groups), a "
                               "contiguous float32 cpu tensor of shape [1, 2, 72, 32], but got a contiguous float32 "
                               "tensor of shape [72, 64] on cpu"));
  CHECK_THROWS_MATCHES(conv2d_packed(x, w, randn({1, 2, 32, 72}, {}, &gen).transpose(2, 3), Tensor()), ValueError,
                       Message("conv2d_packed: expected packed to be conv2d_pack_weight(weight, stride, groups), a "
                               "contiguous float32 cpu tensor of shape [1, 2, 72, 32], but got a non-contiguous float32 "
                               "tensor of shape [1, 2, 72, 32] on cpu"));
}

TEST_CASE("conv2d_forward refuses relu for other dtypes than float32 and float64", "[nn][conv2d][errors]") {
  const Conv2dShape s = conv2d_shape({1, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1);
  std::vector<uint16_t> x(9), w(1), y(9);
  CHECK_THROWS_MATCHES(cpu::conv2d_forward(DType::BFloat16, s, x.data(), w.data(), nullptr, y.data(), true),
                       ValueError, Message("conv2d_forward: relu needs float32 or float64 values, got bfloat16"));
}
