// The gemm suite: Ember's CPU GEMM against OpenBLAS on square problems, float32 at
// 128..2048, float32 with a transposed B, and float64, in GFLOP/s against the
// measured FMA peak. Each case is checked against the peer (or, without one,
// against float64 sums) before it is timed; the two are timed in alternating
// rounds, best call of all rounds.
//
// A few rows of A against a Linear's transposed weight (n = 256, k = 784: the ONNX
// MLP's first layer at batch 1, 4 and 8), where Ember reads B in place instead of
// packing it (GemmKernel::rows), beside OpenBLAS.
//
// Then bfloat16: Ember's matmul of two bfloat16 tensors (cpu::gemm_bf16_rounded,
// rounding each sum once as it is stored) against PyTorch's torch.matmul in bfloat16
// (bench/peers/torch_matmul.py, oneDNN; best of a run before and one after Ember's),
// and against Ember's own float32 matmul in alternating rounds, with the measured
// vdpbf16ps peak as the floor; and bfloat16 convolutions beside Ember's float32
// convolution of the same values: a ResNet layer ([16, 64, 28, 28], 3x3x64, padding
// 1) on the bfloat16 GEMM, the seed network's two layers at batch 100 on the
// bfloat16 direct kernels.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/openblas_peer.h"
#include "bench/sampled_error.h"
#include "bench/torch_peer.h"
#include "ember.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/gemm.h"

namespace ember::bench {
namespace {

struct Case {
  int n;
  bool f64;
  bool trans_b;  // B stored as its transpose, as a Linear layer's weight is
};

template <class T>
void peer_gemm(const OpenBlas& p, bool trans_b, int n, const T* a, const T* b, T* c) {
  if constexpr (sizeof(T) == 4)
    p.sgemm(false, trans_b, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  else
    p.dgemm(false, trans_b, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
}

template <class T>
void ember_gemm(bool trans_b, int64_t n, const T* a, const T* b, T* c) {
  // A transposed B is read in place through its strides: row stride 1.
  const int64_t b_rs = trans_b ? 1 : n, b_cs = trans_b ? n : 1;
  cpu::gemm(n, n, n, T(1), a, n, 1, b, b_rs, b_cs, T(0), c, n, 1);
}

// Largest |x - y| over the largest |y|: a normwise relative error that stays
// meaningful where single elements of C are near zero.
template <class T>
double max_rel_diff(const std::vector<T>& x, const std::vector<T>& y) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::fabs(double(x[i]) - double(y[i])));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// The record of a case timed as {Ember} or {Ember, OpenBLAS}: GFLOP/s of the best
// call of each.
void add_gflops(Report& report, const std::string& name, double flops, const std::vector<Timing>& t,
                double floor) {
  Record r;
  r.suite = "gemm";
  r.case_name = name;
  r.unit = "GFLOP/s";
  r.ember = flops / t[0].best_s * 1e-9;
  if (t.size() > 1) {
    r.peer_name = "openblas";
    r.peer = flops / t[1].best_s * 1e-9;
  }
  r.floor = floor;
  report.add(std::move(r));
}

template <class T>
void run_case(const Case& cs, const Options& opt, const OpenBlas* peer, Report& report) {
  const int n = cs.n;
  const size_t nn = size_t(n) * n;
  std::vector<T> a(nn), b(nn), c(nn), c_peer(nn);
  std::mt19937 g{uint32_t(n)};
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (T& v : a) v = T(d(g));
  for (T& v : b) v = T(d(g));

  std::string name = std::string(cs.f64 ? "f64" : "f32") + " n=" + std::to_string(n);
  if (cs.trans_b) name += " B^T";

  ember_gemm(cs.trans_b, n, a.data(), b.data(), c.data());
  double err;
  const char* against;
  if (peer) {
    peer_gemm(*peer, cs.trans_b, n, a.data(), b.data(), c_peer.data());
    err = max_rel_diff(c, c_peer);
    against = "openblas";
  } else {
    err = sampled_rel_err<T>(n, a.data(), b.data(), c.data(), cs.trans_b);
    against = "float64 (256 samples)";
  }
  // Rounding grows with k; a factor of n above one unit in the last place is far
  // beyond what a correct summation order produces and far below a wrong answer.
  const double tol = (cs.f64 ? 1.1e-16 : 6e-8) * n;
  std::printf("  check %-16s max rel. error vs %s: %.2e%s\n", name.c_str(), against, err,
              err <= tol ? "" : "  <-- too large");
  if (!(err <= tol)) report.fail("gemm " + name + ": result differs from " + against);

  const double flops = 2.0 * n * double(n) * n;
  std::vector<std::function<void()>> runs = {
      [&] { ember_gemm(cs.trans_b, n, a.data(), b.data(), c.data()); }};
  if (peer)
    runs.push_back([&] { peer_gemm(*peer, cs.trans_b, n, a.data(), b.data(), c_peer.data()); });
  add_gflops(report, name, flops, measure_alternating(runs), measured_fma_peak_gflops(opt.threads, cs.f64));
}

// C[m x 256] = A[m x 784] . W^T, W stored [256 x 784] as a Linear's weight is.
void run_few_rows_case(int m, const Options& opt, const OpenBlas* peer, Report& report) {
  const int n = 256, k = 784;
  std::vector<float> a(size_t(m) * k), w(size_t(n) * k), c(size_t(m) * n), c_peer(size_t(m) * n);
  std::mt19937 g{uint32_t(m)};
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (float& v : a) v = float(d(g));
  for (float& v : w) v = float(d(g));
  const std::string name = "f32 m=" + std::to_string(m) + " 256x784 W^T";
  auto ember = [&] { cpu::gemm(m, n, k, 1.0f, a.data(), k, 1, w.data(), 1, k, 0.0f, c.data(), n, 1); };
  auto blas = [&] { peer->sgemm(false, true, m, n, k, 1.0f, a.data(), k, w.data(), k, 0.0f, c_peer.data(), n); };
  ember();
  if (peer) {
    blas();
    const double err = max_rel_diff(c, c_peer);
    std::printf("  check %-16s max rel. error vs openblas: %.2e%s\n", name.c_str(), err, err <= 6e-8 * k ? "" : "  <-- too large");
    if (!(err <= 6e-8 * k)) report.fail("gemm " + name + ": result differs from openblas");
  }
  std::vector<std::function<void()>> runs = {ember};
  if (peer) runs.push_back(blas);
  add_gflops(report, name, 2.0 * m * double(n) * k, measure_alternating(runs),
             measured_fma_peak_gflops(opt.threads, false));
}

// A bfloat16 convolution against Ember's float32 convolution of the same values,
// both through the tensor API: a ResNet layer (conv2d picks the bfloat16 GEMM where
// conv2d_bf16_native says so) and the seed network's two layers at batch 100 (the
// bfloat16 direct kernels, conv2d_bf16_direct); the path is printed.
void run_bf16_conv_case(const Options& opt, Report& report, int64_t n, int64_t c_in, int64_t hw, int64_t c_out,
                        int64_t k, int64_t pad, double weight_scale) {
  manual_seed(7);
  const Tensor x32 = randn({n, c_in, hw, hw}), w32 = randn({c_out, c_in, k, k}) * weight_scale, b32 = randn({c_out});
  const Tensor x = x32.to(kBFloat16), w = w32.to(kBFloat16), b = b32.to(kBFloat16);
  const std::string name = "conv2d bf16 [" + std::to_string(n) + "," + std::to_string(c_in) + "," + std::to_string(hw) +
                           "," + std::to_string(hw) + "] " + std::to_string(k) + "x" + std::to_string(k) + "x" +
                           std::to_string(c_out) + " vs ember f32";
  Conv2dShape s;
  s.n = n, s.c_in = c_in, s.h = hw, s.w = hw, s.c_out = c_out, s.kh = k, s.kw = k, s.pad_h = pad, s.pad_w = pad;
  conv2d_set_output_size(s);
  std::printf("gemm: %s runs on the %s path\n", name.c_str(),
              cpu::conv2d_bf16_native(s)   ? "bfloat16 GEMM"
              : cpu::conv2d_bf16_direct(s) ? "bfloat16 direct (vdpbf16ps)"
                                           : "widened float32");
  const Pair padding{pad, pad};
  {
    // Against float32 of the same bfloat16 values: only the final rounding differs.
    const Tensor want = conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), {1, 1}, padding);
    const Tensor got = conv2d(x, w, b, {1, 1}, padding).to(kFloat32);
    const double err = ((got - want).abs().max() / want.abs().max()).item<double>();
    std::printf("  check %-16s max rel. error vs float32: %.2e%s\n", "conv2d bf16", err, err <= 8e-3 ? "" : "  <-- too large");
    if (!(err <= 8e-3)) report.fail("gemm " + name + ": result differs from float32");
  }
  const double flops = 2.0 * double(n * c_out * s.h_out * s.w_out) * double(c_in * k * k);
  const std::vector<Timing> t = measure_alternating({[&] { Tensor y = conv2d(x, w, b, {1, 1}, padding); },
                                                     [&] { Tensor y = conv2d(x32, w32, b32, {1, 1}, padding); }});
  Record r;
  r.suite = "gemm";
  r.case_name = name;
  r.unit = "GFLOP/s";
  r.ember = flops / t[0].best_s * 1e-9;
  r.peer_name = "ember f32";
  r.peer = flops / t[1].best_s * 1e-9;
  r.floor = measured_bf16_peak_gflops(opt.threads);
  report.add(std::move(r));
}

// Ember's bfloat16 matmul at one size, against its own float32 matmul.
struct Bf16Figures {
  double bf16, f32, floor;
};

// bfloat16 matmul at size n: checked against float64 sums of the same bfloat16
// values, then timed against Ember's float32 matmul in alternating rounds.
Bf16Figures run_bf16_case(int n, const Options& opt, Report& report) {
  manual_seed(uint64_t(n));
  const Tensor a32 = rand({n, n}) * 2 - 1, b32 = rand({n, n}) * 2 - 1;
  const Tensor a = a32.to(kBFloat16), b = b32.to(kBFloat16);
  const std::string name = "bf16 n=" + std::to_string(n);
  {
    // The reference multiplies the bfloat16 values themselves, widened exactly.
    const Tensor aw = a.to(kFloat32).contiguous(), bw = b.to(kFloat32).contiguous();
    const Tensor c = matmul(a, b).to(kFloat32).contiguous();
    const double err = sampled_rel_err<float>(n, aw.data_ptr<float>(), bw.data_ptr<float>(), c.data_ptr<float>(),
                                              false);
    // One bfloat16 rounding of the result (2^-9 relative) dominates.
    const double tol = 4e-3;
    std::printf("  check %-16s max rel. error vs float64 (256 samples): %.2e%s\n", name.c_str(), err,
                err <= tol ? "" : "  <-- too large");
    if (!(err <= tol)) report.fail("gemm " + name + ": result differs from float64");
  }
  const double flops = 2.0 * n * double(n) * n;
  const std::vector<Timing> t =
      measure_alternating({[&] { Tensor c = matmul(a, b); }, [&] { Tensor c = matmul(a32, b32); }});
  return {flops / t[0].best_s * 1e-9, flops / t[1].best_s * 1e-9, measured_bf16_peak_gflops(opt.threads)};
}

// PyTorch's bfloat16 matmul runs in its own process, so it cannot alternate with
// Ember's calls; it runs once before Ember's cases and once after, and keeps the
// better figure of the two for each size, so that a slow spell of the shared
// machine during one of them does not count against the peer.
void bf16_cases(const Options& opt, Report& report) {
  const std::string kernel = cpu::gemm_bf16_kernel_name();
  std::printf("gemm: bfloat16 kernel %s; floor: %s\n", kernel.c_str(),
              kernel == "avx512_bf16" ? "vdpbf16ps peak" : "float32 FMA peak");
  const std::vector<int> sizes = {512, 1024};
  std::string why;
  const bool have_torch = torch_peer_available(&why);
  std::vector<double> torch_gflops(sizes.size(), 0.0);
  int torch_runs = 0;
  std::string torch_version;
  const auto run_peer = [&] {
    if (!have_torch) return;
    const std::optional<nlohmann::json> peer =
        run_torch_peer({"--sizes", "512,1024", "--dtypes", "bfloat16"}, opt.threads, &why, "torch_matmul.py");
    if (!peer) return;
    ++torch_runs;
    torch_version = (*peer)["torch"].get<std::string>();
    for (size_t i = 0; i < sizes.size(); ++i)
      torch_gflops[i] = std::max(torch_gflops[i], (*peer)["gflops"]["bfloat16"][std::to_string(sizes[i])].get<double>());
  };
  run_peer();
  std::vector<Bf16Figures> ember;
  for (int n : sizes) ember.push_back(run_bf16_case(n, opt, report));
  run_peer();
  if (torch_runs == 0)
    std::printf("gemm: bfloat16 peer: none (%s)\n", why.c_str());
  else
    std::printf("gemm: bfloat16 peer pytorch %s torch.matmul, %s; best of %d run%s around Ember's\n",
                torch_version.c_str(), torch_peer_environment(opt.threads).c_str(), torch_runs,
                torch_runs == 1 ? "" : "s");
  for (size_t i = 0; i < sizes.size(); ++i) {
    Record r;
    r.suite = "gemm";
    r.case_name = "bf16 n=" + std::to_string(sizes[i]);
    r.unit = "GFLOP/s";
    r.ember = ember[i].bf16;
    r.peer_name = torch_runs > 0 ? "pytorch" : "pytorch (absent)";
    r.peer = torch_gflops[i];
    r.floor = ember[i].floor;
    report.add(r);
    r.case_name += " vs ember f32";
    r.peer_name = "ember f32";
    r.peer = ember[i].f32;
    report.add(std::move(r));
  }
  run_bf16_conv_case(opt, report, 16, 64, 28, 64, 3, 1, 0.05);  // a ResNet layer: the bfloat16 GEMM
  run_bf16_conv_case(opt, report, 100, 1, 28, 6, 5, 0, 0.3);    // the seed network's conv1 and conv2:
  run_bf16_conv_case(opt, report, 100, 6, 12, 12, 5, 0, 0.3);   // the bfloat16 direct kernels
}

void gemm_suite(const Options& opt, Report& report) {
  if (opt.device != "cpu") {
    std::printf("gemm: no %s kernels yet, skipped\n", opt.device.c_str());
    return;
  }
  const OpenBlas* peer = OpenBlas::get(opt.threads);
  std::printf("gemm: ember kernel %s, %d threads\n", cpu::gemm_kernel_name(), opt.threads);
  if (peer) {
    std::printf("gemm: peer openblas, core %s, %d threads (%s)\n", peer->corename().c_str(),
                peer->threads(), peer->config().c_str());
  } else {
    std::printf("gemm: peer: none (%s)\n", OpenBlas::unavailable_reason().c_str());
  }
  const Case cases[] = {{128, false, false}, {256, false, false},  {512, false, false},
                        {1024, false, false}, {2048, false, false}, {1024, false, true},
                        {1024, true, false}};
  for (const Case& c : cases) {
    if (c.f64)
      run_case<double>(c, opt, peer, report);
    else
      run_case<float>(c, opt, peer, report);
  }
  for (int m : {1, 4, 8}) run_few_rows_case(m, opt, peer, report);
  bf16_cases(opt, report);
}

}  // namespace

EMBER_BENCH_SUITE(gemm, gemm_suite);

}  // namespace ember::bench
