// The spin kernel of bench/cuda_spin.h: a single thread reads the GPU's nanosecond
// global timer until the wait is over. The global timer, not clock64(), because
// the SM clock varies with load and power while the global timer does not.
#include <cuda_runtime.h>

#include <cstdint>

#include "bench/cuda_spin.h"
#include "kernels/cuda/check.h"

namespace ember::bench {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(uint64_t ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

}  // namespace

void launch_spin(double ms, cudaStream_t stream) {
  spin<<<1, 1, 0, stream>>>(uint64_t(ms * 1e6));
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::bench
