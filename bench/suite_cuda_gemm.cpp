// The cuda_gemm suite: square C = A.B on device buffers, Ember's own kernels
// (cuda::gemm_native: the tiled SIMT kernel for float32; for float16 and bfloat16 the
// wgmma kernel on a compute capability 9.0 GPU, the mma.sync kernel elsewhere)
// against cuBLAS (cuda::gemm_cublas), in TFLOP/s, at n = 1024, 2048 and 4096. The floor is measured in the same run: for float32 the
// SIMT FMA peak (cuBLAS float32 runs on the same FMA units: no TF32 here), for the
// half types cuBLAS itself at 8192^3 in that dtype. Before it is timed, each case
// is checked: native against cuBLAS over all of C, and both against float64 dot
// products on the CPU at 256 sampled elements.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_floors.h"
#include "bench/cuda_harness.h"
#include "bench/sampled_error.h"
#include "ember.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"

namespace ember::bench {
namespace {

using GemmFn = void (*)(DType, int64_t, int64_t, int64_t, int64_t, double, const void*, int64_t, int64_t, int64_t,
                        const void*, int64_t, int64_t, int64_t, double, void*, int64_t, int64_t, int64_t,
                        cudaStream_t);

// Row-major n x n operands, one matrix (batch 1).
void square(GemmFn f, DType dt, int64_t n, const Tensor& a, const Tensor& b, Tensor& c) {
  f(dt, 1, n, n, n, 1.0, a.data_ptr(), n * n, n, 1, b.data_ptr(), n * n, n, 1, 0.0, c.data_ptr(), n * n, n, 1,
    cuda::stream());
}

const char* tag(DType dt) { return dt == kFloat32 ? "f32" : dt == kFloat16 ? "f16" : "bf16"; }

void run_case(Report& report, DType dt, int64_t n) {
  const std::string name = std::string(tag(dt)) + " n=" + std::to_string(n);
  const TensorOptions o(dt, Device("cuda"));
  Tensor a = randn({n, n}, o), b = randn({n, n}, o);
  Tensor c_native = empty({n, n}, o), c_cublas = empty({n, n}, o);
  square(cuda::gemm_native, dt, n, a, b, c_native);
  square(cuda::gemm_cublas, dt, n, a, b, c_cublas);

  // float32 products differ only in summation order (~1e-6 normwise at k = 4096);
  // half outputs are rounded to 11 or 8 bits after a float32 accumulation.
  const double tol = dt == kFloat32 ? 1e-4 : dt == kFloat16 ? 5e-3 : 2e-2;
  check_close(report, "gemm " + name + " native vs cuBLAS", c_native, c_cublas, tol);
  const Tensor a32 = a.cpu().to(kFloat32), b32 = b.cpu().to(kFloat32);
  for (const auto& [who, c] : {std::pair{"native", &c_native}, std::pair{"cuBLAS", &c_cublas}}) {
    const Tensor c32 = c->cpu().to(kFloat32);
    const double err = sampled_rel_err(n, a32.data_ptr<float>(), b32.data_ptr<float>(), c32.data_ptr<float>(),
                                       false, uint32_t(n) + 7);
    const bool ok = err <= tol;
    std::printf("  check gemm %-12s %-6s vs CPU float64 (256 samples): rel. error %.2e%s\n", name.c_str(), who, err,
                ok ? "" : "  <-- too large");
    if (!ok) report.fail("gemm " + name + " " + who + ": differs from float64 dot products");
  }

  const double flops = 2.0 * n * double(n) * n;
  const CudaTiming tn = cuda_measure([&] { square(cuda::gemm_native, dt, n, a, b, c_native); });
  const CudaTiming tc = cuda_measure([&] { square(cuda::gemm_cublas, dt, n, a, b, c_cublas); });
  Record r;
  r.suite = "cuda_gemm";
  r.case_name = name;
  r.unit = "TFLOP/s";
  r.ember = flops / (tn.median_ms * 1e-3) / 1e12;
  r.peer_name = "cublas";
  r.peer = flops / (tc.median_ms * 1e-3) / 1e12;
  r.floor = dt == kFloat32 ? measured_cuda_fma_peak_tflops() : measured_cuda_matrix_peak_tflops(dt);
  report.add(std::move(r));
}

void run(const Options&, Report& report) {
  manual_seed(13);
  std::printf("cuda_gemm: ember = cuda::gemm_native, peer = cuda::gemm_cublas; floor: f32 the measured FMA peak "
              "(%.1f TFLOP/s), f16/bf16 cuBLAS at 8192^3\n",
              measured_cuda_fma_peak_tflops());
  std::printf("cuda_gemm: native f16/bf16 kernel: %s\n",
              cuda::wgmma_available() ? "wgmma (gemm_wgmma.cu, sm_90a)" : "mma.sync (gemm_mma.cu)");
  for (DType dt : {kFloat32, kFloat16, kBFloat16}) {
    cuda_case(report, std::string("cuda_gemm ") + tag(dt) + " floor", [&] {
      if (dt != kFloat32)
        std::printf("cuda_gemm: %s floor: cuBLAS 8192^3 %.1f TFLOP/s\n", tag(dt), measured_cuda_matrix_peak_tflops(dt));
    });
    for (int64_t n : {1024, 2048, 4096})
      cuda_case(report, std::string("cuda_gemm ") + tag(dt) + " n=" + std::to_string(n), [&] { run_case(report, dt, n); });
  }
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(cuda_gemm, ember::bench::run);
