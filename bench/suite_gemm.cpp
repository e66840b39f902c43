// The gemm suite: Ember's CPU GEMM against OpenBLAS on square problems, float32 at
// 128..2048, float32 with a transposed B, and float64, in GFLOP/s against the
// measured FMA peak. Each case is checked against the peer (or, without one,
// against float64 sums) before it is timed; the two are timed in alternating
// rounds, best call of all rounds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/openblas_peer.h"
#include "bench/sampled_error.h"
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
  const std::vector<Timing> t = measure_alternating(runs);
  Record r;
  r.suite = "gemm";
  r.case_name = name;
  r.unit = "GFLOP/s";
  r.ember = flops / t[0].best_s * 1e-9;
  if (peer) {
    r.peer_name = "openblas";
    r.peer = flops / t[1].best_s * 1e-9;
  }
  r.floor = measured_fma_peak_gflops(opt.threads, cs.f64);
  report.add(std::move(r));
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
}

}  // namespace

EMBER_BENCH_SUITE(gemm, gemm_suite);

}  // namespace ember::bench
