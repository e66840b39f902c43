// The quant suite: a 4096x4096 Linear at batch 1 and 64 as Ember's int8
// DynamicQuantizedLinear (per output channel, its default, and per tensor), next to
// Ember's float32 Linear and to PyTorch's quantize_dynamic Linear
// (bench/peers/torch_quant_linear.py: oneDNN, per tensor as PyTorch's default
// qconfig and per channel) in the same run. Times are medians of single forward
// calls; Ember and PyTorch alternate in rounds and each keeps its best median. With
// --device cuda (a CUDA build), the CUDA int8 Linear against a float16 Linear
// (cuBLAS) at the same sizes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "bench/harness.h"
#include "bench/torch_peer.h"
#include "ember.h"
#include "kernels/cpu/gemm_int8.h"
#include "nn/nn.h"
#include "quant/quant.h"

#if EMBER_HAVE_CUDA
#include <cublasLt.h>

#include "kernels/cuda/allocator.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm_int8.h"
#include "kernels/cuda/runtime.h"
#include "nn/functional.h"
#include "tensor/cuda.h"
#endif

namespace ember::bench {
namespace {

constexpr int64_t kFeatures = 4096;
constexpr int kRounds = 2;

double load1() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

// Median ms of one call, after warm-up.
double median_ms(const std::function<void()>& f, int64_t batch) {
  const double min_s = batch == 1 ? 0.5 : 1.0;
  return measure(f, 0.3, min_s, 10).median_s * 1e3;
}

#if EMBER_HAVE_CUDA
// cuBLASLt's int8 GEMM, the peer of the hand-written one: s8 x s8 -> s32 at the same
// sizes, in the "TN" form its integer kernels require (column-major C^T [n, m] =
// W^T' . X^T with W stored [n, k] and X [m, k], both k-contiguous). GEMM only: no
// quantization of the input and no epilogue, so it is a lower bound for a layer.
double cublaslt_int8_us(int64_t m, int64_t n, int64_t k, int device, int calls) {
  cudaStream_t stream = cuda::stream(device);
  cuda::ScratchBuffer a(size_t(n * k), device, stream), b(size_t(m * k), device, stream),
      c(sizeof(int32_t) * size_t(m * n), device, stream);
  EMBER_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, size_t(n * k), stream));
  EMBER_CUDA_CHECK(cudaMemsetAsync(b.get(), 1, size_t(m * k), stream));
  cublasLtHandle_t lt;
  EMBER_CUDA_CHECK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op;
  EMBER_CUDA_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  EMBER_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  EMBER_CUDA_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t la, lb, lc;
  EMBER_CUDA_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, uint64_t(k), uint64_t(n), k));
  EMBER_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, uint64_t(k), uint64_t(m), k));
  EMBER_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, uint64_t(n), uint64_t(m), n));
  const int32_t alpha = 1, beta = 0;
  auto run = [&] {
    EMBER_CUDA_CHECK(cublasLtMatmul(lt, op, &alpha, a.get(), la, b.get(), lb, &beta, c.get(), lc, c.get(), lc,
                                    nullptr, nullptr, 0, stream));
  };
  const double us = measure([&] {
                      for (int i = 0; i < calls; ++i) run();
                      EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
                    }, 0.3, 0.5, 5)
                        .median_s * 1e6 / calls;
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(lt);
  return us;
}

void cuda_cases(const Options& opt, Report& report) {
  if (!cuda::is_available()) {
    std::printf("quant: no CUDA device, CUDA cases skipped\n");
    return;
  }
  const Device dev(opt.device);
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(kFeatures, kFeatures);
  lin->to(dev);
  auto q = quant::DynamicQuantizedLinear::from_float(*lin);
  const Tensor w16 = lin->weight.detach().to(kFloat16), b16 = lin->bias.detach().to(kFloat16);
  NoGradGuard no_grad;
  for (int64_t batch : {int64_t(1), int64_t(64)}) {
    const Tensor x = randn({batch, kFeatures}).to(dev);
    const Tensor x16 = x.to(kFloat16);
    const Tensor xq = ones({batch, kFeatures}, TensorOptions(kUInt8, dev));
    const Tensor wq = ones({kFeatures, kFeatures}, TensorOptions(kInt8, dev));
    Tensor c32 = empty({batch, kFeatures}, TensorOptions(kInt32, dev));
    const int calls = 50;
    auto timed = [&](const std::function<void()>& f) {
      return measure([&] {
               for (int i = 0; i < calls; ++i) f();
               cuda::synchronize();
             }, 0.3, 0.5, 5)
                 .median_s * 1e6 / calls;
    };
    const double t8 = timed([&] { Tensor y = (*q)(x); });
    const double t16 = timed([&] { Tensor y = nn::functional::linear(x16, w16, b16); });
    const double tlt = cublaslt_int8_us(batch, kFeatures, kFeatures, dev.index(), calls);
    std::printf("  cuda batch %lld: int8 layer %.1f us, float16 layer %.1f us, cuBLASLt int8 GEMM alone %.1f us\n",
                static_cast<long long>(batch), t8, t16, tlt);
    Record r;
    r.suite = "quant";
    r.case_name = "cuda int8 Linear 4096x4096 batch " + std::to_string(batch);
    r.unit = "us (lower is better)";
    r.ember = t8;
    r.peer_name = "ember float16 (cuBLAS)";
    r.peer = t16;
    report.add(r);
    r.case_name = "cuda int8 GEMM 4096x4096 batch " + std::to_string(batch) + " (no quantize, no epilogue)";
    r.peer_name = "cuBLASLt int8";
    r.ember = timed([&] {
      cuda::gemm_int8_s32(batch, kFeatures, kFeatures, xq.data_ptr<uint8_t>(), wq.data_ptr<int8_t>(),
                          c32.data_ptr<int32_t>(), cuda::stream(dev.index()));
    });
    r.peer = tlt;
    report.add(std::move(r));
  }
}
#endif

void quant_suite(const Options& opt, Report& report) {
  if (opt.device != "cpu") {
#if EMBER_HAVE_CUDA
    cuda_cases(opt, report);
#else
    std::printf("quant: this build has no CUDA backend, %s skipped\n", opt.device.c_str());
#endif
    return;
  }
  set_num_threads(opt.threads);
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(kFeatures, kFeatures);
  lin->eval();
  auto q_pc = quant::DynamicQuantizedLinear::from_float(*lin, quant::QScheme::PerChannel);
  auto q_pt = quant::DynamicQuantizedLinear::from_float(*lin, quant::QScheme::PerTensor);
  NoGradGuard no_grad;
  std::printf("quant: int8 kernel %s, %d threads, load %.2f\n", cpu::gemm_int8_kernel_name(), opt.threads, load1());

  std::string why;
  const bool have_peer = torch_peer_available(&why);
  if (have_peer)
    std::printf("quant: peer pytorch quantize_dynamic, %s\n", torch_peer_environment(opt.threads).c_str());
  else
    std::printf("quant: peer: none (%s)\n", why.c_str());
  std::fflush(stdout);

  struct Row {
    double pc = 1e30, pt = 1e30, f32 = 1e30;
    std::optional<double> p_pc, p_pt, p_f32;
  };
  std::map<int64_t, Row> rows;
  const std::vector<int64_t> batches = {1, 64};
  bool peer_failed = !have_peer;
  for (int round = 0; round < kRounds; ++round) {
    for (int64_t b : batches) {
      const Tensor x = randn({b, kFeatures});
      // The int8 result must be the float one up to quantization error.
      if (round == 0) {
        const Tensor yf = (*lin)(x), yq = (*q_pc)(x);
        const double rel = (yq - yf).abs().max().item<double>() / yf.abs().max().item<double>();
        if (!(rel < 0.05)) report.fail("quant: int8 output differs from float32 by " + std::to_string(rel));
      }
      Row& r = rows[b];
      const double pc = median_ms([&] { Tensor y = (*q_pc)(x); }, b);
      const double pt = median_ms([&] { Tensor y = (*q_pt)(x); }, b);
      const double f32 = median_ms([&] { Tensor y = (*lin)(x); }, b);
      r.pc = std::min(r.pc, pc);
      r.pt = std::min(r.pt, pt);
      r.f32 = std::min(r.f32, f32);
      std::printf("  round %d ember   batch %2lld: int8 per channel %7.3f ms, per tensor %7.3f ms, float32 %7.3f ms"
                  "  (load %.2f)\n",
                  round + 1, static_cast<long long>(b), pc, pt, f32, load1());
      std::fflush(stdout);
    }
    if (peer_failed) continue;
    const auto peer = run_torch_peer({"--features", std::to_string(kFeatures), "--batches", "1,64"}, opt.threads,
                                     &why, "torch_quant_linear.py");
    if (!peer) {
      std::printf("  pytorch peer failed: %s\n", why.c_str());
      peer_failed = true;
      continue;
    }
    for (int64_t b : batches) {
      const std::string k = std::to_string(b);
      Row& r = rows[b];
      auto keep = [](std::optional<double>& slot, double v) { slot = slot ? std::min(*slot, v) : v; };
      keep(r.p_pc, (*peer)["int8_per_channel_ms"][k].get<double>());
      keep(r.p_pt, (*peer)["int8_per_tensor_ms"][k].get<double>());
      keep(r.p_f32, (*peer)["float_ms"][k].get<double>());
      std::printf("  round %d pytorch batch %2lld: int8 per channel %7.3f ms, per tensor %7.3f ms, float32 %7.3f ms"
                  "  (load %.2f; torch %s, engine %s)\n",
                  round + 1, static_cast<long long>(b), (*peer)["int8_per_channel_ms"][k].get<double>(),
                  (*peer)["int8_per_tensor_ms"][k].get<double>(), (*peer)["float_ms"][k].get<double>(), load1(),
                  (*peer)["torch"].get<std::string>().c_str(), (*peer)["engine"].get<std::string>().c_str());
      std::fflush(stdout);
    }
  }
  const std::string peer_name = !have_peer ? "pytorch (absent)" : peer_failed ? "pytorch (failed)" : "pytorch";
  auto add = [&](const std::string& name, const std::string& unit, double ember, std::optional<double> peer) {
    Record r;
    r.suite = "quant";
    r.case_name = name;
    r.unit = unit;
    r.ember = ember;
    r.peer_name = peer ? peer_name : "";
    r.peer = peer_failed ? std::nullopt : peer;
    report.add(std::move(r));
  };
  for (int64_t b : batches) {
    const Row& r = rows[b];
    const std::string size = "4096x4096 batch " + std::to_string(b);
    add("int8 Linear " + size + " per channel", "ms (lower is better)", r.pc, r.p_pc);
    add("int8 Linear " + size + " per tensor", "ms (lower is better)", r.pt, r.p_pt);
    add("float32 Linear " + size, "ms (lower is better)", r.f32, r.p_f32);
    add("int8 speed-up over float32, " + size, "x (higher is better)", r.f32 / r.pc, std::nullopt);
  }
}

}  // namespace

EMBER_BENCH_SUITE(quant, quant_suite);

}  // namespace ember::bench
