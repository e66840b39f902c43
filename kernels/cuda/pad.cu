// CUDA padding: one thread per output element (grid-stride). A thread unravels its
// index over out_sizes, looks each coordinate up in its dim's map (maps are a few
// kilobytes at most and stay in L1/L2), and copies the source element or writes the
// fill value. Neighbouring threads write neighbouring outputs, so stores are
// coalesced; loads are too wherever the last dim is copied straight. The geometry
// travels by value as a kernel argument.
#include "kernels/cuda/pad.h"

#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

template <class U>
__global__ void __launch_bounds__(kBlockThreads)
    pad_kernel(PadGeometry g, const int64_t* __restrict__ maps, const U* __restrict__ x, U* __restrict__ y, U fill,
               int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t rest = e, off = 0;
    bool fill_here = false;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t o = rest % g.out_sizes[d];
      rest /= g.out_sizes[d];
      const int64_t s = maps[g.map_offset[d] + o];
      if (s < 0) fill_here = true;
      else off += s * g.in_strides[d];
    }
    y[e] = fill_here ? fill : x[off];
  }
}

template <class U>
void launch(const PadGeometry& g, const int64_t* maps, const void* x, void* y, uint64_t fill_bits, int64_t total,
            cudaStream_t stream) {
  U fill;
  memcpy(&fill, &fill_bits, sizeof(U));
  launch_1d(total, stream, pad_kernel<U>, g, maps, static_cast<const U*>(x), static_cast<U*>(y), fill, total);
}

}  // namespace

void pad(size_t element_size, const PadGeometry& g, const int64_t* maps, const void* x, void* y, uint64_t fill_bits,
         cudaStream_t stream) {
  int64_t total = 1;
  for (int d = 0; d < g.ndim; ++d) total *= g.out_sizes[d];
  switch (element_size) {
    case 1: return launch<uint8_t>(g, maps, x, y, fill_bits, total, stream);
    case 2: return launch<uint16_t>(g, maps, x, y, fill_bits, total, stream);
    case 4: return launch<uint32_t>(g, maps, x, y, fill_bits, total, stream);
    case 8: return launch<uint64_t>(g, maps, x, y, fill_bits, total, stream);
    default: throw ValueError("cuda::pad: element size must be 1, 2, 4 or 8 bytes, got " + std::to_string(element_size));
  }
}

}  // namespace ember::cuda
