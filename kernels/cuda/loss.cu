// Cross-entropy and NLL on CUDA (see loss.h).
//
// Target check: a small kernel marks bad rows with atomicMin on one device int64
// (first set to a value above any row), so the smallest bad row wins whatever the
// order the threads run in; the launcher copies it back once and synchronizes.
// Checking before computing is what lets a bad target leave every output
// untouched, as on the CPU; the one round trip is the price of returning the row.
//
// Forward: a group of threads per row, a warp for rows of up to kWarpRowMax
// classes, a whole block beyond that. The group reads the row twice (the second
// time from cache): once for the maximum m, once for sum exp(x - m), each pass
// strided across the group and combined with shuffles (and, for a block, through
// shared memory); loss = (m - x[target]) + log(sum), and the pair (m, log(sum)) is
// saved, as on the CPU (one number m + log(sum) would round away m's low bits). A
// row of -inf takes m = 0 so that its log-sum-exp comes out -inf instead of NaN.
//
// Backward: every element is independent once (m, log sum) is known, so one thread
// per element writes (exp((x - m) - log sum) - onehot) * grad in a single pass; NLL's backward is
// a memset and one store per row.
#include "kernels/cuda/loss.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

// Rows of up to this many classes get one warp (at most 32 elements per lane and
// pass); longer rows get a block of kBlockThreads.
constexpr int64_t kWarpRowMax = 1024;

__global__ void find_bad_target_kernel(int64_t n, int64_t c, const int64_t* __restrict__ t,
                                       int64_t ignore, long long* first) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t ti = t[i];
    if (ti != ignore && (ti < 0 || ti >= c)) atomicMin(first, static_cast<long long>(i));
  }
}

// The first row whose target is neither a class nor ignore; -1 if none. Synchronizes.
int64_t first_bad_target(int64_t n, int64_t c, const int64_t* t, int64_t ignore,
                         cudaStream_t stream) {
  if (n <= 0) return -1;
  ScratchBuffer first(sizeof(long long), current_device_index(), stream);
  // Every byte 0x7f: 0x7f7f7f7f7f7f7f7f, larger than any row index.
  EMBER_CUDA_CHECK(cudaMemsetAsync(first.get(), 0x7f, sizeof(long long), stream));
  launch_1d(n, stream, find_bad_target_kernel, n, c, t, ignore, first.as<long long>());
  long long host = 0;
  EMBER_CUDA_CHECK(
      cudaMemcpyAsync(&host, first.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host < n ? static_cast<int64_t>(host) : -1;
}

// The CPU's max: a NaN never replaces the running value (the sum pass then makes
// the log sum NaN, as on the CPU).
struct MaxOp {
  template <class A> __device__ A operator()(A a, A b) const { return b > a ? b : a; }
};
struct SumOp {
  template <class A> __device__ A operator()(A a, A b) const { return a + b; }
};

// Combines v over the kThreads threads of a row group; every thread of the group
// gets the same bits back. A warp needs only the xor butterfly (a + b == b + a, so
// both partners of each exchange compute the same value). A block then passes the
// warps' results through smem; every thread of the block must call it.
template <int kThreads, class A, class Op>
__device__ __forceinline__ A group_reduce(A v, A* smem, Op op) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (kThreads > kWarp) {
    constexpr int kWarps = kThreads / kWarp;
    if (threadIdx.x % kWarp == 0) smem[threadIdx.x / kWarp] = v;
    __syncthreads();
    v = smem[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = op(v, smem[w]);
    __syncthreads();  // everyone has read smem before the next call writes it
  }
  return v;
}

// kThreads = kWarp: blockDim.x = kBlockThreads holds several row groups;
// kThreads = kBlockThreads: one group per block. The row loop's bounds are the same
// for every thread of a group, so all of them reach every shuffle and barrier.
template <class T, int kThreads>
__global__ void __launch_bounds__(kBlockThreads)
    ce_forward_kernel(int64_t n, int64_t c, const T* __restrict__ x,
                      const int64_t* __restrict__ t, int64_t ignore, T* __restrict__ loss,
                      T* __restrict__ stats) {
  __shared__ T smem[kThreads / kWarp];
  const int lane = threadIdx.x % kThreads;
  const int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kThreads;
  const int64_t groups = int64_t(gridDim.x) * blockDim.x / kThreads;
  for (int64_t i = group; i < n; i += groups) {
    const T* xi = x + i * c;
    T m = -static_cast<T>(INFINITY);
    for (int64_t j = lane; j < c; j += kThreads) m = MaxOp{}(m, xi[j]);
    m = group_reduce<kThreads>(m, smem, MaxOp{});
    if (isinf(m) && m < 0) m = 0;
    T s = 0;
    for (int64_t j = lane; j < c; j += kThreads) s += exp(xi[j] - m);
    s = group_reduce<kThreads>(s, smem, SumOp{});
    if (lane == 0) {
      const T ls = log(s);
      const int64_t ti = t[i];
      stats[2 * i] = m;
      stats[2 * i + 1] = ls;
      loss[i] = ti == ignore ? T(0) : (m - xi[ti]) + ls;  // exact near the max, as on the CPU
    }
  }
}

// One thread per element of [n, c]; Idx is uint32_t when n*c < 2^31 (cheap
// division, and e + stride cannot wrap) and int64_t otherwise.
template <class T, class Idx>
__global__ void ce_backward_kernel(Idx total, Idx c, const T* __restrict__ x,
                                   const int64_t* __restrict__ t, int64_t ignore,
                                   const T* __restrict__ stats, const T* __restrict__ gl,
                                   T* __restrict__ gx) {
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx i = e / c;
    const int64_t j = static_cast<int64_t>(e - i * c);
    const int64_t ti = t[i];
    T out = 0;
    if (ti != ignore) {
      const T g = gl[i];
      out = exp((x[e] - stats[2 * i]) - stats[2 * i + 1]) * g;  // exact x - max, as forward
      if (j == ti) out -= g;
    }
    gx[e] = out;
  }
}

template <class T>
__global__ void nll_forward_kernel(int64_t n, int64_t c, const T* __restrict__ lp,
                                   const int64_t* __restrict__ t, int64_t ignore,
                                   T* __restrict__ loss) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t ti = t[i];
    loss[i] = ti == ignore ? T(0) : -lp[i * c + ti];
  }
}

// After a memset to zero: the one nonzero element of each row.
template <class T>
__global__ void nll_backward_kernel(int64_t n, int64_t c, const int64_t* __restrict__ t,
                                    int64_t ignore, const T* __restrict__ gl,
                                    T* __restrict__ gx) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t ti = t[i];
    if (ti != ignore && ti >= 0 && ti < c) gx[i * c + ti] = -gl[i];
  }
}

template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cuda and dtype " +
                            dtype_name(dt));
}

}  // namespace

int64_t cross_entropy_forward(DType dt, int64_t n, int64_t c, const void* logits,
                              const int64_t* targets, int64_t ignore_index, void* loss,
                              void* stats, cudaStream_t stream) {
  int64_t bad = -1;
  float_types(dt, "cross_entropy_forward", [&]<class T>() {
    if (n <= 0) return;
    bad = first_bad_target(n, c, targets, ignore_index, stream);
    if (bad >= 0) return;
    const T* x = static_cast<const T*>(logits);
    T* l = static_cast<T*>(loss);
    T* s = static_cast<T*>(stats);
    if (c <= kWarpRowMax) {
      ce_forward_kernel<T, kWarp><<<grid_for(n, kBlockThreads / kWarp), kBlockThreads, 0,
                                    stream>>>(n, c, x, targets, ignore_index, l, s);
    } else {
      ce_forward_kernel<T, kBlockThreads><<<grid_for(n, 1), kBlockThreads, 0, stream>>>(
          n, c, x, targets, ignore_index, l, s);
    }
    EMBER_CUDA_CHECK_LAUNCH();
  });
  return bad;
}

void cross_entropy_backward(DType dt, int64_t n, int64_t c, const void* logits,
                            const int64_t* targets, int64_t ignore_index, const void* stats,
                            const void* grad_loss, void* grad_logits, cudaStream_t stream) {
  float_types(dt, "cross_entropy_backward", [&]<class T>() {
    const int64_t total = n * c;
    const T* x = static_cast<const T*>(logits);
    const T* s = static_cast<const T*>(stats);
    const T* g = static_cast<const T*>(grad_loss);
    T* gx = static_cast<T*>(grad_logits);
    if (total < (int64_t(1) << 31))
      launch_1d(total, stream, ce_backward_kernel<T, uint32_t>, uint32_t(total), uint32_t(c), x,
                targets, ignore_index, s, g, gx);
    else
      launch_1d(total, stream, ce_backward_kernel<T, int64_t>, total, c, x, targets,
                ignore_index, s, g, gx);
  });
}

int64_t nll_loss_forward(DType dt, int64_t n, int64_t c, const void* log_probs,
                         const int64_t* targets, int64_t ignore_index, void* loss,
                         cudaStream_t stream) {
  int64_t bad = -1;
  float_types(dt, "nll_loss_forward", [&]<class T>() {
    if (n <= 0) return;
    bad = first_bad_target(n, c, targets, ignore_index, stream);
    if (bad >= 0) return;
    launch_1d(n, stream, nll_forward_kernel<T>, n, c, static_cast<const T*>(log_probs), targets,
              ignore_index, static_cast<T*>(loss));
  });
  return bad;
}

void nll_loss_backward(DType dt, int64_t n, int64_t c, const int64_t* targets,
                       int64_t ignore_index, const void* grad_loss, void* grad_log_probs,
                       cudaStream_t stream) {
  float_types(dt, "nll_loss_backward", [&]<class T>() {
    if (n <= 0 || c <= 0) return;
    // All-zero bits are +0.0 in both float types.
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_log_probs, 0, size_t(n * c) * sizeof(T), stream));
    launch_1d(n, stream, nll_backward_kernel<T>, n, c, targets, ignore_index,
              static_cast<const T*>(grad_loss), static_cast<T*>(grad_log_probs));
  });
}

}  // namespace ember::cuda
