// The CUDA ceilings of bench/cuda_floors.h. The copy goes through the driver's own
// cudaMemcpyAsync (the best a copy kernel could hope for); the FMA loop is a kernel
// with nothing but FMAs on its critical path (bench/cuda_fma_loop.cu); the matrix
// rate is cuBLAS at a size large enough to reach its plateau.
#include "bench/cuda_floors.h"

#include <cuda_runtime_api.h>

#include <map>

#include "bench/cuda_fma_loop.h"
#include "bench/cuda_harness.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace ember::bench {

double measured_cuda_copy_gbs() {
  static const double gbs = [] {
    const int dev = cuda::current_device_index();
    cudaStream_t s = cuda::stream();
    const size_t n = size_t(kCudaCopyBytes);
    cuda::ScratchBuffer src(n, dev, s), dst(n, dev, s);
    // Random source bytes (never time on zeros): a uniform fill of the source.
    Tensor r = rand({int64_t(n / 4)}, TensorOptions(kFloat32, Device(DeviceType::CUDA, dev)));
    EMBER_CUDA_CHECK(cudaMemcpyAsync(src.get(), r.data_ptr(), n, cudaMemcpyDeviceToDevice, s));
    const CudaTiming t = cuda_measure(
        [&] { EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), n, cudaMemcpyDeviceToDevice, s)); });
    return 2.0 * kCudaCopyBytes / (t.median_ms * 1e-3) / 1e9;
  }();
  return gbs;
}

double measured_cuda_fma_peak_tflops() {
  static const double tflops = [] {
    const cudaDeviceProp& p = cuda::properties();
    cudaStream_t s = cuda::stream();
    cuda::ScratchBuffer sink(sizeof(float), cuda::current_device_index(), s);
    constexpr int kThreads = 256;
    const int blocks = p.multiProcessorCount * 8;  // 2048 threads per SM: full occupancy
    const CudaTiming t = cuda_measure([&] {
      launch_fma_loop(blocks, kThreads, sink.as<float>(), s);
    });
    const double flops = 2.0 * kFmaChains * kFmaIters * double(blocks) * kThreads;
    return flops / (t.median_ms * 1e-3) / 1e12;
  }();
  return tflops;
}

double measured_cuda_matrix_peak_tflops(DType dt) {
  static std::map<DType, double> cache;
  if (auto it = cache.find(dt); it != cache.end()) return it->second;
  constexpr int64_t n = 8192;
  const TensorOptions o(dt, Device(DeviceType::CUDA, cuda::current_device_index()));
  Tensor a = randn({n, n}, o), b = randn({n, n}, o), c = empty({n, n}, o);
  const CudaTiming t = cuda_measure(
      [&] {
        cuda::gemm_cublas(dt, 1, n, n, n, 1.0, a.data_ptr(), n * n, n, 1, b.data_ptr(), n * n, n, 1, 0.0,
                          c.data_ptr(), n * n, n, 1, cuda::stream());
      },
      300, 2, 5, 50);
  const double tflops = 2.0 * n * n * double(n) / (t.median_ms * 1e-3) / 1e12;
  cache[dt] = tflops;
  return tflops;
}

}  // namespace ember::bench
