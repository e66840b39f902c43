// The gradient scaler's kernels (see amp.h).
//
// Unscale: a multi-tensor launch. The host cuts every gradient into chunks of
// kChunk elements and passes, by value, a small table of the tensors (pointer,
// size, dtype, index of its first chunk). Each block takes chunks in a grid-stride
// loop, finds the chunk's tensor in the table, and streams it: 16-byte vector loads
// and stores when the tensor is aligned, a scalar loop otherwise and for the tail.
// Each element is tested for inf/NaN in float (after widening the half types) and
// multiplied by the inverse scale: one read and one write per element, the floor
// for this op. The flag is written only by threads that saw a bad value, and all
// of them write the same 1.0f, so no atomics are needed.
//
// Update: one thread applies PyTorch's rule to the scale and the growth tracker.
#include "kernels/cuda/amp.h"

#include <algorithm>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

constexpr int kAmpMaxTensors = 48;      // keeps the argument table near 1.2 KiB
constexpr int64_t kChunk = 8192;        // elements per block visit: 32 KiB of float32

struct TensorTable {
  void* data[kAmpMaxTensors];
  int64_t numel[kAmpMaxTensors];
  int64_t first_chunk[kAmpMaxTensors + 1];  // prefix sums; first_chunk[count] = total
  DType dtype[kAmpMaxTensors];
  int count;
};

template <class T>
__device__ void unscale_chunk(T* p, int64_t len, float inv, bool& bad) {
  using V = Vec16<T>;
  constexpr int kVec = V::kCount;
  int64_t start = 0;
  if (reinterpret_cast<uintptr_t>(p) % 16 == 0) {
    const int64_t nvec = len / kVec;
    V* pv = reinterpret_cast<V*>(p);
    for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) {
      V v = pv[i];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float x = to_acc(v.v[k]);
        bad |= !isfinite(x);
        v.v[k] = from_acc<T>(x * inv);
      }
      pv[i] = v;
    }
    start = nvec * kVec;
  }
  for (int64_t i = start + threadIdx.x; i < len; i += blockDim.x) {
    const float x = to_acc(p[i]);
    bad |= !isfinite(x);
    p[i] = from_acc<T>(x * inv);
  }
}

__global__ void unscale_kernel(TensorTable table, const float* scale, float* found_inf) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  const int64_t total = table.first_chunk[table.count];
  bool bad = false;
  for (int64_t chunk = blockIdx.x; chunk < total; chunk += gridDim.x) {
    int t = 0;
    while (table.first_chunk[t + 1] <= chunk) ++t;  // the table is short: a linear scan
    const int64_t offset = (chunk - table.first_chunk[t]) * kChunk;
    const int64_t len = min(kChunk, table.numel[t] - offset);
    // The dtype is the same for the whole block, so the branch does not diverge.
    switch (table.dtype[t]) {
      case DType::Float32: unscale_chunk(static_cast<float*>(table.data[t]) + offset, len, inv, bad); break;
      case DType::Float16: unscale_chunk(static_cast<Half*>(table.data[t]) + offset, len, inv, bad); break;
      case DType::BFloat16: unscale_chunk(static_cast<BFloat16*>(table.data[t]) + offset, len, inv, bad); break;
      default: break;  // the host passes only the three types above
    }
  }
  if (bad) *found_inf = 1.0f;
}

__global__ void update_scale_kernel(float* scale, int32_t* growth_tracker, const float* found_inf,
                                    double growth_factor, double backoff_factor, int64_t growth_interval) {
  if (*found_inf != 0.0f) {
    *scale = static_cast<float>(*scale * backoff_factor);
    *growth_tracker = 0;
    return;
  }
  const int64_t successful = static_cast<int64_t>(*growth_tracker) + 1;
  if (successful == growth_interval) {
    const float grown = static_cast<float>(*scale * growth_factor);
    if (isfinite(grown)) *scale = grown;  // never grow past float32's range to inf
    *growth_tracker = 0;
  } else {
    *growth_tracker = static_cast<int32_t>(successful);
  }
}

}  // namespace

void amp_unscale_grads(const GradBuffer* grads, int count, const float* scale, float* found_inf,
                       cudaStream_t stream) {
  int i = 0;
  while (i < count) {
    TensorTable table{};
    table.first_chunk[0] = 0;
    int n = 0;
    for (; i < count && n < kAmpMaxTensors; ++i) {
      if (grads[i].numel <= 0) continue;
      table.data[n] = grads[i].data;
      table.numel[n] = grads[i].numel;
      table.dtype[n] = grads[i].dtype;
      table.first_chunk[n + 1] = table.first_chunk[n] + (grads[i].numel + kChunk - 1) / kChunk;
      ++n;
    }
    table.count = n;
    const int64_t chunks = table.first_chunk[n];
    if (chunks == 0) continue;
    const unsigned grid = grid_for(chunks, 1, 4);
    unscale_kernel<<<grid, kBlockThreads, 0, stream>>>(table, scale, found_inf);
    EMBER_CUDA_CHECK_LAUNCH();
  }
}

void amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                      double backoff_factor, int64_t growth_interval, cudaStream_t stream) {
  update_scale_kernel<<<1, 1, 0, stream>>>(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                                           growth_interval);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
