// CUDA softmax, with the max subtracted first so exp never overflows:
//   y_i = exp(x_i - m) / sum_j exp(x_j - m),   log y_i = x_i - m - log(sum_j exp(x_j - m)).
// Schedules, by shape (the first two only with EMBER_CUDA_REDUCE=vector, opt-in
// until a GPU run checks them: vector_reductions() in reduce.h):
//  * inner == 1, rows 16-byte aligned (dim a multiple of 16 / sizeof(T), pointers
//    aligned), dim <= 1024: a group of G lanes per row (G a power of two up to 32,
//    so a warp takes 32 / G rows at once), each lane holding K 16-byte vectors of
//    its row in registers, all loaded before any is used: 64 bytes or more in
//    flight per lane even for short rows, and the input is read once;
//  * inner == 1, aligned, dim <= 8192 (4096 for float64): one block per row, the
//    row in registers the same way (K vectors per thread), read once;
//  * inner == 1 otherwise, dim <= 1024: one warp per row, VPL values per lane;
//  * inner == 1, longer rows: one block per row; three sweeps over the row (max,
//    sum, write), the second and third mostly served from L2;
//  * inner > 1: one thread per (outer, inner) column walking `dim`; neighbouring
//    threads read neighbouring columns, so every sweep is coalesced.
// Where the row sits in registers, exp(x - m) is kept in place of x for the output
// (the same value the sum added, so the same bits as computing it again).
// As on the CPU, the max ignores NaN (a NaN then makes the sum, and the row, NaN)
// and a row whose max is -inf uses 0 instead, so exp(x - m) stays defined.
#include "kernels/cuda/softmax.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.h"
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
    const A ls = log_of(s), inv = A(1) / s;  // log: (x - m) - ls, exact near the max
    // exp is computed again rather than kept: keeping VPL of them alive as well as
    // the inputs costs registers, and recomputing costs no memory traffic.
#pragma unroll
    for (int k = 0; k < VPL; ++k) {
      const int i = lane + k * kWarp;
      if (i < dim) y[i] = from_acc<T>(static_cast<acc_t<T>>(log ? (v[k] - m) - ls : exp_of(v[k] - m) * inv));
    }
  }
}

// Max or sum over each aligned group of G lanes (G a power of two); every lane of
// the group gets the result.
template <bool Max, class A>
__device__ __forceinline__ A group_all(A v, int G) {
  for (int o = G / 2; o > 0; o /= 2) {
    const A u = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? max_of(v, u) : v + u;
  }
  return v;
}

// Row elements a thread holds in registers, at most: K vectors of 16 / sizeof(T).
constexpr int kMaxHeld = 32;

// The epilogue both register schedules share: v holds the row's values (those past
// dim, where held[k] is false, are -inf); m and s are computed with `reduce` (a
// group or block max/sum); the outputs go to y at the same places.
template <class T, int K, class A, class Index, class Reduce>
__device__ __forceinline__ void softmax_held(A (&v)[K][Vec16<T>::kCount], const bool (&held)[K], Index index,
                                             T* __restrict__ y, bool log, Reduce reduce) {
  constexpr int N = Vec16<T>::kCount;
  A m = -static_cast<A>(INFINITY);
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < N; ++e) m = max_of(m, v[k][e]);
  m = no_neg_inf(reduce(m, true));
  A s = 0;
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < N; ++e) {
      if (!held[k]) continue;
      const A ex = exp_of(v[k][e] - m);
      s += ex;
      if (!log) v[k][e] = ex;
    }
  s = reduce(s, false);
  const A ls = log_of(s), inv = A(1) / s;  // log: (x - m) - ls, exact near the max
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (!held[k]) continue;
    Vec16<T> out;
#pragma unroll
    for (int e = 0; e < N; ++e) out.v[e] = from_acc<T>(static_cast<acc_t<T>>(log ? (v[k][e] - m) - ls : v[k][e] * inv));
    *reinterpret_cast<Vec16<T>*>(y + index(k)) = out;
  }
}

// Loads vector k of the row x (first element index(k)) into v[k], or -inf past dim.
template <class T, int K, class A, class Index>
__device__ __forceinline__ void load_held(A (&v)[K][Vec16<T>::kCount], bool (&held)[K], const T* __restrict__ x,
                                          int dim, bool live, Index index) {
  constexpr int N = Vec16<T>::kCount;
  Vec16<T> raw[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {  // every load issued before any value is used
    held[k] = live && index(k) < dim;
    if (held[k]) raw[k] = *reinterpret_cast<const Vec16<T>*>(x + index(k));
  }
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < N; ++e) v[k][e] = held[k] ? static_cast<A>(to_acc(raw[k].v[e])) : -static_cast<A>(INFINITY);
}

// Groups of G lanes per row, K 16-byte vectors per lane: lane `sub` of its group
// holds elements (k * G + sub) * N ... + N - 1. The loop bound is the same for the
// whole warp, so every lane reaches the shuffles; lanes past the last row hold
// -inf and store nothing.
template <class T, int K>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_warp_vec(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int dim, int G, bool log) {
  using A = sm_acc_t<T>;
  constexpr int N = Vec16<T>::kCount;
  const int lane = threadIdx.x % kWarp, sub = lane % G, per_warp = kWarp / G;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  auto index = [&](int k) { return (k * G + sub) * N; };
  auto reduce = [&](A v, bool max) { return max ? group_all<true>(v, G) : group_all<false>(v, G); };
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; w * per_warp < rows;
       w += warps) {
    const int64_t row = w * per_warp + lane / G;
    const bool live = row < rows;
    A v[K][N];
    bool held[K];
    load_held<T, K>(v, held, in + row * dim, dim, live, index);
    softmax_held<T, K>(v, held, index, out + row * dim, log, reduce);
  }
}

// One block per row, K 16-byte vectors per thread: thread t holds elements
// (k * blockDim + t) * N ... + N - 1.
template <class T, int K>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_block_vec(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int dim, bool log) {
  using A = sm_acc_t<T>;
  constexpr int N = Vec16<T>::kCount;
  __shared__ A shared[kBlockThreads / kWarp];
  auto index = [&](int k) { return (k * kBlockThreads + static_cast<int>(threadIdx.x)) * N; };
  auto reduce = [&](A v, bool max) { return max ? block_all<true>(v, shared) : block_all<false>(v, shared); };
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // the same row for the whole block
    A v[K][N];
    bool held[K];
    load_held<T, K>(v, held, in + row * dim, dim, true, index);
    softmax_held<T, K>(v, held, index, out + row * dim, log, reduce);
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
    const A ls = log_of(s), inv = A(1) / s;  // log: (x - m) - ls, exact near the max
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const A v = static_cast<A>(to_acc(x[i]));
      y[i] = from_acc<T>(static_cast<acc_t<T>>(log ? (v - m) - ls : exp_of(v - m) * inv));
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
    const A ls = log_of(s), inv = A(1) / s;  // log: (x - m) - ls, exact near the max
    for (int64_t d = 0; d < dim; ++d) {
      const A v = static_cast<A>(to_acc(x[d * inner]));
      y[d * inner] = from_acc<T>(static_cast<acc_t<T>>(log ? (v - m) - ls : exp_of(v - m) * inv));
    }
  }
}

template <class T, int VPL>
void launch_warp(int64_t rows, int64_t dim, const T* x, T* y, bool log, cudaStream_t stream) {
  softmax_warp<T, VPL><<<grid_for(rows * kWarp), kBlockThreads, 0, stream>>>(x, y, rows, static_cast<int>(dim), log);
  EMBER_CUDA_CHECK_LAUNCH();
}

// The register schedules for rows of aligned 16-byte vectors (inner == 1); false
// where the row does not qualify, and the scalar schedules run.
template <class T>
bool launch_vectors(int64_t rows, int64_t dim, const T* x, T* y, bool log, cudaStream_t stream) {
  constexpr int N = Vec16<T>::kCount;
  constexpr int kMaxK = std::min(8, kMaxHeld / N);
  if (dim % N != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(y) % 16 != 0)
    return false;
  const int64_t vectors = dim / N;
  // K, the vectors per lane or thread: the smallest power of two (at most kMaxK) for
  // which `width` lanes or threads cover the row.
  auto held = [&](int64_t width) {
    int k = 1;
    while (k < kMaxK && k * width < vectors) k *= 2;
    return k * width >= vectors ? k : 0;
  };
  auto dispatch_k = [&](int k, auto launch) {
    switch (k) {
      case 1: launch.template operator()<1>(); break;
      case 2: if constexpr (kMaxK >= 2) launch.template operator()<2>(); break;
      case 4: if constexpr (kMaxK >= 4) launch.template operator()<4>(); break;
      case 8: if constexpr (kMaxK >= 8) launch.template operator()<8>(); break;
    }
    EMBER_CUDA_CHECK_LAUNCH();
  };
  if (dim <= 1024) {
    // G lanes per row: about a quarter of the row's vectors, so that each lane
    // holds about 4 (short rows share a warp rather than leave lanes idle), and
    // enough that no lane needs more than kMaxK (else a half-type row of 40 to 1024
    // elements would fall through to a block of 256 threads per row).
    int G = 1;
    while (G < kWarp && (2 * G * 4 <= vectors || G * kMaxK < vectors)) G *= 2;
    if (const int k = held(G)) {
      const int64_t groups = (rows + kWarp / G - 1) / (kWarp / G);  // warps' worth of rows
      dispatch_k(k, [&]<int K>() {
        softmax_warp_vec<T, K><<<grid_for(groups * kWarp), kBlockThreads, 0, stream>>>(x, y, rows, static_cast<int>(dim),
                                                                                       G, log);
      });
      return true;
    }
  }
  if (const int k = held(kBlockThreads)) {
    dispatch_k(k, [&]<int K>() {
      softmax_block_vec<T, K><<<grid_for(rows, 1), kBlockThreads, 0, stream>>>(x, y, rows, static_cast<int>(dim), log);
    });
    return true;
  }
  return false;
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
    } else if (vector_reductions() && launch_vectors(outer, dim, x, y, log, stream)) {
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
