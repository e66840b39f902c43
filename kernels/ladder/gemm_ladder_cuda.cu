// The CUDA rungs of the GEMM ladder (gemm_ladder_cuda.h): two teaching kernels, each
// a few lines, and the calls into the production kernels. Kernels first, launchers
// after. Rows of C beyond the grid's 65535-block height are covered by letting each
// block step down C by the grid's height, so any m works.
#include <algorithm>

#include "kernels/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/ladder/gemm_ladder_cuda.h"

namespace ember::ladder {
namespace {

// Rung 1. Thread (x, y) computes c[i][j], j from x and i from y. A warp is 32
// consecutive x: its 32 threads read row p of B at 32 consecutive columns (one
// coalesced 128-byte load) and the same a[i][p] (one broadcast). Every multiply-add
// still needs two loads from global memory (L2 or L1 at best): the kernel is bound by
// memory traffic, not by the FMA units.
__global__ void naive_kernel(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                             float* c) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < m;
       i += int64_t(gridDim.y) * blockDim.y) {
    float sum = 0;
    for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
    c[i * n + j] = sum;
  }
}

// Rung 2. A block of TILE x TILE threads computes a TILE x TILE tile of C. It walks k
// a tile at a time: each thread loads one element of A's tile and one of B's into
// shared memory, the block waits, then each thread does TILE multiply-adds from
// shared memory. Every global load now serves TILE FMAs instead of one. Loads past the
// matrix read zeros, so edge tiles need no other case. The limit moves to shared
// memory: two shared loads per FMA (rung 3 keeps values in registers to fix that).
constexpr int TILE = 32;

__global__ void tiled_kernel(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                             float* c) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t j = blockIdx.x * int64_t(TILE) + tx;
  // The loop bounds depend only on the block, so every thread reaches each barrier.
  for (int64_t i0 = blockIdx.y * int64_t(TILE); i0 < m; i0 += int64_t(gridDim.y) * TILE) {
    const int64_t i = i0 + ty;
    float sum = 0;
    for (int64_t p0 = 0; p0 < k; p0 += TILE) {
      // Consecutive tx read consecutive addresses: both loads are coalesced.
      As[ty][tx] = i < m && p0 + tx < k ? a[i * k + p0 + tx] : 0.0f;
      Bs[ty][tx] = p0 + ty < k && j < n ? b[(p0 + ty) * n + j] : 0.0f;
      __syncthreads();
      // As[ty][q] is one address for the whole warp (a broadcast); Bs[q][tx] is 32
      // consecutive floats, one per bank: neither read conflicts.
#pragma unroll
      for (int q = 0; q < TILE; ++q) sum += As[ty][q] * Bs[q][tx];
      __syncthreads();  // nobody overwrites the tiles while others still read them
    }
    if (i < m && j < n) c[i * n + j] = sum;
  }
}

// Grid for `rows_per_block` x `cols_per_block` blocks over C; the height is capped at
// 65535 blocks (the kernels loop over the rest).
dim3 grid_for(int64_t m, int64_t n, int rows_per_block, int cols_per_block) {
  const int64_t x = (n + cols_per_block - 1) / cols_per_block;
  const int64_t y = (m + rows_per_block - 1) / rows_per_block;
  if (x > INT32_MAX) throw ValueError("gemm: n is too large for the CUDA grid");
  return dim3(unsigned(x), unsigned(std::min<int64_t>(y, 65535)));
}

// Row-major contiguous operands as cuda::gemm_native takes them: batch 1, row stride
// the width, column stride 1.
void production(DType dt, int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                void* c, cudaStream_t stream) {
  cuda::gemm_native(dt, 1, m, n, k, 1.0, a, m * k, k, 1, b, k * n, n, 1, 0.0, c, m * n, n, 1,
                    stream);
}

}  // namespace

void cuda_gemm_naive(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
                     cudaStream_t stream) {
  const dim3 block(32, 8);
  naive_kernel<<<grid_for(m, n, 8, 32), block, 0, stream>>>(
      m, n, k, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c));
  EMBER_CUDA_CHECK_LAUNCH();
}

void cuda_gemm_tiled(int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c,
                     cudaStream_t stream) {
  const dim3 block(TILE, TILE);
  tiled_kernel<<<grid_for(m, n, TILE, TILE), block, 0, stream>>>(
      m, n, k, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c));
  EMBER_CUDA_CHECK_LAUNCH();
}

void cuda_gemm_production_simt(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                               void* c, cudaStream_t stream) {
  production(DType::Float32, m, n, k, a, b, c, stream);
}

void cuda_gemm_production_mma(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                              void* c, cudaStream_t stream) {
  cuda::gemm_mma_sync(DType::Float16, 1, m, n, k, 1.0, a, m * k, k, 1, b, k * n, n, 1, 0.0, c, m * n, n, 1,
                      stream);
}

void cuda_gemm_production_f16(int64_t m, int64_t n, int64_t k, const void* a, const void* b,
                              void* c, cudaStream_t stream) {
  production(DType::Float16, m, n, k, a, b, c, stream);
}

}  // namespace ember::ladder
