// The layers' forward passes against torch 1.13: inputs, parameters (loaded with
// load_state_dict) and outputs written by tests/nn/make_layer_reference.py into
// data/layer_reference.json. Also Dropout's statistics, default initialisation
// ranges, and the loss functions' documented errors.
#include <cmath>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember.h"
#include "nn/nn.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/nn/data in the source tree (see tests/nn/meson.build)"
#endif

using namespace ember;
using json = nlohmann::json;
using Catch::Matchers::Message;
namespace F = ember::nn::functional;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

const json& reference() {
  static const json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA_DIR) + "/layer_reference.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

// {"shape": [...], "values": [...]} as a tensor of dtype dt.
Tensor from_json(const json& j, DType dt = kFloat64) {
  const Shape shape = j.at("shape").get<Shape>();
  // tensor() reads an empty shape as 1-D: a 0-dim value is reshaped.
  return tensor(j.at("values").get<std::vector<double>>()).reshape(shape).to(dt);
}

nn::StateDict state_from_json(const json& j) {
  nn::StateDict sd;
  for (const auto& [name, t] : j.items()) sd.emplace_back(name, from_json(t));
  return sd;
}

std::vector<double> values(const Tensor& t) { return t.detach().to(kFloat64).to_vector<double>(); }

// got matches want (same shape, |got - want| <= atol + rtol |want| everywhere); on
// failure, reports the first element that does not.
void check_close(const Tensor& got, const json& want, double atol, double rtol = 0) {
  REQUIRE(got.shape() == want.at("shape").get<Shape>());
  const std::vector<double> g = values(got), w = want.at("values").get<std::vector<double>>();
  REQUIRE(g.size() == w.size());
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))) {
      FAIL_CHECK("element " << i << ": got " << g[i] << ", expected " << w[i]);
      return;
    }
  SUCCEED();
}

Tensor targets(const std::vector<int64_t>& t) { return tensor(t); }

constexpr double kTight = 1e-12;  // float64 against float64: rounding order only

}  // namespace

TEST_CASE("Network logits match PyTorch's for the same weights and input", "[nn][layers]") {
  // make_layer_reference.py: tensor j of the state_dict holds bound * sin(0.7 k + 1.3 j + 0.1)
  // at element k, bound = 1/sqrt(fan_in); image n holds 0.5 + 0.5 sin((0.37 + 0.11 n) k)
  // at flat element k; both rounded to float32.
  nn::Network net;
  nn::StateDict sd;
  const nn::NamedTensors params = net.named_parameters();
  for (size_t j = 0; j < params.size(); ++j) {
    const auto& [name, p] = params[j];
    const Tensor& weight = params[j - (name.ends_with("bias") ? 1 : 0)].second;
    const double bound = 1.0 / std::sqrt(static_cast<double>(weight.numel() / weight.size(0)));
    std::vector<float> v(static_cast<size_t>(p.numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(bound * std::sin(0.7 * k + 1.3 * j + 0.1));
    sd.emplace_back(name, tensor(v, p.shape()));
  }
  net.load_state_dict(sd);
  std::vector<float> px(2 * 28 * 28);
  for (size_t k = 0; k < px.size(); ++k)
    px[k] = static_cast<float>(0.5 + 0.5 * std::sin((0.37 + 0.11 * static_cast<double>(k / 784)) * k));
  const Tensor x = tensor(px, {2, 1, 28, 28});
  const json& want = reference().at("network").at("logits");

  check_close(net(x), want, 2e-6, 1e-5);
  net.to(kFloat64);
  check_close(net(x.to(kFloat64)), want, kTight);
  // eval changes nothing for this network (no dropout, no batch norm).
  net.eval();
  check_close(net(x.to(kFloat64)), want, kTight);
}

TEST_CASE("Linear and Conv2d forward match PyTorch", "[nn][layers]") {
  const json& lin_ref = reference().at("linear");
  nn::Linear lin(5, 3);
  lin.load_state_dict(state_from_json(lin_ref.at("state")));
  check_close(lin(from_json(lin_ref.at("x"), kFloat32)), lin_ref.at("y"), 1e-6, 1e-5);
  lin.to(kFloat64);
  check_close(lin(from_json(lin_ref.at("x"))), lin_ref.at("y"), kTight);
  // A batch of rows and a single row give the same rows.
  const Tensor x = from_json(lin_ref.at("x"));
  CHECK(values(lin(x[1])) == values(lin(x)[1]));

  const json& conv_ref = reference().at("conv2d");
  nn::Conv2d conv(4, 4, {3, 2}, {.stride = {2, 1}, .padding = {1, 2}, .dilation = {2, 1}, .groups = 2});
  conv.load_state_dict(state_from_json(conv_ref.at("state")));
  check_close(conv(from_json(conv_ref.at("x"), kFloat32)), conv_ref.at("y"), 1e-5, 1e-5);
  conv.to(kFloat64);
  check_close(conv(from_json(conv_ref.at("x"))), conv_ref.at("y"), kTight);

  nn::Conv2d plain(4, 2, 3, {.bias = false});
  CHECK_FALSE(plain.bias.defined());
  plain.to(kFloat64).load_state_dict(state_from_json(conv_ref.at("plain_state")));
  check_close(plain(from_json(conv_ref.at("x"))), conv_ref.at("plain_y"), kTight);
}

TEST_CASE("MaxPool2d and AvgPool2d match PyTorch: padding, dilation, ceil_mode, count_include_pad", "[nn][layers]") {
  const json& ref = reference().at("pool");
  const Tensor x = from_json(ref.at("x"));
  check_close(nn::MaxPool2d({3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true)(x), ref.at("max_k3_s2_p1_ceil"), 0);
  check_close(nn::MaxPool2d({2, 3}, Pair{1, 2}, {0, 0}, {2, 1})(x), ref.at("max_k23_s12_d21"), 0);
  check_close(nn::AvgPool2d({3, 3}, Pair{2, 2}, {1, 1})(x), ref.at("avg_k3_s2_p1"), kTight);
  check_close(nn::AvgPool2d({3, 3}, Pair{2, 2}, {1, 1}, true, false)(x), ref.at("avg_k3_s2_p1_ceil_nopad"), kTight);
  check_close(nn::AvgPool2d({3, 3}, Pair{2, 2}, {1, 1}, true, true)(x), ref.at("avg_k3_s2_p1_ceil_pad"), kTight);
  // float32 too (max pooling only picks, so it is exact).
  check_close(nn::MaxPool2d({3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true)(x.to(kFloat32)),
              ref.at("max_k3_s2_p1_ceil"), 1e-7, 1e-7);
  // The same values when autograd records (max_pool2d_with_indices keeps the
  // indices) as without (no index tensor, above).
  const Tensor xg = x.detach().requires_grad_(true);
  const Tensor yg = nn::MaxPool2d({3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true)(xg);
  CHECK(yg.grad_fn() != nullptr);
  check_close(yg, ref.at("max_k3_s2_p1_ceil"), 0);
  check_close(nn::MaxPool2d({2, 3}, Pair{1, 2}, {0, 0}, {2, 1})(xg), ref.at("max_k23_s12_d21"), 0);
  {
    NoGradGuard no_grad;
    CHECK(nn::MaxPool2d({3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true)(xg).grad_fn() == nullptr);
  }
  // Stride defaults to the kernel size.
  const Tensor four = arange(0.0, 16.0).reshape({1, 1, 4, 4});
  CHECK(values(nn::MaxPool2d(2)(four)) == std::vector<double>{5, 7, 13, 15});
  CHECK(values(nn::AvgPool2d(2)(four)) == std::vector<double>{2.5, 4.5, 10.5, 12.5});
}

TEST_CASE("BatchNorm2d in training and eval matches PyTorch, running stats included", "[nn][layers]") {
  const json& ref = reference().at("batch_norm");
  nn::BatchNorm2d bn(3);
  bn.to(kFloat64).load_state_dict(state_from_json(ref.at("state")));
  bn.train();
  check_close(bn(from_json(ref.at("x1"))), ref.at("y1"), kTight);
  check_close(bn(from_json(ref.at("x2"))), ref.at("y2"), kTight);
  const json& after = ref.at("state_after");
  check_close(bn.running_mean, after.at("running_mean"), kTight);
  check_close(bn.running_var, after.at("running_var"), kTight);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
  CHECK(after.at("num_batches_tracked").at("values")[0].get<double>() == 2);
  bn.eval();
  const std::vector<double> mean_before = values(bn.running_mean), var_before = values(bn.running_var);
  check_close(bn(from_json(ref.at("x1"))), ref.at("y_eval"), kTight);
  // eval neither counts nor updates.
  CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
  CHECK(values(bn.running_mean) == mean_before);
  CHECK(values(bn.running_var) == var_before);

  // By hand, one channel, weight 1 and bias 0: x = [1, 3] -> mean 2, biased var 1 ->
  // y = (x - 2) / sqrt(1 + eps); running_var takes the unbiased var 2.
  nn::BatchNorm2d one(1);
  one.to(kFloat64);
  const std::vector<double> y = values(one(tensor(std::vector<double>{1, 3}, {2, 1, 1, 1})));
  CHECK(y[0] == Approx(-1 / std::sqrt(1 + 1e-5)).epsilon(1e-14));
  CHECK(y[1] == Approx(1 / std::sqrt(1 + 1e-5)).epsilon(1e-14));
  CHECK(one.running_mean.item<double>() == Approx(0.9 * 0 + 0.1 * 2).epsilon(1e-15));
  CHECK(one.running_var.item<double>() == Approx(0.9 * 1 + 0.1 * 2).epsilon(1e-15));

  // Without running stats, eval normalises with the batch's statistics too.
  nn::BatchNorm2d untracked(1, 1e-5, 0.1, false, false);
  untracked.eval();
  const std::vector<double> u = values(untracked(tensor(std::vector<float>{1, 3}, {2, 1, 1, 1})));
  CHECK(u[0] == Approx(-1 / std::sqrt(1 + 1e-5)).epsilon(1e-6));
}

TEST_CASE("Sequential runs its children in order, matching PyTorch", "[nn][layers]") {
  const json& ref = reference().at("sequential");
  nn::Sequential seq{std::make_shared<nn::Conv2d>(2, 3, 3, nn::Conv2dOptions{.padding = {1, 1}}),
                     std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(12, 4)};
  seq.to(kFloat64).load_state_dict(state_from_json(ref.at("state")));
  check_close(seq(from_json(ref.at("x"))), ref.at("y"), kTight);
  const json& after = ref.at("running_after");
  auto* bn = dynamic_cast<nn::BatchNorm2d*>(seq.named_children()[1].second.get());
  REQUIRE(bn != nullptr);
  check_close(bn->running_mean, after.at("1.running_mean"), kTight);
  check_close(bn->running_var, after.at("1.running_var"), kTight);
  // An empty Sequential is the identity.
  const Tensor x = ones({2, 3});
  CHECK(values(nn::Sequential()(x)) == values(x));
}

TEST_CASE("cross_entropy, nll_loss and mse_loss match PyTorch", "[nn][layers][loss]") {
  const json& ref = reference().at("loss");
  const Tensor logits = from_json(ref.at("logits"));
  const Tensor t = targets(ref.at("targets").get<std::vector<int64_t>>());
  const Tensor t2 = targets(ref.at("targets_ignore2").get<std::vector<int64_t>>());
  const Tensor lp = F::log_softmax(logits, 1);
  using R = Reduction;
  check_close(F::cross_entropy(logits, t), ref.at("ce_mean"), kTight);
  check_close(F::cross_entropy(logits, t, R::Sum), ref.at("ce_sum"), kTight);
  check_close(F::cross_entropy(logits, t, R::None), ref.at("ce_none"), kTight);
  check_close(F::nll_loss(lp, t), ref.at("nll_mean"), kTight);
  check_close(F::nll_loss(lp, t, R::Sum), ref.at("nll_sum"), kTight);
  check_close(F::nll_loss(lp, t, R::None), ref.at("nll_none"), kTight);
  check_close(F::cross_entropy(logits, t2, R::Mean, 2), ref.at("ce_mean_ignore2"), kTight);
  check_close(F::nll_loss(lp, t2, R::Sum, 2), ref.at("nll_sum_ignore2"), kTight);
  // float32 logits give the float32 loss.
  const Tensor l32 = F::cross_entropy(logits.to(kFloat32), t);
  CHECK(l32.dtype() == kFloat32);
  check_close(l32, ref.at("ce_mean"), 1e-6, 1e-6);

  // The gradient of the mean, with one target ignored (its row gets none).
  Tensor x = logits.clone().requires_grad_();
  F::cross_entropy(x, t).backward();
  check_close(x.grad(), ref.at("ce_mean_grad"), kTight);
  for (double g : values(x.grad()[3])) CHECK(g == 0);

  // Every target ignored: the mean is 0/0 = NaN as in PyTorch, the sum 0.
  const Tensor all_ignored = targets({-100, -100});
  CHECK(std::isnan(F::cross_entropy(logits.narrow(0, 0, 2), all_ignored).item<double>()));
  CHECK(F::cross_entropy(logits.narrow(0, 0, 2), all_ignored, R::Sum).item<double>() == 0);

  const Tensor a = from_json(ref.at("mse_a")), b = from_json(ref.at("mse_b"));
  check_close(F::mse_loss(a, b), ref.at("mse_mean"), kTight);
  check_close(F::mse_loss(a, b, R::Sum), ref.at("mse_sum"), kTight);
  check_close(F::mse_loss(a, b, R::None), ref.at("mse_none"), kTight);
  // By hand: (1 - 3)^2 and (2 - 2)^2.
  CHECK(F::mse_loss(tensor({1.0f, 2.0f}), tensor({3.0f, 2.0f})).item<double>() == 2.0);
}

TEST_CASE("loss errors: targets out of range, of the wrong dtype or shape", "[nn][layers][loss][errors]") {
  const Tensor x = zeros({2, 3});
  EXPECT_ERROR(F::cross_entropy(x, targets({0, 3})), IndexError, "Target 3 is out of bounds.");
  EXPECT_ERROR(F::cross_entropy(x, targets({-1, 0})), IndexError, "Target -1 is out of bounds.");
  EXPECT_ERROR(F::nll_loss(x, targets({2, 7})), IndexError, "Target 7 is out of bounds.");
  // -100 is only ignored while it is the ignore_index.
  EXPECT_ERROR(F::cross_entropy(x, targets({0, -100}), Reduction::Mean, 1), IndexError,
               "Target -100 is out of bounds.");
  EXPECT_ERROR(F::cross_entropy(x, tensor(std::vector<int32_t>{0, 1})), DTypeError,
               "cross_entropy: expected targets of dtype int64 (class indices), got int32");
  EXPECT_ERROR(F::nll_loss(x, tensor({0.0f, 1.0f})), DTypeError,
               "nll_loss: expected targets of dtype int64 (class indices), got float32");
  EXPECT_ERROR(F::cross_entropy(x, targets({0, 1, 2})), ShapeError,
               "Expected input batch_size (2) to match target batch_size (3).");
  EXPECT_ERROR(F::nll_loss(x, zeros({2, 1}, kInt64)), ShapeError,
               "0D or 1D target tensor expected, multi-target not supported");
  EXPECT_ERROR(F::cross_entropy(x, zeros({}, kInt64)), ShapeError,
               "Expected input batch_size (2) to match target batch_size (0).");
  EXPECT_ERROR(F::cross_entropy(zeros({2, 3, 4}), targets({0, 1})), ShapeError,
               "cross_entropy: expected input of shape [N, C], got [2, 3, 4]");
  EXPECT_ERROR(F::nll_loss(zeros({2, 3}, kInt64), targets({0, 1})), DTypeError,
               "nll_loss: expected a floating point input, got int64");
  EXPECT_ERROR(F::mse_loss(zeros({2, 3}), zeros({3, 2})), ShapeError,
               "mse_loss: input [2, 3] and target [3, 2] must have the same shape");
}

TEST_CASE("layer input errors", "[nn][layers][errors]") {
  nn::BatchNorm2d bn(4);
  EXPECT_ERROR(bn(zeros({2, 4, 3})), ShapeError, "expected 4D input (got 3D input)");
  EXPECT_ERROR(bn(zeros({2, 3, 2, 2})), ShapeError, "BatchNorm2d: expected 4 channels, got 3");
  EXPECT_ERROR(bn(zeros({1, 4, 1, 1})), ValueError,
               "Expected more than 1 value per channel when training, got input size [1, 4, 1, 1]");
  bn.eval();
  CHECK(bn(zeros({1, 4, 1, 1})).shape() == Shape{1, 4, 1, 1});  // eval uses the running stats

  nn::Linear lin(5, 3);
  EXPECT_ERROR(lin(zeros({2, 4})), ShapeError, "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)");
  nn::Network net;
  EXPECT_ERROR(net(zeros({2, 3, 28, 28})), ShapeError,
               "Given groups=1, weight of size [6, 1, 5, 5], expected input[2, 3, 28, 28] to have 1 channels, but "
               "got 3 channels instead");
  EXPECT_ERROR(nn::Dropout(1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5");
  EXPECT_ERROR(F::dropout(ones({2}), -0.25), ValueError,
               "dropout probability has to be between 0 and 1, but got -0.25");
  EXPECT_ERROR(nn::Conv2d(3, 4, 3, {.groups = 2}), ValueError, "in_channels must be divisible by groups");
  EXPECT_ERROR(nn::Conv2d(4, 3, 3, {.groups = 2}), ValueError, "out_channels must be divisible by groups");
  EXPECT_ERROR(nn::Linear(-1, 2), ValueError, "Linear: features must be non-negative, got -1 and 2");
  EXPECT_ERROR(F::linear(zeros({2, 3}), zeros({3})), ShapeError, "linear: expected a 2-D weight, got [3]");
  Tensor rm, rv;
  EXPECT_ERROR(F::batch_norm(zeros({4}), rm, rv, Tensor(), Tensor(), true), ShapeError,
               "batch_norm: expected at least 2-D input, got [4]");
  Tensor bias = zeros({3});
  EXPECT_ERROR(nn::init::kaiming_uniform_(bias), ValueError,
               "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
}

TEST_CASE("Dropout zeroes about p of the elements and scales the rest by 1/(1-p)", "[nn][layers][dropout]") {
  const int64_t n = 100000;
  const Tensor x = ones({n});
  for (double p : {0.3, 0.5, 0.9}) {
    INFO("p = " << p);
    Generator g(11);
    nn::Dropout drop(p, &g);
    const std::vector<double> y = values(drop(x));
    int64_t zeros_seen = 0;
    bool scaled = true;
    for (double v : y) {
      if (v == 0) ++zeros_seen;
      else scaled = scaled && v == static_cast<double>(static_cast<float>(1.0 / (1.0 - p)));
    }
    CHECK(scaled);
    // Binomial: the standard deviation of the fraction is at most 0.5/sqrt(n) = 0.0016.
    CHECK(static_cast<double>(zeros_seen) / n == Approx(p).margin(0.01));
    // The expectation is kept.
    double sum = 0;
    for (double v : y) sum += v;
    CHECK(sum / n == Approx(1.0).margin(p == 0.9 ? 0.05 : 0.02));
    // Eval: the identity.
    drop.eval();
    CHECK(values(drop(x)) == std::vector<double>(n, 1.0));
  }
  // p = 0 keeps everything, p = 1 drops everything, in training too.
  CHECK(values(F::dropout(x, 0.0)) == std::vector<double>(n, 1.0));
  CHECK(values(F::dropout(x, 1.0)) == std::vector<double>(n, 0.0));
  CHECK(values(nn::Dropout(1.0)(x)) == std::vector<double>(n, 0.0));
  // The same seed gives the same mask; the gradient is the mask scaled.
  Generator g1(5), g2(5), g3(6);
  const Tensor small = ones({64}).requires_grad_();
  const Tensor y1 = F::dropout(small, 0.5, true, &g1);
  CHECK(values(y1) == values(F::dropout(small, 0.5, true, &g2)));
  CHECK(values(y1) != values(F::dropout(small, 0.5, true, &g3)));
  y1.sum().backward();
  CHECK(values(small.grad()) == values(y1));  // x = 1, so dy/dx = y
}

TEST_CASE("default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), seeded", "[nn][layers][init]") {
  manual_seed(2024);
  nn::Linear lin(100, 80);
  nn::Conv2d conv(3, 40, 5);  // fan_in 75
  struct Case {
    const char* name;
    Tensor t;
    double bound;
  };
  const std::vector<Case> cases{{"linear weight", lin.weight, 0.1},
                                {"linear bias", lin.bias, 0.1},
                                {"conv weight", conv.weight, 1 / std::sqrt(75.0)},
                                {"conv bias", conv.bias, 1 / std::sqrt(75.0)}};
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<double> v = values(c.t);
    double lo = 1, hi = -1, sum = 0, sq = 0;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x), sum += x, sq += x * x;
    CHECK(lo >= -c.bound * (1 + 1e-6));
    CHECK(hi <= c.bound * (1 + 1e-6));
    if (v.size() < 1000) continue;  // the statistics below need many samples
    const double n = static_cast<double>(v.size());
    // Uniform on [-b, b]: mean 0 (sd b/sqrt(3n)), variance b^2/3; the range almost fills it.
    CHECK(std::fabs(sum / n) < 5 * c.bound / std::sqrt(3 * n));
    CHECK(sq / n == Approx(c.bound * c.bound / 3).epsilon(0.06));
    CHECK(lo < -0.99 * c.bound);
    CHECK(hi > 0.99 * c.bound);
    // Each quarter of [-b, b] holds about a quarter of the values.
    int64_t quarters[4] = {0, 0, 0, 0};
    for (double x : v) quarters[std::clamp(static_cast<int>((x + c.bound) / (c.bound / 2)), 0, 3)]++;
    for (int64_t q : quarters) CHECK(q / n == Approx(0.25).margin(0.03));
  }
  // The same seed, the same parameters.
  manual_seed(2024);
  nn::Linear again(100, 80);
  CHECK(values(again.weight) == values(lin.weight));
  CHECK(values(again.bias) == values(lin.bias));
  // Another seed, others.
  nn::Linear other(100, 80);
  CHECK(values(other.weight) != values(lin.weight));
}

// linear and linear_relu on the CPU are one recorded op (tensor/linear.cpp): one
// node, with the values and gradients of the composite matmul(x, W^T) + b (then
// relu) built from other ops in float64 (to 1e-12). In bfloat16 (float32 sums, one
// rounding) each value and gradient is within half a bfloat16 ulp (2^-8 relative)
// of that float64 composite run on the same bfloat16 values, plus 1e-5 for the
// float32 sums.
TEST_CASE("linear and linear_relu record one node with the composite's values and gradients", "[nn][layers]") {
  for (const bool relu : {false, true}) {
    for (const bool with_bias : {true, false}) {
      INFO("relu " << relu << ", bias " << with_bias);
      manual_seed(21);
      Tensor x = randn({7, 5}, kFloat64), w = randn({4, 5}, kFloat64), b = randn({4}, kFloat64);
      Tensor gy = randn({7, 4}, kFloat64);
      auto run = [&](bool fused, DType dt, DType values) {
        auto leaf = [&](const Tensor& t) { return t.to(values).to(dt).detach().requires_grad_(true); };
        Tensor xl = leaf(x), wl = leaf(w), bl = with_bias ? leaf(b) : Tensor();
        Tensor y;
        if (fused) {
          y = relu ? F::linear_relu(xl, wl, bl) : F::linear(xl, wl, bl);
          CHECK(std::string(y.grad_fn()->name()) == "LinearBackward0");
        } else {
          y = matmul(xl, wl.permute({1, 0}));
          if (with_bias) y = y + bl;
          if (relu) y = y.relu();
        }
        y.backward(gy.to(values).to(dt));
        std::vector<Tensor> out{y.detach(), xl.grad(), wl.grad(), with_bias ? bl.grad() : zeros({4}, dt)};
        for (Tensor& t : out) t = t.to(kFloat64);
        return out;
      };
      const auto got = run(true, kFloat64, kFloat64), want = run(false, kFloat64, kFloat64);
      for (size_t i = 0; i < got.size(); ++i) CHECK((got[i] - want[i]).abs().max().item<double>() < 1e-12);
      const auto got16 = run(true, kBFloat16, kBFloat16), want16 = run(false, kFloat64, kBFloat16);
      for (size_t i = 0; i < got16.size(); ++i) {
        INFO("output " << i);
        const Tensor bound = want16[i].abs() * (1.0 / 256) + 1e-5;
        CHECK(((got16[i] - want16[i]).abs() > bound).sum().item<int64_t>() == 0);
      }
    }
  }
}
