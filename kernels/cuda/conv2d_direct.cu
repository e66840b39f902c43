// The direct convolution kernels: each thread computes one output, one input-gradient
// element or one slice of a weight's sum, with the arithmetic of
// conv2d_direct_math.h (where the why is). This file holds the launches: the grid
// shapes, the conversions from the storage type, the bias, and stage 2 of the weight
// gradient (a warp per weight).
#include "kernels/base/dispatch.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/conv2d_direct_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

// The loads' conversion to the accumulator type (float for the half types).
struct ToAcc {
  template <class T>
  __device__ __forceinline__ acc_t<T> operator()(T v) const { return to_acc(v); }
};

// At most 64 registers (4 blocks of 256 threads per SM, half the SM's threads): left
// alone, the unrolled 5x5 loops keep 25 tap addresses live and take 112-114, a quarter
// of the threads; ptxas fits 64 without spilling.
template <class T, int KH, int KW>
__global__ void __launch_bounds__(kBlockThreads, 4)
    direct_forward_kernel(Conv2dShape s, int64_t total, const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ y) {
  const int64_t P = s.h_out * s.w_out;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    acc_t<T> v = direct::forward_at<acc_t<T>, KH, KW>(s, i, x, w, ToAcc{});
    if (bias) v += to_acc(bias[i / P % s.c_out]);  // in float: the half types round once
    y[i] = from_acc<T>(v);
  }
}

template <class T, int KH, int KW>
__global__ void direct_input_grad_kernel(Conv2dShape s, int64_t total, const T* __restrict__ gy,
                                         const T* __restrict__ w, T* __restrict__ gx) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    gx[i] = from_acc<T>(direct::input_grad_at<acc_t<T>, KH, KW>(s, i, gy, w, ToAcc{}));
}

template <class T>
__global__ void direct_weight_partial_kernel(Conv2dShape s, direct::WeightGradPlan pl, const T* __restrict__ gy,
                                             const T* __restrict__ x, acc_t<T>* __restrict__ ws) {
  const int64_t total = pl.rows * pl.parts;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(gridDim.x) * blockDim.x)
    direct::weight_grad_partial<acc_t<T>>(s, pl, t, gy, x, ws, ToAcc{});
}

// One warp per slot: grad_w (slots below pl.taps) or grad_b (the rest). The loop
// bound is the same for every lane of a warp, so the shuffles see all 32.
template <class T>
__global__ void direct_weight_merge_kernel(direct::WeightGradPlan pl, const acc_t<T>* __restrict__ ws,
                                           T* __restrict__ gw, T* __restrict__ gb) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t slot = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; slot < pl.slots; slot += warps) {
    const acc_t<T> sum = warp_sum(direct::weight_grad_lane_sum(pl, slot, lane, kWarp, ws));
    if (lane == 0) {
      if (slot < pl.taps) gw[slot] = from_acc<T>(sum);
      else gb[slot - pl.taps] = from_acc<T>(sum);
    }
  }
}

// f.template operator()<KH, KW>() with the kernel extents compiled in for the common
// 3x3 and 5x5 kernels, read at run time (0, 0) for any other.
template <class F>
void with_extents(const Conv2dShape& s, F&& f) {
  if (s.kh == 5 && s.kw == 5) return f.template operator()<5, 5>();
  if (s.kh == 3 && s.kw == 3) return f.template operator()<3, 3>();
  return f.template operator()<0, 0>();
}

}  // namespace

bool conv2d_direct_suits(const Conv2dShape& s) { return direct::suits(s); }

void conv2d_forward_direct(DType dt, const Conv2dShape& s, const void* x, const void* weight, const void* bias,
                           void* y, cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_forward");
  const int64_t total = s.n * s.c_out * s.h_out * s.w_out;
  if (total <= 0) return;
  dispatch_floating(dt, "conv2d_forward", "cuda", [&]<class T>() {
    with_extents(s, [&]<int KH, int KW>() {
      launch_1d(total, stream, direct_forward_kernel<T, KH, KW>, s, total, static_cast<const T*>(x),
                static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(y));
    });
  });
}

void conv2d_backward_input_direct(DType dt, const Conv2dShape& s, const void* grad_y, const void* weight,
                                  void* grad_x, cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_backward_input");
  const int64_t total = s.n * s.c_in * s.h * s.w;
  if (total <= 0) return;
  dispatch_floating(dt, "conv2d_backward_input", "cuda", [&]<class T>() {
    with_extents(s, [&]<int KH, int KW>() {
      launch_1d(total, stream, direct_input_grad_kernel<T, KH, KW>, s, total, static_cast<const T*>(grad_y),
                static_cast<const T*>(weight), static_cast<T*>(grad_x));
    });
  });
}

void conv2d_backward_weight_direct(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                                   void* grad_weight, void* grad_bias, cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_backward_weight");
  const size_t es = dtype_size(dt);
  const int64_t taps = s.c_out * (s.c_in / s.groups) * s.kh * s.kw;
  if (s.n * s.h_out * s.w_out <= 0) {  // no terms: every sum is zero
    if (taps > 0) EMBER_CUDA_CHECK(cudaMemsetAsync(grad_weight, 0, size_t(taps) * es, stream));
    if (grad_bias && s.c_out > 0) EMBER_CUDA_CHECK(cudaMemsetAsync(grad_bias, 0, size_t(s.c_out) * es, stream));
    return;
  }
  // Two waves of full SMs: enough warps in flight to hide the loads' latency.
  const int64_t threads = int64_t(properties().multiProcessorCount) * properties().maxThreadsPerMultiProcessor * 2;
  const direct::WeightGradPlan pl = direct::weight_grad_plan(s, grad_bias != nullptr, threads);
  if (pl.slots <= 0) return;
  dispatch_floating(dt, "conv2d_backward_weight", "cuda", [&]<class T>() {
    using A = acc_t<T>;
    ScratchBuffer ws(size_t(pl.slots * pl.parts) * sizeof(A), current_device_index(), stream);
    launch_1d(pl.rows * pl.parts, stream, direct_weight_partial_kernel<T>, s, pl, static_cast<const T*>(grad_y),
              static_cast<const T*>(x), ws.as<A>());
    direct_weight_merge_kernel<T><<<grid_for(pl.slots * kWarp), kBlockThreads, 0, stream>>>(
        pl, ws.as<A>(), static_cast<T*>(grad_weight), static_cast<T*>(grad_bias));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
