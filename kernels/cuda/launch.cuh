// Launch geometry shared by the CUDA kernels. Memory-bound kernels use grid-stride
// loops over a grid of a few waves (enough blocks to fill every SM several times),
// so one launch shape serves every size and the index math stays 64-bit safe.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"

namespace ember::cuda {

inline constexpr int kBlockThreads = 256;
inline constexpr int kWarp = 32;

// Blocks for `work` items of `per_block` each, capped at `waves` full waves of the
// current device (blocks beyond that only add scheduling cost in a grid-stride loop).
inline unsigned grid_for(int64_t work, int64_t per_block = kBlockThreads, int waves = 8) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  const int64_t cap = static_cast<int64_t>(properties().multiProcessorCount) * waves *
                      (2048 / kBlockThreads);
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, cap)));
}

// Launches kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(args...) and checks the
// launch; does nothing when n == 0.
template <class Kernel, class... Args>
void launch_1d(int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n <= 0) return;
  kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(args...);
  EMBER_CUDA_CHECK_LAUNCH();
}

// Sum over a warp with shuffles (every lane gets the total).
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace ember::cuda
