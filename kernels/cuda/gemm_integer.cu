// Integer matmul on a CUDA device (Int8, UInt8, Int32, Int64), with the semantics of
// cpu::gemm_integer: exact, wrapping around in the element type. Sums are kept in
// the unsigned type of the same width, whose overflow is defined as arithmetic
// modulo 2^bits, and cast back at the end: the same bits as the CPU's wrap-around.
// Integer matmul is rare (quantized layers have their own kernels), so this is the
// plain shared-memory tiled kernel: 16 x 16 threads, one output each, k in steps of 16.
#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/base/error.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

constexpr int kTile = 16;

template <class T>
__global__ void gemm_integer_kernel(int64_t batch, int64_t m, int64_t n, int64_t k,
                                    const T* __restrict__ a, int64_t a_bs, int64_t a_rs,
                                    int64_t a_cs, const T* __restrict__ b, int64_t b_bs,
                                    int64_t b_rs, int64_t b_cs, T* __restrict__ c, int64_t c_bs,
                                    int64_t c_rs, int64_t c_cs) {
  using U = std::make_unsigned_t<T>;
  __shared__ U As[kTile][kTile + 1];  // [row][k]; +1 keeps column reads off one bank
  __shared__ U Bs[kTile][kTile + 1];  // [k][col]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * kTile + tx, m_tiles = (m + kTile - 1) / kTile;
  // y and z are capped at 65535 blocks: past that a block takes several row tiles and
  // matrices. Both loops are uniform across the block, so the __syncthreads are safe.
  for (int64_t p = blockIdx.z; p < batch; p += gridDim.z)
    for (int64_t tm = blockIdx.y; tm < m_tiles; tm += gridDim.y) {
      const int64_t row = tm * kTile + ty;
      U acc = 0;
      for (int64_t k0 = 0; k0 < k; k0 += kTile) {
        // Thread (ty, tx) loads A[row][k0 + tx] and B[k0 + ty][col]; zeros outside.
        As[ty][tx] = (row < m && k0 + tx < k) ? U(a[p * a_bs + row * a_rs + (k0 + tx) * a_cs]) : U(0);
        Bs[ty][tx] = (col < n && k0 + ty < k) ? U(b[p * b_bs + (k0 + ty) * b_rs + col * b_cs]) : U(0);
        __syncthreads();
#pragma unroll
        for (int q = 0; q < kTile; ++q) acc = U(acc + U(As[ty][q] * Bs[q][tx]));
        __syncthreads();
      }
      if (row < m && col < n) c[p * c_bs + row * c_rs + col * c_cs] = static_cast<T>(acc);
    }
}

template <class T>
void launch(int64_t batch, int64_t m, int64_t n, int64_t k, const void* a, int64_t a_bs,
            int64_t a_rs, int64_t a_cs, const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
            void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  const int64_t gx = (n + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  if (gx > INT32_MAX) throw ValueError("gemm_integer: n is too large for the CUDA grid");
  const dim3 grid(unsigned(gx), unsigned(std::min<int64_t>(gy, 65535)), unsigned(std::min<int64_t>(batch, 65535)));
  gemm_integer_kernel<T><<<grid, dim3(kTile, kTile), 0, stream>>>(
      batch, m, n, k, static_cast<const T*>(a), a_bs, a_rs, a_cs, static_cast<const T*>(b), b_bs,
      b_rs, b_cs, static_cast<T*>(c), c_bs, c_rs, c_cs);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_integer(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  // k == 0 runs the kernel too: the k loop is empty and every output becomes 0.
  switch (dt) {
    case DType::Int8:
      return launch<int8_t>(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, c_rs, c_cs, stream);
    case DType::UInt8:
      return launch<uint8_t>(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, c_rs, c_cs, stream);
    case DType::Int32:
      return launch<int32_t>(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, c_rs, c_cs, stream);
    case DType::Int64:
      return launch<int64_t>(batch, m, n, k, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, c_rs, c_cs, stream);
    default:
      throw NotImplementedError(std::string("matmul: not implemented for dtype ") + dtype_name(dt) + " on cuda");
  }
}

}  // namespace ember::cuda
