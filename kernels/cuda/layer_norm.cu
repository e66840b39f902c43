// CUDA layer norm. Forward: one block per row (grid-stride over rows). Each thread
// accumulates sum(x - s) and sum((x - s)^2) over its strided share of the row, s being
// the row's first element (the CPU's shift, so large means do not cancel); a warp-
// shuffle and shared-memory block reduction gives mean and rstd to every thread,
// which then writes its share of y. One read of the row for the statistics, a
// second (mostly from L2) for y. Backward, grad_x: the same block per row reduces
// sum(g*w) and sum(g*w*xhat), then writes the formula of layer_norm.h. Backward,
// grad_weight and grad_bias: one thread per column walking the rows in order
// (adjacent threads read adjacent columns, so each row's read is coalesced); no
// atomics, deterministic. Accumulation in float for float32, double for float64.
#include "kernels/cuda/layer_norm.h"

#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

template <class T> __device__ __forceinline__ T rsqrt_of(T v) {
  if constexpr (std::is_same_v<T, float>) return ::rsqrtf(v);
  else return ::rsqrt(v);
}

// The block-wide sums of a and b, in every thread (each thread adds the warps'
// partials in the same order, so all agree bit for bit).
template <class T>
__device__ __forceinline__ void block_sum2(T& a, T& b, T* shared) {
  constexpr int kWarps = kBlockThreads / kWarp;
  a = warp_sum(a);
  b = warp_sum(b);
  if (threadIdx.x % kWarp == 0) {
    shared[threadIdx.x / kWarp] = a;
    shared[kWarps + threadIdx.x / kWarp] = b;
  }
  __syncthreads();
  a = shared[0];
  b = shared[kWarps];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) a += shared[w], b += shared[kWarps + w];
  __syncthreads();  // `shared` is written again by the next call
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    ln_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T eps, T* __restrict__ y,
               T* __restrict__ mean, T* __restrict__ rstd, int64_t rows, int64_t n) {
  __shared__ T shared[2 * kBlockThreads / kWarp];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // the same row for the whole block
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const T s = n > 0 ? xr[0] : T(0);
    T s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T d = xr[j] - s;
      s1 += d;
      s2 += d * d;
    }
    block_sum2(s1, s2, shared);
    const T m1 = n > 0 ? s1 / static_cast<T>(n) : T(0);
    const T var = n > 0 ? fmax(T(0), s2 / static_cast<T>(n) - m1 * m1) : T(0);
    const T mu = s + m1, rs = rsqrt_of(var + eps);
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T v = (xr[j] - mu) * rs;
      yr[j] = (w ? v * w[j] : v) + (b ? b[j] : T(0));
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    ln_backward_x(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ mean,
                  const T* __restrict__ rstd, const T* __restrict__ w, T* __restrict__ gx, int64_t rows, int64_t n) {
  __shared__ T shared[2 * kBlockThreads / kWarp];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * n;
    const T* xr = x + r * n;
    const T mu = mean[r], rs = rstd[r];
    T a = 0, c = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T gh = w ? gr[j] * w[j] : gr[j];
      a += gh;
      c += gh * (xr[j] - mu) * rs;
    }
    block_sum2(a, c, shared);
    a /= static_cast<T>(n);
    c /= static_cast<T>(n);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T gh = w ? gr[j] * w[j] : gr[j];
      gx[r * n + j] = rs * (gh - a - (xr[j] - mu) * rs * c);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    ln_backward_params(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ mean,
                       const T* __restrict__ rstd, T* __restrict__ gw, T* __restrict__ gb, int64_t rows, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += step) {
    T sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T gv = g[r * n + j];
      sw += gv * (x[r * n + j] - mean[r]) * rstd[r];
      sb += gv;
    }
    if (gw) gw[j] = sw;
    if (gb) gb[j] = sb;
  }
}

template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cuda and dtype " + dtype_name(dt));
}

}  // namespace

void layer_norm_forward(DType dt, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                        double eps, void* y, void* mean, void* rstd, cudaStream_t stream) {
  float_types(dt, "layer_norm", [&]<class T>() {
    if (rows <= 0) return;
    ln_forward<T><<<grid_for(rows, 1), kBlockThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T>(eps),
        static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), rows, cols);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void layer_norm_backward(DType dt, int64_t rows, int64_t cols, const void* grad_y, const void* x, const void* mean,
                         const void* rstd, const void* weight, void* grad_x, void* grad_weight, void* grad_bias,
                         cudaStream_t stream) {
  float_types(dt, "layer_norm_backward", [&]<class T>() {
    const T *g = static_cast<const T*>(grad_y), *xs = static_cast<const T*>(x);
    const T *mu = static_cast<const T*>(mean), *rs = static_cast<const T*>(rstd);
    if (grad_x && rows > 0 && cols > 0) {
      ln_backward_x<T><<<grid_for(rows, 1), kBlockThreads, 0, stream>>>(
          g, xs, mu, rs, static_cast<const T*>(weight), static_cast<T*>(grad_x), rows, cols);
      EMBER_CUDA_CHECK_LAUNCH();
    }
    if (grad_weight || grad_bias)
      launch_1d(cols, stream, ln_backward_params<T>, g, xs, mu, rs, static_cast<T*>(grad_weight),
                static_cast<T*>(grad_bias), rows, cols);
  });
}

}  // namespace ember::cuda
