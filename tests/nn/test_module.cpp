// nn::Module: what a module holds (parameters, buffers and children under PyTorch's
// dotted names, in definition order), in-place conversions (dtype, the meta device),
// train/eval, zero_grad, state dicts (round trip, strict and non-strict loading, the
// exact error text) and printing, against the reprs torch 1.13 gives for the same
// modules (tests/nn/make_layer_reference.py). Counts are worked out by hand.
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember.h"
#include "nn/nn.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/nn/data in the source tree (see tests/nn/meson.build)"
#endif

using namespace ember;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA_DIR) + "/layer_reference.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}

std::vector<std::string> names(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

std::vector<double> values(const Tensor& t) { return t.detach().to(kFloat64).to_vector<double>(); }

// A fixed batch of two 28x28 images.
Tensor images() {
  Generator g(7);
  return rand({2, 1, 28, 28}, kFloat32, &g);
}

// A module that registers what a test asks, to reach the protected registration API.
struct Custom : nn::Module {
  Custom() : Module("Custom") {}
  Tensor forward(const Tensor& x) override { return x; }
  using Module::register_buffer;
  using Module::register_module;
  using Module::register_parameter;
  using Module::replace_module;
};

// torch prints extra_repr lines before the children, each on its own line.
struct Wrapper : nn::Module {
  Wrapper() : Module("Wrapper") {
    register_module("inner", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                 std::make_shared<nn::ReLU>()}));
  }
  Tensor forward(const Tensor& x) override { return x; }
  std::string extra_repr() const override { return "scale=2"; }
};

}  // namespace

TEST_CASE("Network parameters: dotted names in definition order, shapes, counts", "[nn][module]") {
  manual_seed(0);
  nn::Network net;
  const nn::NamedTensors params = net.named_parameters();
  REQUIRE(names(params) == std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                    "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                                    "out.weight", "out.bias"});
  const std::vector<Shape> shapes{{6, 1, 5, 5}, {6},  {12, 6, 5, 5}, {12}, {120, 192},
                                  {120},        {60, 120}, {60},     {10, 60}, {10}};
  int64_t count = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].first);
    CHECK(params[i].second.shape() == shapes[i]);
    CHECK(params[i].second.requires_grad());
    CHECK(params[i].second.is_leaf());
    CHECK(params[i].second.dtype() == kFloat32);
    count += params[i].second.numel();
  }
  // 6*1*25+6 + 12*6*25+12 + 192*120+120 + 120*60+60 + 60*10+10
  CHECK(count == 156 + 1812 + 23160 + 7260 + 610);
  CHECK(count == 32998);
  // The same tensors the layers hold, not copies.
  CHECK(params[0].second.is_same(net.conv1->weight));
  CHECK(params[5].second.is_same(net.fc1->bias));
  CHECK(net.parameters().size() == 10);
  CHECK(net.parameters()[8].is_same(net.out->weight));
  // The network itself holds none; the layers hold theirs.
  CHECK(net.named_parameters(/*recurse=*/false).empty());
  CHECK(names(net.fc2->named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(net.named_buffers().empty());
  // state_dict: the same names (no buffers here), detached, sharing the parameters' data.
  const nn::StateDict sd = net.state_dict();
  CHECK(names(sd) == names(params));
  CHECK_FALSE(sd[0].second.requires_grad());
  CHECK(sd[0].second.data_ptr() == net.conv1->weight.data_ptr());
}

TEST_CASE("named_modules and nested Sequential names", "[nn][module]") {
  nn::Network net;
  std::vector<std::string> mods;
  for (const auto& [n, m] : net.named_modules()) mods.push_back(n + ":" + m->type_name());
  CHECK(mods == std::vector<std::string>{":Network", "conv1:Conv2d", "conv2:Conv2d", "fc1:Linear", "fc2:Linear",
                                         "out:Linear"});
  CHECK(net.named_modules()[0].second.get() == &net);
  CHECK(net.named_modules()[4].second == net.fc2);

  auto inner = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::ReLU>(), std::make_shared<nn::BatchNorm2d>(2)});
  nn::Sequential seq{std::make_shared<nn::Linear>(4, 3), inner};
  seq.add(std::make_shared<nn::Linear>(2, 1, /*bias=*/false), "head");
  CHECK(seq.size() == 3);
  CHECK(names(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "1.0.weight", "1.0.bias",
                                                                  "1.2.weight", "1.2.bias", "head.weight"});
  CHECK(names(seq.named_buffers()) ==
        std::vector<std::string>{"1.2.running_mean", "1.2.running_var", "1.2.num_batches_tracked"});
  mods.clear();
  for (const auto& [n, m] : seq.named_modules()) mods.push_back(n + ":" + m->type_name());
  CHECK(mods == std::vector<std::string>{":Sequential", "0:Linear", "1:Sequential", "1.0:Linear", "1.1:ReLU",
                                         "1.2:BatchNorm2d", "head:Linear"});
  std::vector<std::string> children;
  for (const auto& [n, m] : seq.named_children()) children.push_back(n);
  CHECK(children == std::vector<std::string>{"0", "1", "head"});
}

TEST_CASE("BatchNorm2d buffers are in state_dict but not in parameters", "[nn][module]") {
  nn::BatchNorm2d bn(4);
  CHECK(names(bn.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(names(bn.named_buffers()) == std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  // PyTorch's order: parameters, then buffers.
  CHECK(names(bn.state_dict()) ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  CHECK(bn.parameters().size() == 2);
  CHECK_FALSE(bn.running_mean.requires_grad());
  CHECK(bn.num_batches_tracked.dtype() == kInt64);
  CHECK(bn.num_batches_tracked.dim() == 0);
  CHECK(values(bn.running_mean) == std::vector<double>{0, 0, 0, 0});
  CHECK(values(bn.running_var) == std::vector<double>{1, 1, 1, 1});
  CHECK(values(bn.weight) == std::vector<double>{1, 1, 1, 1});
  CHECK(values(bn.bias) == std::vector<double>{0, 0, 0, 0});

  nn::BatchNorm2d plain(3, 1e-5, 0.1, /*affine=*/false, /*track_running_stats=*/false);
  CHECK(plain.named_parameters().empty());
  CHECK(plain.state_dict().empty());
}

TEST_CASE("registration refuses dotted, empty and duplicate names", "[nn][module][errors]") {
  Custom m;
  m.register_parameter("w", zeros({2}));
  EXPECT_ERROR(m.register_parameter("w", zeros({2})), ValueError, "attribute 'w' already exists in Custom");
  EXPECT_ERROR(m.register_buffer("w", zeros({2})), ValueError, "attribute 'w' already exists in Custom");
  EXPECT_ERROR(m.register_module("w", std::make_shared<nn::ReLU>()), ValueError,
               "attribute 'w' already exists in Custom");
  EXPECT_ERROR(m.register_parameter("a.b", zeros({2})), ValueError,
               "module attribute name must be non-empty and contain no '.', got 'a.b'");
  EXPECT_ERROR(m.register_buffer("", zeros({2})), ValueError,
               "module attribute name must be non-empty and contain no '.', got ''");
  EXPECT_ERROR(m.replace_module("child", std::make_shared<nn::ReLU>()), ValueError,
               "Custom has no submodule named 'child'");
  m.register_module("child", std::make_shared<nn::ReLU>());
  m.replace_module("child", std::make_shared<nn::Flatten>());
  CHECK(m.named_children()[0].second->type_name() == "Flatten");
  // A buffer registered without requires_grad, a parameter with it.
  m.register_buffer("b", ones({1}));
  CHECK(m.named_parameters()[0].second.requires_grad());
  CHECK_FALSE(m.named_buffers()[0].second.requires_grad());
}

TEST_CASE("to(float64) and half() convert in place: held handles, grads, integer buffers", "[nn][module]") {
  manual_seed(1);
  nn::Network net;
  const Tensor w = net.fc1->weight;  // a handle taken before the conversion
  const std::vector<double> w_before = values(w);
  net(images()).sum().backward();
  REQUIRE(w.grad().defined());
  REQUIRE(w.grad().dtype() == kFloat32);
  const std::vector<double> g_before = values(w.grad());

  nn::Module& same = net.to(kFloat64);
  CHECK(&same == &net);
  CHECK(w.dtype() == kFloat64);
  CHECK(net.fc1->weight.is_same(w));
  for (const auto& [n, p] : net.named_parameters()) {
    INFO(n);
    CHECK(p.dtype() == kFloat64);
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
    CHECK(p.grad().dtype() == kFloat64);
  }
  CHECK(values(w) == w_before);  // float32 -> float64 is exact
  CHECK(values(w.grad()) == g_before);
  // It computes in float64 now, and its gradients keep accumulating into the same handles.
  Tensor y = net(images().to(kFloat64));
  CHECK(y.dtype() == kFloat64);
  y.sum().backward();
  CHECK(w.grad().dtype() == kFloat64);
  const std::vector<double> twice = values(w.grad());
  for (size_t i = 0; i < twice.size(); i += 997) CHECK(twice[i] == Approx(2 * g_before[i]).margin(1e-6));
  // half() converts the gradients too.
  net.half();
  CHECK(w.dtype() == kFloat16);
  CHECK(w.grad().dtype() == kFloat16);
  CHECK(values(w.grad())[0] == Approx(twice[0]).epsilon(1e-3).margin(1e-4));
  net.to(kFloat64);

  // half(): floating tensors become float16 (rounded), integer buffers stay as they are.
  nn::BatchNorm2d bn(2);
  bn.train();
  bn(zeros({2, 2, 2, 2}) + arange(0.0, 16.0).reshape({2, 2, 2, 2}));
  const Tensor nbt = bn.num_batches_tracked, rm = bn.running_mean;
  bn.half();
  CHECK(bn.weight.dtype() == kFloat16);
  CHECK(rm.dtype() == kFloat16);
  CHECK(bn.running_var.dtype() == kFloat16);
  CHECK(nbt.dtype() == kInt64);
  CHECK(nbt.is_same(bn.num_batches_tracked));
  CHECK(nbt.item<int64_t>() == 1);
  // running_mean after one step from zeros: 0.1 * [5.5, 9.5] (channel means of 0..15), in float16.
  const std::vector<double> rm16 = values(rm);
  CHECK(rm16[0] == Approx(0.55).margin(1e-3));
  CHECK(rm16[1] == Approx(0.95).margin(1e-3));
  bn.float32();
  CHECK(bn.weight.dtype() == kFloat32);
  CHECK(nbt.dtype() == kInt64);

  EXPECT_ERROR(net.to(kInt32), DTypeError, "Module.to only accepts floating point dtypes, but got int32");
  CHECK(w.dtype() == kFloat64);
}

TEST_CASE("to(kMeta) moves a module to the meta device; CPU input then names the layer op", "[nn][module][errors]") {
  nn::Network net;
  const Tensor w = net.conv1->weight;
  net(images()).sum().backward();
  net.to(kMeta);
  CHECK(w.device() == kMeta);
  for (const auto& [n, p] : net.named_parameters()) {
    INFO(n);
    CHECK(p.device() == kMeta);
    CHECK(p.requires_grad());
    CHECK(p.grad().device() == kMeta);
  }
  EXPECT_ERROR(net(images()), DeviceError,
               "Expected object of device type meta but got device type cpu for argument #1 'self' in call to "
               "conv2d_forward");
  EXPECT_ERROR((*net.fc1)(zeros({2, 192})), DeviceError,
               "Expected object of device type meta but got device type cpu for argument #1 'self' in call to "
               "linear_forward");
  // Meta in, meta out: shapes without data.
  const Tensor y = net(zeros({3, 1, 28, 28}, kMeta));
  CHECK(y.device() == kMeta);
  CHECK(y.shape() == Shape{3, 10});

  nn::BatchNorm2d bn(3);
  bn.to(kMeta);
  CHECK(bn.num_batches_tracked.device() == kMeta);
  CHECK(bn.num_batches_tracked.dtype() == kInt64);
  EXPECT_ERROR(bn(zeros({2, 3, 2, 2})), DeviceError,
               "Expected object of device type meta but got device type cpu for argument #1 'self' in call to "
               "batch_norm_forward");
  // The reverse: CPU parameters, meta input.
  nn::Linear lin(4, 2);
  EXPECT_ERROR(lin(zeros({1, 4}, kMeta)), DeviceError,
               "Expected object of device type cpu but got device type meta for argument #1 'self' in call to "
               "linear_forward");
}

TEST_CASE("train() and eval() reach every descendant", "[nn][module]") {
  auto inner = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Dropout>(0.5)});
  nn::Sequential seq{std::make_shared<nn::Linear>(4, 4), inner, std::make_shared<nn::BatchNorm2d>(1)};
  for (const auto& [n, m] : seq.named_modules()) CHECK(m->is_training());
  nn::Module& r = seq.eval();
  CHECK(&r == &seq);
  for (const auto& [n, m] : seq.named_modules()) {
    INFO(n);
    CHECK_FALSE(m->is_training());
  }
  // In eval, the dropout inside is the identity.
  const Tensor x = ones({3, 4});
  CHECK(values((*inner)(x)) == values(x));
  seq.train();
  for (const auto& [n, m] : seq.named_modules()) CHECK(m->is_training());
  seq.train(false);
  CHECK_FALSE(inner->named_children()[0].second->is_training());
}

TEST_CASE("zero_grad drops or zeroes every parameter's gradient", "[nn][module]") {
  nn::Network net;
  auto run = [&] { net(images()).sum().backward(); };
  run();
  for (const Tensor& p : net.parameters()) REQUIRE(p.grad().defined());
  const Tensor g = net.fc2->weight.grad();
  net.zero_grad(/*set_to_none=*/false);
  for (const auto& [n, p] : net.named_parameters()) {
    INFO(n);
    REQUIRE(p.grad().defined());
    CHECK(values(p.grad()) == std::vector<double>(p.numel(), 0.0));
  }
  // Zeroed in place: an earlier handle to the gradient sees the zeros.
  CHECK(values(g) == std::vector<double>(g.numel(), 0.0));
  run();
  const std::vector<double> fresh = values(net.out->bias.grad());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
  run();
  CHECK(values(net.out->bias.grad()) == fresh);  // accumulation starts again from nothing
  // The loss sums logits, so d/d(out.bias) is the batch size for every class.
  CHECK(fresh == std::vector<double>(10, 2.0));
}

TEST_CASE("state_dict round trip: a fresh Network gives identical outputs", "[nn][module]") {
  manual_seed(3);
  nn::Network a;
  manual_seed(4);
  nn::Network b;
  const Tensor x = images();
  REQUIRE(values(a(x)) != values(b(x)));
  const Tensor handle = b.fc1->weight;
  b.load_state_dict(a.state_dict());
  CHECK(values(a(x)) == values(b(x)));
  // Loaded into the existing tensors: handles survive and still train.
  CHECK(handle.is_same(b.fc1->weight));
  CHECK(handle.requires_grad());
  CHECK(handle.data_ptr() != a.fc1->weight.data_ptr());
  // A loaded copy, not a shared one: changing a does not change b.
  {
    NoGradGuard no_grad;
    a.out->bias.add_(1.0);
  }
  CHECK(values(a(x)) != values(b(x)));

  // Values of another dtype are converted to the model's.
  nn::Network c;
  nn::StateDict sd64;
  for (const auto& [n, t] : b.state_dict()) sd64.emplace_back(n, t.to(kFloat64));
  c.load_state_dict(sd64);
  CHECK(c.conv1->weight.dtype() == kFloat32);
  CHECK(values(c(x)) == values(b(x)));

  // Buffers travel too.
  nn::BatchNorm2d bn1(2), bn2(2);
  bn1(arange(0.0, 16.0).reshape({2, 2, 2, 2}));
  bn2.load_state_dict(bn1.state_dict());
  CHECK(values(bn2.running_mean) == values(bn1.running_mean));
  CHECK(values(bn2.running_var) == values(bn1.running_var));
  CHECK(bn2.num_batches_tracked.item<int64_t>() == 1);
}

TEST_CASE("load_state_dict errors name missing, unexpected and mismatched keys", "[nn][module][errors]") {
  nn::Network net;
  const nn::StateDict good = nn::Network().state_dict();

  nn::StateDict missing(good.begin(), good.end() - 1);  // no out.bias
  EXPECT_ERROR(net.load_state_dict(missing), ValueError,
               "Error(s) in loading state_dict for Network:\n\tMissing key(s) in state_dict: \"out.bias\". ");

  nn::StateDict two_missing;
  for (const auto& [n, t] : good)
    if (n != "conv2.bias" && n != "fc1.weight") two_missing.emplace_back(n, t);
  EXPECT_ERROR(net.load_state_dict(two_missing), ValueError,
               "Error(s) in loading state_dict for Network:\n\tMissing key(s) in state_dict: \"conv2.bias\", "
               "\"fc1.weight\". ");

  nn::StateDict unexpected = good;
  unexpected.emplace_back("fc3.weight", zeros({2, 2}));
  unexpected.emplace_back("extra", zeros({}));
  EXPECT_ERROR(net.load_state_dict(unexpected), ValueError,
               "Error(s) in loading state_dict for Network:\n\tUnexpected key(s) in state_dict: \"fc3.weight\", "
               "\"extra\". ");

  nn::StateDict mismatched = good;
  mismatched[0].second = zeros({6, 1, 3, 3});
  mismatched[9].second = zeros({1, 10});
  EXPECT_ERROR(net.load_state_dict(mismatched), ValueError,
               "Error(s) in loading state_dict for Network:"
               "\n\tsize mismatch for conv1.weight: copying a param with shape [6, 1, 3, 3] from checkpoint, the shape "
               "in current model is [6, 1, 5, 5]."
               "\n\tsize mismatch for out.bias: copying a param with shape [1, 10] from checkpoint, the shape in "
               "current model is [10].");

  // All three at once, in PyTorch's order: missing, unexpected, then size mismatches.
  nn::StateDict all(good.begin() + 1, good.end());  // no conv1.weight
  all[0].second = zeros({5});                        // conv1.bias is [6]
  all.emplace_back("conv1.weight_typo", zeros({6, 1, 5, 5}));
  EXPECT_ERROR(net.load_state_dict(all), ValueError,
               "Error(s) in loading state_dict for Network:"
               "\n\tMissing key(s) in state_dict: \"conv1.weight\". "
               "\n\tUnexpected key(s) in state_dict: \"conv1.weight_typo\". "
               "\n\tsize mismatch for conv1.bias: copying a param with shape [5] from checkpoint, the shape in current "
               "model is [6].");

  // A nested module's error names the outer module.
  nn::Sequential seq{std::make_shared<nn::BatchNorm2d>(2)};
  EXPECT_ERROR(seq.load_state_dict({}), ValueError,
               "Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"0.weight\", "
               "\"0.bias\", \"0.running_mean\", \"0.running_var\", \"0.num_batches_tracked\". ");
}

TEST_CASE("a failed load changes nothing; non-strict loads what matches", "[nn][module]") {
  nn::Network net;
  const nn::StateDict before = net.state_dict();
  std::vector<std::vector<double>> saved;
  for (const auto& [n, t] : before) saved.push_back(values(t));

  // Every key present with new values, but one has the wrong shape: nothing is copied.
  nn::StateDict bad;
  for (const auto& [n, t] : before) bad.emplace_back(n, full(t.shape(), 0.5));
  bad.back().second = zeros({11});
  REQUIRE_THROWS_AS(net.load_state_dict(bad), ValueError);
  REQUIRE_THROWS_AS(net.load_state_dict(bad, /*strict=*/false), ValueError);  // shapes are checked even then
  // A missing key with good values for the rest: nothing is copied either.
  nn::StateDict partial(bad.begin(), bad.end() - 1);
  REQUIRE_THROWS_AS(net.load_state_dict(partial), ValueError);
  const nn::StateDict after = net.state_dict();
  for (size_t i = 0; i < after.size(); ++i) {
    INFO(after[i].first);
    CHECK(values(after[i].second) == saved[i]);
  }

  // Non-strict: the matching keys load, missing ones keep their values, unexpected ones are ignored.
  partial.emplace_back("not.a.key", ones({3}));
  net.load_state_dict(partial, /*strict=*/false);
  const nn::StateDict loaded = net.state_dict();
  for (size_t i = 0; i + 1 < loaded.size(); ++i) {
    INFO(loaded[i].first);
    CHECK(values(loaded[i].second) == std::vector<double>(loaded[i].second.numel(), 0.5));
  }
  CHECK(values(loaded.back().second) == saved.back());  // out.bias was missing
}

TEST_CASE("printing matches PyTorch's repr", "[nn][module][repr]") {
  const nlohmann::json& ref = reference();
  nn::Network net;
  CHECK(net.str() == ref.at("network").at("repr").get<std::string>());
  std::ostringstream os;
  os << net;
  CHECK(os.str() == net.str());

  CHECK(nn::Conv2d(4, 4, {3, 2}, {.stride = {2, 1}, .padding = {1, 2}, .dilation = {2, 1}, .groups = 2}).str() ==
        ref.at("conv2d").at("repr").get<std::string>());
  CHECK(nn::Conv2d(4, 2, 3, {.bias = false}).str() == ref.at("conv2d").at("plain_repr").get<std::string>());
  CHECK(nn::Linear(5, 3).str() == ref.at("linear").at("repr").get<std::string>());
  CHECK(nn::BatchNorm2d(3).str() == ref.at("batch_norm").at("repr").get<std::string>());
  CHECK(nn::MaxPool2d({3, 3}, Pair{2, 2}, {1, 1}, {1, 1}, true).str() ==
        ref.at("pool").at("max_k3_s2_p1_ceil_repr").get<std::string>());
  CHECK(nn::AvgPool2d({3, 3}, Pair{2, 2}, {1, 1}).str() == ref.at("pool").at("avg_k3_s2_p1_repr").get<std::string>());

  const nlohmann::json& r = ref.at("repr");
  CHECK(nn::Dropout().str() == r.at("dropout").get<std::string>());
  CHECK(nn::Dropout(0.25).str() == r.at("dropout_0.25").get<std::string>());
  CHECK(nn::Dropout(0.0).str() == r.at("dropout_0").get<std::string>());
  CHECK(nn::Dropout(1.0).str() == r.at("dropout_1").get<std::string>());
  CHECK(nn::Flatten().str() == r.at("flatten").get<std::string>());
  CHECK(nn::ReLU().str() == r.at("relu").get<std::string>());
  CHECK(nn::MaxPool2d(2).str() == r.at("maxpool2").get<std::string>());
  CHECK(nn::AvgPool2d(2).str() == r.at("avgpool2").get<std::string>());
  CHECK(nn::BatchNorm2d(6, 1e-3, 0.2, false, false).str() == r.at("batchnorm").get<std::string>());
  CHECK(nn::Linear(3, 2, false).str() == r.at("linear_nobias").get<std::string>());
  CHECK(nn::Sequential().str() == r.at("empty_sequential").get<std::string>());
  auto inner = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.1)});
  nn::Sequential nested{std::make_shared<nn::Linear>(4, 3), inner, std::make_shared<nn::Flatten>()};
  CHECK(nested.str() == r.at("nested").get<std::string>());
  CHECK(Wrapper().str() == r.at("extra_and_children").get<std::string>());

  // The Sequential of the layer tests.
  nn::Sequential seq{std::make_shared<nn::Conv2d>(2, 3, 3, nn::Conv2dOptions{.padding = {1, 1}}),
                     std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(12, 4)};
  CHECK(seq.str() == ref.at("sequential").at("repr").get<std::string>());
}

TEST_CASE("repr_float writes floats as Python's repr", "[nn][module][repr]") {
  // Python 3: [repr(x) for x in [0.5, 1e-05, 0.0001, 100.0, 1e16, 0.1, 1/3, 123.456, 2.5e-7, -0.0, 1e15, 0.3]]
  CHECK(nn::repr_float(0.5) == "0.5");
  CHECK(nn::repr_float(1e-5) == "1e-05");
  CHECK(nn::repr_float(1e-4) == "0.0001");
  CHECK(nn::repr_float(100.0) == "100.0");
  CHECK(nn::repr_float(1e16) == "1e+16");
  CHECK(nn::repr_float(0.1) == "0.1");
  CHECK(nn::repr_float(1.0 / 3.0) == "0.3333333333333333");
  CHECK(nn::repr_float(123.456) == "123.456");
  CHECK(nn::repr_float(2.5e-7) == "2.5e-07");
  CHECK(nn::repr_float(-0.0) == "-0.0");
  CHECK(nn::repr_float(1e15) == "1000000000000000.0");
  CHECK(nn::repr_float(0.3) == "0.3");
  CHECK(nn::repr_float(0.0) == "0.0");
  CHECK(nn::repr_float(1.0) == "1.0");
}
