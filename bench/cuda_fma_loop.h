// The FMA-peak kernel's launcher (bench/cuda_fma_loop.cu): blocks x threads
// threads, each doing kFmaChains * kFmaIters float32 FMAs.
#pragma once

#include <cuda_runtime_api.h>

namespace ember::bench {

constexpr int kFmaChains = 8;
constexpr int kFmaIters = 2048;

void launch_fma_loop(int blocks, int threads, float* sink, cudaStream_t stream);

}  // namespace ember::bench
