// Device checks, the environment line and event timing for the CUDA suites.
#include "bench/cuda_harness.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "bench/cuda_floors.h"
#include "bench/cuda_spin.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#include "tensor/ops.h"

namespace ember::bench {

bool cuda_device_ready(std::string* why) {
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    cudaGetLastError();  // clear the sticky status so later calls do not see it
    *why = std::string("no usable CUDA driver or device (cudaGetDeviceCount: ") +
           cudaGetErrorString(st) + ")";
    return false;
  }
  if (n == 0) {
    *why = "the CUDA driver reports no devices";
    return false;
  }
  return true;
}

void print_cuda_environment() {
  const cudaDeviceProp& p = cuda::properties();
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  size_t free_b = 0, total_b = 0;
  EMBER_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  int sm_clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  const int dev = cuda::current_device_index();
  cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  std::printf("cuda: device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), L2 %.0f MiB\n",
              dev, p.name, p.major, p.minor, p.multiProcessorCount, double(total_b) / (1 << 30),
              double(free_b) / (1 << 30), double(p.l2CacheSize) / (1 << 20));
  std::printf("cuda: max SM clock %.0f MHz, memory clock %.0f MHz, %d-bit bus; driver %d.%d, runtime %d.%d\n",
              sm_clock_khz / 1e3, mem_clock_khz / 1e3, bus_bits, driver / 1000, (driver % 1000) / 10,
              runtime / 1000, (runtime % 1000) / 10);
  std::fflush(stdout);
}

CudaTiming cuda_measure(const std::function<void()>& f, double target_ms, int warmup, int min_reps,
                        int max_reps) {
  cudaStream_t s = cuda::stream();
  for (int i = 0; i < warmup; ++i) f();
  EMBER_CUDA_CHECK(cudaStreamSynchronize(s));

  // A first estimate of one call, to size the timed part: queued behind a spin, so
  // the events time the GPU's work alone and a host clock the cost of queuing it.
  // A call that waits for the GPU itself (a read-back) takes the host the whole
  // spin; such calls are timed as they come. Each probe call is bracketed by two
  // events as in the timed loop, so that the host time counts their recording too.
  cudaEvent_t e0, e1, ea, eb;
  for (cudaEvent_t* e : {&e0, &e1, &ea, &eb}) EMBER_CUDA_CHECK(cudaEventCreate(e));
  constexpr int kProbe = 3;
  constexpr double kProbeSpinMs = 20;
  launch_spin(kProbeSpinMs, s);
  EMBER_CUDA_CHECK(cudaEventRecord(e0, s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kProbe; ++i) {
    EMBER_CUDA_CHECK(cudaEventRecord(ea, s));
    f();
    EMBER_CUDA_CHECK(cudaEventRecord(eb, s));
  }
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kProbe;
  EMBER_CUDA_CHECK(cudaEventRecord(e1, s));
  EMBER_CUDA_CHECK(cudaEventSynchronize(e1));
  float probe_ms = 0;
  EMBER_CUDA_CHECK(cudaEventElapsedTime(&probe_ms, e0, e1));
  for (cudaEvent_t e : {e0, e1, ea, eb}) EMBER_CUDA_CHECK(cudaEventDestroy(e));
  const double per_call = std::max(1e-3, double(probe_ms) / kProbe);
  const bool waits_for_gpu = host_ms * kProbe >= 0.8 * kProbeSpinMs;
  const bool host_bound = !waits_for_gpu && host_ms >= 0.5 * per_call;
  int reps = std::clamp(int(target_ms / per_call), min_reps, max_reps);
  // The spins last twice the queuing time: keep their sum near 2 * target_ms.
  if (host_bound) reps = std::max(min_reps, std::min(reps, int(target_ms / host_ms)));

  // Batches of at most kBatch calls (their launches and events stay well inside the
  // driver's queue, so queuing never blocks on the GPU), each behind a spin that
  // lasts twice as long as queuing the batch took in the probe.
  constexpr int kBatch = 64;
  std::vector<cudaEvent_t> ev(2 * size_t(reps));
  for (cudaEvent_t& e : ev) EMBER_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    if (host_bound && i % kBatch == 0) launch_spin(2 * host_ms * std::min(kBatch, reps - i) + 0.05, s);
    EMBER_CUDA_CHECK(cudaEventRecord(ev[2 * i], s));
    f();
    EMBER_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], s));
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> ms(reps);
  for (int i = 0; i < reps; ++i) {
    float t = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]));
    ms[i] = t;
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return CudaTiming{ms[ms.size() / 2], ms.front(), reps, host_ms};
}

void cuda_case(Report& report, const std::string& what, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    report.fail(what + ": " + e.what());
  }
}

void report_cuda_bandwidth(Report& report, const char* suite, const std::string& name, double bytes,
                           const std::function<void()>& op) {
  cuda_case(report, std::string(suite) + " " + name, [&] {
    const CudaTiming t = cuda_measure(op);
    Record r;
    r.suite = suite;
    r.case_name = name;
    r.unit = "GB/s";
    r.ember = bytes / (t.median_ms * 1e-3) / 1e9;
    r.floor = measured_cuda_copy_gbs();
    report.add(std::move(r));
  });
}

bool check_close(Report& report, const std::string& what, const Tensor& got, const Tensor& want,
                 double tol) {
  const Tensor g = got.to(kCPU).to(kFloat64), w = want.to(kCPU).to(kFloat64);
  const double diff = (g - w).abs().max().item<double>();
  const double scale = w.abs().max().item<double>();
  const double err = scale > 0 ? diff / scale : diff;
  const bool ok = err <= tol;  // false for NaN
  std::printf("  check %-40s rel. error %.2e (tolerance %.0e)%s\n", what.c_str(), err, tol,
              ok ? "" : "  <-- too large");
  std::fflush(stdout);
  if (!ok) report.fail(what + ": result differs from the reference (rel. error " + std::to_string(err) + ")");
  return ok;
}

}  // namespace ember::bench
