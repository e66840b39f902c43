// DynamicQuantizedLinear and quantize_dynamic: the layer's output against the
// exact float64 value of its own quantized arithmetic, against float32 within the
// documented bound (docs/quant.md), against PyTorch's quantized Linear, nested
// models, printing, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/isa.h"
#include "nn/nn.h"
#include "quant/quant.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// For each output, the float32 value and the documented bound on |int8 - float32|:
// (x_scale / 2) * sum_p |w[j][p]| + (w_scale[j] / 2) * sum_p (|x[i][p]| + x_scale / 2).
struct Expected {
  std::vector<double> y, bound;
};

Expected float_and_bound(const Tensor& x, const nn::Linear& lin, const quant::DynamicQuantizedLinear& q) {
  const int64_t m = x.size(0), k = x.size(1), n = lin.out_features;
  const std::vector<float> xv = x.to_vector<float>(), wv = lin.weight.detach().to_vector<float>();
  const std::vector<float> bv = lin.bias.detach().to_vector<float>();
  const std::vector<float> ws = q.weight_scale.to_vector<float>();
  const quant::QParams xp = quant::choose_qparams(x);
  Expected e;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double y = bv[size_t(j)], wabs = 0, xabs = 0;
      for (int64_t p = 0; p < k; ++p) {
        y += double(xv[size_t(i * k + p)]) * wv[size_t(j * k + p)];
        wabs += std::abs(wv[size_t(j * k + p)]);
        xabs += std::abs(xv[size_t(i * k + p)]) + xp.scale / 2;
      }
      const double sw = ws[ws.size() == 1 ? 0 : size_t(j)];
      e.y.push_back(y);
      e.bound.push_back(xp.scale / 2 * wabs + sw / 2 * xabs);
    }
  return e;
}

std::shared_ptr<nn::Linear> seeded_linear(int64_t in, int64_t out, uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Linear>(in, out);
}

}  // namespace

TEST_CASE("quantized Linear: exact quantized arithmetic and the float32 bound", "[quant][linear]") {
  for (auto scheme : {quant::QScheme::PerChannel, quant::QScheme::PerTensor})
    for (const char* kernel : {"generic", "avx512_vnni"}) {  // the levels of the two int8 kernels
      if (!cpu::set_isa(kernel)) continue;
      INFO("kernel " << kernel << ", per channel " << (scheme == quant::QScheme::PerChannel));
      auto lin = seeded_linear(67, 45, 11);
      auto q = quant::DynamicQuantizedLinear::from_float(*lin, scheme);
      manual_seed(12);
      const Tensor x = randn({9, 67}) * 2.0 + 0.5;
      const std::vector<float> got = (*q)(x).to_vector<float>();

      // 1. Exactly the layer's own arithmetic: x quantized as documented, codes multiplied in float64.
      const quant::QParams xp = quant::choose_qparams(x);
      const Tensor xq = quant::dequantize(quant::quantize_per_tensor(x, xp.scale, xp.zero_point, kUInt8));
      const std::vector<float> xd = xq.to_vector<float>(), wd = q->dequantized_weight().to_vector<float>();
      const std::vector<float> b = q->bias.to_vector<float>();
      double worst = 0;
      for (int64_t i = 0; i < 9; ++i)
        for (int64_t j = 0; j < 45; ++j) {
          double s = b[size_t(j)], mag = std::abs(b[size_t(j)]);
          for (int64_t p = 0; p < 67; ++p) {
            s += double(xd[size_t(i * 67 + p)]) * wd[size_t(j * 67 + p)];
            mag += std::abs(double(xd[size_t(i * 67 + p)]) * wd[size_t(j * 67 + p)]);
          }
          worst = std::max(worst, std::abs(got[size_t(i * 45 + j)] - s) / (1e-6 * mag + 1e-7));
        }
      CHECK(worst <= 1.0);

      // 2. Against float32 within the documented bound.
      const Expected e = float_and_bound(x, *lin, *q);
      int64_t over = 0;
      double used = 0;
      for (size_t i = 0; i < e.y.size(); ++i) {
        const double err = std::abs(got[i] - e.y[i]);
        over += err > e.bound[i] * 1.0001 + 1e-5;
        used = std::max(used, err / e.bound[i]);
      }
      CHECK(over == 0);
      CHECK(used > 0.01);  // the outputs did change: this is not the float layer
    }
  cpu::set_isa("auto");
}

TEST_CASE("quantized Linear matches PyTorch's quantize_dynamic Linear", "[quant][linear]") {
  std::ifstream f(std::string(EMBER_TEST_DATA_DIR) + "/quant_reference.json");
  REQUIRE(f.good());
  const nlohmann::json ref = nlohmann::json::parse(f)["linear"];
  auto lin = std::make_shared<nn::Linear>(6, 4);
  {
    NoGradGuard ng;
    lin->weight.copy_(tensor(ref["weight"].get<std::vector<float>>(), {4, 6}));
    lin->bias.copy_(tensor(ref["bias"].get<std::vector<float>>()));
  }
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{lin});
  quant::quantize_dynamic(seq);
  CHECK(seq->str() == ref["repr"].get<std::string>());
  auto q = std::dynamic_pointer_cast<quant::DynamicQuantizedLinear>(seq->named_children()[0].second);
  REQUIRE(q);
  q->reduce_range = true;  // PyTorch 1.13's dynamic Linear quantizes activations to 7 bits
  const Tensor x = tensor(ref["input"].get<std::vector<float>>(), {3, 6});
  const std::vector<float> got = (*seq)(x).to_vector<float>();
  const std::vector<float> want = ref["quantized_output"].get<std::vector<float>>();
  const std::vector<float> fl = ref["float_output"].get<std::vector<float>>();
  REQUIRE(got.size() == want.size());
  // Same scheme, same parameters, same codes: equal up to float32 rounding.
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5 * (std::abs(fl[i]) + 1));
  // With the full 8 bits (Ember's default) the result is closer to float32.
  q->reduce_range = false;
  const std::vector<float> full = (*seq)(x).to_vector<float>();
  double err7 = 0, err8 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err7 += std::abs(want[i] - fl[i]);
    err8 += std::abs(full[i] - fl[i]);
  }
  CHECK(err8 < err7);
}

TEST_CASE("quantize_dynamic replaces Linear layers of nested modules in place", "[quant][quantize_dynamic]") {
  manual_seed(1);
  auto inner = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 8, false)});
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(4, 8), "proj").add(std::make_shared<nn::ReLU>()).add(inner, "block");
  model->eval();
  const Tensor x = randn({5, 4});
  const Tensor before = (*model)(x);
  auto same = quant::quantize_dynamic(model);
  CHECK(same.get() == model.get());
  std::vector<std::string> kinds;
  for (auto& [name, m] : model->named_modules()) kinds.push_back(name + ":" + m->type_name());
  CHECK(kinds == std::vector<std::string>{":Sequential", "proj:DynamicQuantizedLinear", "1:ReLU", "block:Sequential",
                                          "block.0:DynamicQuantizedLinear", "block.1:ReLU",
                                          "block.2:DynamicQuantizedLinear"});
  CHECK(model->parameters().empty());
  CHECK(model->str() ==
        "Sequential(\n"
        "  (proj): DynamicQuantizedLinear(in_features=4, out_features=8, dtype=torch.qint8, "
        "qscheme=torch.per_channel_affine)\n"
        "  (1): ReLU()\n"
        "  (block): Sequential(\n"
        "    (0): DynamicQuantizedLinear(in_features=8, out_features=16, dtype=torch.qint8, "
        "qscheme=torch.per_channel_affine)\n"
        "    (1): ReLU()\n"
        "    (2): DynamicQuantizedLinear(in_features=16, out_features=8, dtype=torch.qint8, "
        "qscheme=torch.per_channel_affine)\n"
        "  )\n"
        ")");
  auto names = [&] {
    std::vector<std::string> v;
    for (auto& [n, t] : model->state_dict()) v.push_back(n + ":" + dtype_name(t.dtype()));
    return v;
  }();
  CHECK(names == std::vector<std::string>{"proj.weight:int8", "proj.weight_scale:float32",
                                          "proj.weight_zero_point:int32", "proj.bias:float32",
                                          "block.0.weight:int8", "block.0.weight_scale:float32",
                                          "block.0.weight_zero_point:int32", "block.0.bias:float32",
                                          "block.2.weight:int8", "block.2.weight_scale:float32",
                                          "block.2.weight_zero_point:int32"});
  const Tensor after = (*model)(x);
  CHECK(after.shape() == before.shape());
  const double diff = (after - before).abs().max().item<double>();
  CHECK(diff > 0);
  CHECK(diff < 0.05 * before.abs().max().item<double>());

  // The seed network's Linear layers run quantized too.
  auto net = std::make_shared<nn::Network>();
  net->eval();
  const Tensor img = rand({2, 1, 28, 28});
  const Tensor yf = (*net)(img);
  quant::quantize_dynamic(net, {"Linear"}, kInt8, quant::QScheme::PerTensor);
  CHECK(net->named_children()[2].second->str() ==
        "DynamicQuantizedLinear(in_features=192, out_features=120, dtype=torch.qint8, qscheme=torch.per_tensor_affine)");
  const Tensor yq = (*net)(img);
  CHECK((yq - yf).abs().max().item<double>() > 0);
  CHECK((yq - yf).abs().max().item<double>() < 0.05 * yf.abs().max().item<double>() + 1e-3);

  // A bare Linear comes back as a new quantized layer.
  auto lone = std::make_shared<nn::Linear>(3, 2);
  auto ql = quant::quantize_dynamic(lone);
  CHECK(ql->type_name() == "DynamicQuantizedLinear");
  CHECK(lone->type_name() == "Linear");
}

TEST_CASE("quantized Linear: shapes, edge sizes and errors", "[quant][linear][errors]") {
  auto lin = seeded_linear(5, 3, 2);
  auto q = quant::DynamicQuantizedLinear::from_float(*lin);
  CHECK((*q)(randn({2, 4, 5})).shape() == Shape{2, 4, 3});
  CHECK((*q)(randn({5})).shape() == Shape{3});
  CHECK((*q)(zeros({0, 5})).shape() == Shape{0, 3});
  // A non-contiguous input gives the same result as its contiguous copy.
  const Tensor xt = randn({5, 6}).t();
  CHECK(((*q)(xt) - (*q)(xt.contiguous())).abs().max().item<float>() == 0.0f);
  // in_features = 0: the output is the bias.
  auto empty_in = quant::DynamicQuantizedLinear::from_float(*seeded_linear(0, 4, 3));
  CHECK(((*empty_in)(zeros({2, 0})) - empty_in->bias).abs().max().item<float>() == 0.0f);
  // An all-zero input gives exactly the bias (0 is exactly representable).
  CHECK(((*q)(zeros({3, 5})) - q->bias).abs().max().item<float>() == 0.0f);
  // The meta device gives shapes only.
  auto qm = quant::DynamicQuantizedLinear::from_float(*lin);
  qm->to(kMeta);
  CHECK((*qm)(zeros({7, 5}, kMeta)).shape() == Shape{7, 3});

  CHECK(error_text([&] { (*q)(randn({2, 4})); }) == "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)");
  CHECK(error_text([&] { (*q)(randn({2, 5}).to(kFloat64)); }) == "linear_dynamic: expected a float32 input, got float64");
  CHECK(error_text([&] { (*q)(zeros({2, 5}, kMeta)); }) ==
        "Expected object of device type cpu but got device type meta for argument #1 'self' in call to linear_dynamic");
  CHECK(error_text([&] { (*q)(tensor({1.0f, NAN, 0.0f, 0.0f, 0.0f})); }) ==
        "linear_dynamic: the input holds inf or NaN, which cannot be quantized");
  CHECK(error_text([&] { quant::quantize_dynamic(lin, {"Conv2d"}); }) ==
        "quantize_dynamic: Ember can quantize Linear layers only, got 'Conv2d'");
  CHECK(error_text([&] { quant::quantize_dynamic(lin, {"Linear"}, kFloat16); }) ==
        "quantize_dynamic: only dtype int8 is supported, got float16");
  // Changing a buffer in place repacks the weights; a bad value is refused.
  {
    NoGradGuard ng;
    q->weight_zero_point.fill_(3);
  }
  CHECK(error_text([&] { (*q)(randn({1, 5})); }) ==
        "DynamicQuantizedLinear: weight_zero_point must be 0 (int8 weights are quantized symmetrically), got 3 at "
        "index 0");
}

// The first forward packs the int8 weights; concurrent first calls on one layer
// used to pack into the same members at once (a data race: a ThreadSanitizer build
// reports it; a plain build may or may not show wrong values). Eight threads released
// together must each get the serial result bit for bit.
TEST_CASE("quantized Linear: concurrent first calls match serial calls", "[quant][linear][threads]") {
  auto lin = seeded_linear(96, 40, 21);
  manual_seed(22);
  const Tensor x = randn({5, 96});
  const std::vector<float> serial =
      (*quant::DynamicQuantizedLinear::from_float(*lin, quant::QScheme::PerChannel))(x).to_vector<float>();
  for (int trial = 0; trial < 20; ++trial) {
    auto q = quant::DynamicQuantizedLinear::from_float(*lin, quant::QScheme::PerChannel);
    std::vector<std::vector<float>> got(8);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        NoGradGuard no_grad;
        ++ready;
        while (ready.load() < 8) std::this_thread::yield();
        got[size_t(t)] = (*q)(x).to_vector<float>();
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 8; ++t) CHECK(got[size_t(t)] == serial);
  }
}
