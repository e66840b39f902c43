// Ember's storage types as CUDA sees them. Half and BFloat16 (kernels/base/half.h)
// have the same bits as CUDA's __half and __nv_bfloat16, so kernels take Ember's
// types and convert with the hardware instructions below; every kernel computes
// in acc_t (float for the half types) and stores back with round-to-nearest-even.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/base/half.h"
#include "kernels/base/scalar.h"

namespace ember::cuda {

template <class T> __device__ __forceinline__ acc_t<T> to_acc(T v) { return v; }
template <> __device__ __forceinline__ float to_acc<Half>(Half v) {
  return __half2float(__ushort_as_half(v.bits));
}
template <> __device__ __forceinline__ float to_acc<BFloat16>(BFloat16 v) {
  return __bfloat162float(__ushort_as_bfloat16(v.bits));
}

template <class T> __device__ __forceinline__ T from_acc(acc_t<T> v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ Half from_acc<Half>(float v) {
  return Half::from_bits(__half_as_ushort(__float2half_rn(v)));
}
template <> __device__ __forceinline__ BFloat16 from_acc<BFloat16>(float v) {
  return BFloat16::from_bits(__bfloat16_as_ushort(__float2bfloat16_rn(v)));
}

// A 16-byte vector of T for vectorized loads and stores (alignment checked by the
// launcher before it takes the vector path).
template <class T>
struct alignas(16) Vec16 {
  static constexpr int kCount = 16 / sizeof(T);
  T v[kCount];
};

// N consecutive elements of T loaded or stored as one access of N * sizeof(T) bytes
// (at most 16): a kernel whose operands have different element sizes (a conversion,
// a comparison writing bool) moves the same number of elements of each.
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  static_assert(sizeof(T) * N <= 16 && (sizeof(T) * N & (sizeof(T) * N - 1)) == 0,
                "a Pack is one access of at most 16 bytes");
  T v[N];
};

}  // namespace ember::cuda
