// The CUDA int8 Linear against the CPU one (same quantization, same integer sums,
// same epilogue formula). Built only with the CUDA backend; skipped without a GPU.
#include <catch2/catch.hpp>

#include "ember_config.h"

#if EMBER_HAVE_CUDA

#include <cmath>

#include "nn/nn.h"
#include "quant/quant.h"
#include "tensor/cuda.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

}  // namespace

TEST_CASE("CUDA int8 Linear matches the CPU", "[quant][cuda]") {
  if (!cuda::is_available()) {
    WARN("no CUDA device: skipped");
    return;
  }
  struct Case {
    int64_t m, k, n;
    quant::QScheme scheme;
    bool bias;
  };
  for (const Case& c : {Case{1, 784, 1024, quant::QScheme::PerChannel, true},
                        Case{64, 1024, 1024, quant::QScheme::PerChannel, true},
                        Case{37, 130, 70, quant::QScheme::PerTensor, false},
                        Case{3, 5, 3, quant::QScheme::PerChannel, true},
                        Case{129, 4096, 96, quant::QScheme::PerChannel, true}}) {
    INFO("m " << c.m << " k " << c.k << " n " << c.n);
    manual_seed(uint64_t(c.m * 1000 + c.k));
    nn::Linear lin(c.k, c.n, c.bias);
    auto q_cpu = quant::DynamicQuantizedLinear::from_float(lin, c.scheme);
    auto q_cuda = quant::DynamicQuantizedLinear::from_float(lin, c.scheme);
    q_cuda->to(Device("cuda:0"));
    const Tensor x = randn({c.m, c.k}) * 1.5;
    const std::vector<float> want = (*q_cpu)(x).to_vector<float>();
    const std::vector<float> got = (*q_cuda)(x.cuda()).to_vector<float>();
    REQUIRE(got.size() == want.size());
    // Identical codes and int32 sums; only the float epilogue's rounding may differ.
    double worst = 0, scale = 1e-3;
    for (float w : want) scale = std::max(scale, double(std::abs(w)));
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
    CHECK(worst <= 1e-5 * scale);
  }
  // The seed network quantized on the GPU predicts as on the CPU.
  manual_seed(3);
  auto net = std::make_shared<nn::Network>();
  net->eval();
  quant::quantize_dynamic(net);
  const Tensor img = rand({16, 1, 28, 28});
  const Tensor y_cpu = (*net)(img);
  net->to(Device("cuda:0"));
  const Tensor y_cuda = (*net)(img.cuda()).cpu();
  CHECK((y_cuda - y_cpu).abs().max().item<float>() <= 1e-3 * (y_cpu.abs().max().item<float>() + 1));
}

#endif
