// The CUDA int8 Linear against the CPU one (same quantization, same integer sums,
// same epilogue formula), and the int8 GEMM's int32 sums against a naive loop.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <random>

#include "cuda/int8_sums.h"
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cuda/gemm_int8.h"
#include "kernels/cuda/runtime.h"
#include "nn/nn.h"
#include "quant/quant.h"
#include "tensor/cuda.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

}  // namespace

TEST_CASE("CUDA int8 GEMM: exact int32 sums", "[quant][cuda]") {
  std::mt19937 g(2);
  std::uniform_int_distribution<int> ua(0, 255), uw(-128, 127), pick(0, 3);
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {33, 65, 300}, {64, 4096, 1024}, {7, 10, 5}}) {
    INFO("m " << m << " n " << n << " k " << k);
    const int64_t kp = cuda::int8_padded_k16(k);
    Tensor a = zeros({m, kp}, kUInt8), w = zeros({n, kp}, kInt8);
    auto* ap = a.data_ptr<uint8_t>();
    auto* wp = w.data_ptr<int8_t>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) ap[i * kp + p] = uint8_t(pick(g) ? ua(g) : 255);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) wp[j * kp + p] = int8_t(pick(g) ? uw(g) : -128);
    CHECK(cuda_test::wrong_int8_sums(a, w, m, n, kp) == 0);  // the padding is zeros on both sides
  }
}

TEST_CASE("CUDA int8 Linear matches the CPU", "[quant][cuda]") {
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

TEST_CASE("CUDA int8 Linear turns an input with inf or NaN into all-NaN outputs", "[quant][cuda]") {
  // The CPU raises ValueError (tests/quant/test_dynamic_linear.cpp); the GPU, which
  // does not synchronize to check, must not return finite numbers made from a
  // broken scale. One special value among 64 x 300 inputs, in a row other than the
  // first and a block other than the first, for each special and each range mode.
  manual_seed(12);
  nn::Linear lin(300, 40, true);
  for (bool reduce_range : {false, true})
    for (float special : {NAN, INFINITY, -INFINITY}) {
      INFO("special " << special << ", reduce_range " << reduce_range);
      auto q = quant::DynamicQuantizedLinear::from_float(lin, quant::QScheme::PerChannel);
      q->reduce_range = reduce_range;
      q->to(Device("cuda:0"));
      Tensor x = randn({64, 300});
      x.data_ptr<float>()[50 * 300 + 123] = special;
      const std::vector<float> y = (*q)(x.cuda()).to_vector<float>();
      REQUIRE(y.size() == 64u * 40u);
      size_t nans = 0;
      for (float v : y) nans += std::isnan(v) ? 1 : 0;
      CHECK(nans == y.size());
      // The next call with clean input is unaffected.
      const std::vector<float> clean = (*q)(randn({64, 300}).cuda()).to_vector<float>();
      for (float v : clean) REQUIRE(std::isfinite(v));
    }
}
