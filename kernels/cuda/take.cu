// CUDA take and its backward. The forward is one thread per output element (a
// grid-stride loop): neighbouring threads copy neighbouring elements of one row, so
// reads and writes are coalesced whenever inner is large. The backward is a gather,
// not a scatter: one thread per (o, i) column zeroes its column of grad_in and walks
// j in increasing order adding grad_out[o, j, i] into grad_in[o, index[j], i]. No two
// threads share an element, so there are no atomics and the sums come out in the
// CPU's order, bit for bit. Its parallelism is outer * inner (an embedding table
// of width 768 gives 768 threads); a segmented sort by index would scale further.
#include "kernels/cuda/take.h"

#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

// U is an unsigned integer of the element's size: take moves bits, not values.
template <class U>
__global__ void __launch_bounds__(kBlockThreads)
    take_kernel(const U* __restrict__ in, U* __restrict__ out, const int64_t* __restrict__ index, int64_t size,
                int64_t inner, int64_t n_index, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t i = e % inner, r = e / inner;  // r = o * n_index + j
    const int64_t j = r % n_index, o = r / n_index;
    out[e] = in[(o * size + index[j]) * inner + i];
  }
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    take_backward_kernel(const T* __restrict__ g, T* __restrict__ gx, const int64_t* __restrict__ index,
                         int64_t size, int64_t inner, int64_t n_index, int64_t columns) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; c += step) {
    const int64_t o = c / inner, i = c - o * inner;
    T* base = gx + o * size * inner + i;
    for (int64_t s = 0; s < size; ++s) base[s * inner] = T(0);
    const T* src = g + o * n_index * inner + i;
    for (int64_t j = 0; j < n_index; ++j) {
      const int64_t s = index[j];
      if (s >= 0 && s < size) base[s * inner] += src[j * inner];  // the CPU skips the others too
    }
  }
}

template <class U>
void launch_take(int64_t outer, int64_t size, int64_t inner, const int64_t* index, int64_t n_index, const void* in,
                 void* out, cudaStream_t stream) {
  launch_1d(outer * n_index * inner, stream, take_kernel<U>, static_cast<const U*>(in), static_cast<U*>(out), index,
            size, inner, n_index, outer * n_index * inner);
}

}  // namespace

void take(size_t element_size, int64_t outer, int64_t size, int64_t inner, const int64_t* index, int64_t n_index,
          const void* in, void* out, cudaStream_t stream) {
  switch (element_size) {
    case 1: return launch_take<uint8_t>(outer, size, inner, index, n_index, in, out, stream);
    case 2: return launch_take<uint16_t>(outer, size, inner, index, n_index, in, out, stream);
    case 4: return launch_take<uint32_t>(outer, size, inner, index, n_index, in, out, stream);
    case 8: return launch_take<uint64_t>(outer, size, inner, index, n_index, in, out, stream);
    default: throw ValueError("cuda::take: element size must be 1, 2, 4 or 8 bytes, got " + std::to_string(element_size));
  }
}

void take_backward(DType dt, int64_t outer, int64_t size, int64_t inner, const int64_t* index, int64_t n_index,
                   const void* grad_out, void* grad_in, cudaStream_t stream) {
  const int64_t columns = outer * inner;
  switch (dt) {
    case DType::Float32:
      return launch_1d(columns, stream, take_backward_kernel<float>, static_cast<const float*>(grad_out),
                       static_cast<float*>(grad_in), index, size, inner, n_index, columns);
    case DType::Float64:
      return launch_1d(columns, stream, take_backward_kernel<double>, static_cast<const double*>(grad_out),
                       static_cast<double*>(grad_in), index, size, inner, n_index, columns);
    default:
      throw NotImplementedError(std::string("take_backward: no kernel for device cuda and dtype ") + dtype_name(dt));
  }
}

}  // namespace ember::cuda
