// CUDA softmax, with the max subtracted first so exp never overflows:
//   y_i = exp(x_i - m) / sum_j exp(x_j - m),   log y_i = x_i - m - log(sum_j exp(x_j - m)).
// Three schedules, by shape:
//  * inner == 1, dim <= 1024: one warp per row, the row held in registers (VPL
//    values per lane), so the input is read once and the output written once;
//  * inner == 1, longer rows: one block per row; three sweeps over the row (max,
//    sum, write), the second and third mostly served from L2;
//  * inner > 1: one thread per (outer, inner) column walking `dim`; neighbouring
//    threads read neighbouring columns, so every sweep is coalesced.
// As on the CPU, the max ignores NaN (a NaN then makes the sum, and the row, NaN)
// and a row whose max is -inf uses 0 instead, so exp(x - m) stays defined.
#include "kernels/cuda/softmax.h"

#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

template <class T> using sm_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class A> __device__ __forceinline__ A exp_of(A x) {
  if constexpr (std::is_same_v<A, float>) return ::expf(x);
  else return ::exp(x);
}
template <class A> __device__ __forceinline__ A log_of(A x) {
  if constexpr (std::is_same_v<A, float>) return ::logf(x);
  else return ::log(x);
}
// The CPU's max step: a NaN never replaces the running max.
template <class A> __device__ __forceinline__ A max_of(A m, A x) { return x > m ? x : m; }

template <class A> __device__ __forceinline__ A warp_max_of(A v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2) v = max_of(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The value of a block-wide sum or max, in every thread. Each thread adds the
// warps' partials in the same order, so all agree bit for bit.
template <bool Max, class A>
__device__ __forceinline__ A block_all(A v, A* shared) {
  constexpr int kWarps = kBlockThreads / kWarp;
  v = Max ? warp_max_of(v) : warp_sum(v);
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = v;
  __syncthreads();
  A r = shared[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) r = Max ? max_of(r, shared[w]) : r + shared[w];
  __syncthreads();  // `shared` is written again by the next call
  return r;
}

template <class A> __device__ __forceinline__ A no_neg_inf(A m) {
  return m == -static_cast<A>(INFINITY) ? A(0) : m;
}

// One warp per row of dim <= 32 * VPL; lane l holds elements l, l + 32, ...
template <class T, int VPL>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_warp(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int dim, bool log) {
  using A = sm_acc_t<T>;
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; row < rows;
       row += warps) {  // the same row for every lane of a warp
    const T* x = in + row * dim;
    T* y = out + row * dim;
    A v[VPL];
    A m = -static_cast<A>(INFINITY);
#pragma unroll
    for (int k = 0; k < VPL; ++k) {
      const int i = lane + k * kWarp;
      v[k] = i < dim ? static_cast<A>(to_acc(x[i])) : -static_cast<A>(INFINITY);
      m = max_of(m, v[k]);
    }
    m = no_neg_inf(warp_max_of(m));
    A s = 0;
#pragma unroll
    for (int k = 0; k < VPL; ++k) {
      const int i = lane + k * kWarp;
      if (i < dim) s += exp_of(v[k] - m);
    }
    s = warp_sum(s);
    const A shift = m + log_of(s), inv = A(1) / s;
    // exp is computed again rather than kept: keeping VPL of them alive as well as
    // the inputs costs registers, and recomputing costs no memory traffic.
#pragma unroll
    for (int k = 0; k < VPL; ++k) {
      const int i = lane + k * kWarp;
      if (i < dim) y[i] = from_acc<T>(static_cast<acc_t<T>>(log ? v[k] - shift : exp_of(v[k] - m) * inv));
    }
  }
}

// One block per row (grid-stride over rows), three sweeps.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_block(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t dim, bool log) {
  using A = sm_acc_t<T>;
  __shared__ A shared[kBlockThreads / kWarp];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // the same row for the whole block
    const T* x = in + row * dim;
    T* y = out + row * dim;
    A m = -static_cast<A>(INFINITY);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) m = max_of(m, static_cast<A>(to_acc(x[i])));
    m = no_neg_inf(block_all<true>(m, shared));
    A s = 0;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) s += exp_of(static_cast<A>(to_acc(x[i])) - m);
    s = block_all<false>(s, shared);
    const A shift = m + log_of(s), inv = A(1) / s;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const A v = static_cast<A>(to_acc(x[i]));
      y[i] = from_acc<T>(static_cast<acc_t<T>>(log ? v - shift : exp_of(v - m) * inv));
    }
  }
}

// One thread per (outer, inner) column, three sweeps along dim.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_columns(const T* __restrict__ in, T* __restrict__ out, int64_t outer, int64_t dim, int64_t inner,
                    bool log) {
  using A = sm_acc_t<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner; c += step) {
    const int64_t o = c / inner, i = c - o * inner;
    const T* x = in + o * dim * inner + i;
    T* y = out + o * dim * inner + i;
    A m = -static_cast<A>(INFINITY);
    for (int64_t d = 0; d < dim; ++d) m = max_of(m, static_cast<A>(to_acc(x[d * inner])));
    m = no_neg_inf(m);
    A s = 0;
    for (int64_t d = 0; d < dim; ++d) s += exp_of(static_cast<A>(to_acc(x[d * inner])) - m);
    const A shift = m + log_of(s), inv = A(1) / s;
    for (int64_t d = 0; d < dim; ++d) {
      const A v = static_cast<A>(to_acc(x[d * inner]));
      y[d * inner] = from_acc<T>(static_cast<acc_t<T>>(log ? v - shift : exp_of(v - m) * inv));
    }
  }
}

template <class T, int VPL>
void launch_warp(int64_t rows, int64_t dim, const T* x, T* y, bool log, cudaStream_t stream) {
  softmax_warp<T, VPL><<<grid_for(rows * kWarp), kBlockThreads, 0, stream>>>(x, y, rows, static_cast<int>(dim), log);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void softmax(DType dt, int64_t outer, int64_t dim, int64_t inner, const void* in, void* out, bool log,
             cudaStream_t stream) {
  if (!is_floating(dt)) throw DTypeError(std::string("cuda::softmax: needs a floating dtype, got ") + dtype_name(dt));
  if (outer <= 0 || dim <= 0 || inner <= 0) return;
  dispatch_floating(dt, "softmax", "cuda", [&]<class T>() {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (inner > 1) {
      softmax_columns<T><<<grid_for(outer * inner), kBlockThreads, 0, stream>>>(x, y, outer, dim, inner, log);
      EMBER_CUDA_CHECK_LAUNCH();
    } else if (dim <= 32) {
      launch_warp<T, 1>(outer, dim, x, y, log, stream);
    } else if (dim <= 64) {
      launch_warp<T, 2>(outer, dim, x, y, log, stream);
    } else if (dim <= 128) {
      launch_warp<T, 4>(outer, dim, x, y, log, stream);
    } else if (dim <= 256) {
      launch_warp<T, 8>(outer, dim, x, y, log, stream);
    } else if (dim <= 512) {
      launch_warp<T, 16>(outer, dim, x, y, log, stream);
    } else if (dim <= 1024) {
      launch_warp<T, 32>(outer, dim, x, y, log, stream);
    } else {
      softmax_block<T><<<grid_for(outer, 1), kBlockThreads, 0, stream>>>(x, y, outer, dim, log);
      EMBER_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace ember::cuda
