// The FMA-peak kernel behind measured_cuda_fma_peak_tflops (bench/cuda_floors.cpp),
// kept alone in a .cu file so that nvcc compiles only this and the rest of the
// bench stays plain C++.
#include <cuda_runtime.h>

#include "bench/cuda_fma_loop.h"
#include "kernels/cuda/check.h"

namespace ember::bench {
namespace {

// Each thread runs kFmaChains independent chains x = x * a + b, enough to hide the
// FMA latency. a and b come from the host, so the compiler cannot fold the loop;
// the sum is written only when it equals a value it never takes, so the store
// costs nothing and the loop stays live.
__global__ void fma_loop(float a, float b, float* sink) {
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = float(threadIdx.x + c);
  for (int i = 0; i < kFmaIters; ++i) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) s += x[c];
  if (s == -1.2345f) sink[0] = s;
}

}  // namespace

void launch_fma_loop(int blocks, int threads, float* sink, cudaStream_t stream) {
  fma_loop<<<blocks, threads, 0, stream>>>(0.999f, 0.001f, sink);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::bench
