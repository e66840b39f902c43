// The CUDA rungs of the GEMM ladder (the CPU rungs are in gemm_ladder.h): a naive
// kernel, a shared-memory tiled kernel, then Ember's production kernels called
// through cuda::gemm_native: the register-blocked SIMT kernel (float32) and the
// tensor-core mma.sync kernel (float16). tests/cuda/test_gemm_ladder.cpp checks every
// row of kCudaRungs; `ember-bench --device cuda --suite gemm-ladder` times them.
// Built only with the CUDA backend.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::ladder {

// C = A.B on device buffers, row-major and contiguous (A m x k, B k x n, C m x n,
// overwritten), all three of the rung's dtype; sizes positive. Queued on `stream`.
using CudaGemm = void (*)(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                          void* c, cudaStream_t stream);

// Rung 1: one thread per element of C, each a dot product read from global memory.
void cuda_gemm_naive(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
                     cudaStream_t stream);
// Rung 2: 32 x 32 tiles of A and B staged in shared memory and reused by a whole block.
void cuda_gemm_tiled(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
                     cudaStream_t stream);
// Rung 3: production float32, cuda::gemm_native: 128 x 128 block tiles, 8 x 8 outputs
// per thread in registers, double-buffered shared panels (gemm_simt.cu).
void cuda_gemm_production_simt(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                               void* c, cudaStream_t stream);
// Rung 4: the float16 mma.sync kernel (cuda::gemm_mma_sync): tensor-core tiles fed by
// ldmatrix from cp.async pipelines, float32 accumulation (gemm_mma.cu).
void cuda_gemm_production_mma(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                              void* c, cudaStream_t stream);
// Rung 5: production float16, cuda::gemm_native: on a compute capability 9.0 GPU the
// wgmma kernel (gemm_wgmma.cu: warpgroup products read straight from swizzled shared
// memory), elsewhere the same mma.sync kernel as rung 4.
void cuda_gemm_production_f16(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                              void* c, cudaStream_t stream);

struct CudaRung {
  const char* name;  // case name in the bench and the test
  DType dtype;       // of A, B and C
  CudaGemm fn;
};

// In order; the last is the production tensor-core kernel.
inline constexpr CudaRung kCudaRungs[] = {
    {"1 naive f32", DType::Float32, cuda_gemm_naive},
    {"2 smem tiled f32", DType::Float32, cuda_gemm_tiled},
    {"3 production simt f32", DType::Float32, cuda_gemm_production_simt},
    {"4 mma.sync f16", DType::Float16, cuda_gemm_production_mma},
    {"5 production f16", DType::Float16, cuda_gemm_production_f16},
};

}  // namespace ember::ladder
