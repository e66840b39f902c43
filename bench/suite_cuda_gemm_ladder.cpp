// The cuda_gemm-ladder suite (`ember-bench --device cuda --suite gemm-ladder`):
// every rung of the CUDA GEMM ladder (kernels/ladder/gemm_ladder_cuda.h: naive,
// shared-memory tiled, production SIMT, mma.sync, production f16: wgmma on Hopper) on square row-major
// products at n = 2048 and 4096, in TFLOP/s. Floors measured in the same run: the
// float32 FMA peak for the float32 rungs, cuBLAS at 8192^3 in float16 for the
// tensor-core rung. Each case is checked against float64 dot products at 256
// sampled elements before it is timed.
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
#include "kernels/cuda/runtime.h"
#include "kernels/ladder/gemm_ladder_cuda.h"

namespace ember::bench {
namespace {

using ladder::CudaRung;
using ladder::kCudaRungs;

double floor_for(DType dt) {
  return dt == kFloat32 ? measured_cuda_fma_peak_tflops() : measured_cuda_matrix_peak_tflops(dt);
}

void run_case(Report& report, const CudaRung& rung, int64_t n) {
  const std::string name = std::string(rung.name) + " n=" + std::to_string(n);
  const TensorOptions o(rung.dtype, Device("cuda"));
  Tensor a = randn({n, n}, o), b = randn({n, n}, o), c = empty({n, n}, o);
  auto call = [&] { rung.fn(n, n, n, a.data_ptr(), b.data_ptr(), c.data_ptr(), cuda::stream()); };
  call();
  // float32: summation order only; float16: the result rounded to 11 bits.
  const double tol = rung.dtype == kFloat32 ? 1e-4 : 5e-3;
  const Tensor a32 = a.cpu().to(kFloat32), b32 = b.cpu().to(kFloat32), c32 = c.cpu().to(kFloat32);
  const double err = sampled_rel_err(n, a32.data_ptr<float>(), b32.data_ptr<float>(), c32.data_ptr<float>(), false,
                                     uint32_t(n) + 11);
  const bool ok = err <= tol;
  std::printf("  check %-32s vs CPU float64 (256 samples): rel. error %.2e%s\n", name.c_str(), err,
              ok ? "" : "  <-- too large");
  if (!ok) report.fail("gemm-ladder " + name + ": differs from float64 dot products");

  const CudaTiming t = cuda_measure(call);
  const double tflops = 2.0 * n * double(n) * n / (t.median_ms * 1e-3) / 1e12;
  const double peak = floor_for(rung.dtype);
  std::printf("  %-32s %8.2f TFLOP/s = %5.1f%% of %.1f TFLOP/s\n", name.c_str(), tflops,
              100.0 * tflops / peak, peak);
  Record r;
  r.suite = "cuda_gemm-ladder";
  r.case_name = name;
  r.unit = "TFLOP/s";
  r.ember = tflops;
  r.floor = peak;
  report.add(std::move(r));
}

void run(const Options&, Report& report) {
  manual_seed(17);
  std::printf("cuda_gemm-ladder: floors: f32 rungs the FMA peak (%.1f TFLOP/s), the f16 rung "
              "cuBLAS f16 at 8192^3 (%.1f TFLOP/s)\n",
              measured_cuda_fma_peak_tflops(), measured_cuda_matrix_peak_tflops(kFloat16));
  for (const CudaRung& rung : kCudaRungs)
    for (int64_t n : {2048, 4096})
      cuda_case(report, std::string("cuda_gemm-ladder ") + rung.name + " n=" + std::to_string(n),
                [&] { run_case(report, rung, n); });
}

}  // namespace

// By hand: EMBER_BENCH_SUITE cannot paste a name with a hyphen into an identifier.
static const Registrar cuda_gemm_ladder_registrar("cuda_gemm-ladder", run);

}  // namespace ember::bench
