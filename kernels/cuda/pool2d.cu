// Pooling on CUDA (see pool2d.h). One thread per output in the forward passes:
// it walks its window exactly as the CPU's general loop does, clipped to the input
// (and, for average pooling's count_include_pad divisor, to the padded input).
//
// The backward passes are gathers, one thread per input element: instead of each
// output adding into its window (a scatter, which needs atomics wherever windows
// overlap and then sums in whatever order the threads run), each input element
// visits the outputs whose windows contain it and sums their contributions in
// increasing output order, which is the order the CPU's scatter adds them in. So
// the result is deterministic and the same bits as on the CPU. Row iy of the input
// lies in the window of output row oy when iy = oy*stride - pad + a*dil for some
// a in [0, k): oy runs from ceil((iy + pad - (k-1)*dil) / stride) to
// floor((iy + pad) / stride), keeping those with (iy + pad - oy*stride) divisible
// by dil; the same for columns.
//
// Index math runs in int32 when every offset the kernels form fits (any image
// below about 2^30 elements in all), in int64 otherwise.
#include "kernels/cuda/pool2d.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/base/error.h"
#include "kernels/base/window.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

// The shape in the index type of the kernels, with Pool2dShape's field names so that
// kernels/base/window.h's windows take it.
template <class Idx>
struct Geometry {
  Idx planes, h, w, h_out, w_out, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int64_t divisor_override;
  bool count_include_pad;
};

template <class Idx>
Geometry<Idx> geometry(const Pool2dShape& s) {
  return {Idx(s.n * s.c),
          Idx(s.h),
          Idx(s.w),
          Idx(std::max<int64_t>(s.h_out, 0)),
          Idx(std::max<int64_t>(s.w_out, 0)),
          Idx(s.kh),
          Idx(s.kw),
          Idx(s.stride_h),
          Idx(s.stride_w),
          Idx(s.pad_h),
          Idx(s.pad_w),
          Idx(s.dil_h),
          Idx(s.dil_w),
          s.divisor_override,
          s.count_include_pad};
}

// Whether int32 holds every offset: coordinates stay within the padded input plus
// one dilated window and one stride on each axis; 2^30 leaves room for the
// grid-stride step past the end.
bool fits_int32(const Pool2dShape& s) {
  const double hh = double(s.h) + 2.0 * s.pad_h + double(s.kh) * s.dil_h + s.stride_h + 1;
  const double ww = double(s.w) + 2.0 * s.pad_w + double(s.kw) * s.dil_w + s.stride_w + 1;
  return double(s.n) * s.c * hh * ww < double(1 << 30);
}

template <class Idx>
__device__ __forceinline__ Idx min_of(Idx a, Idx b) { return a < b ? a : b; }

// ceil(num / d) for d > 0, clamped below at 0 (num may be negative).
template <class Idx>
__device__ __forceinline__ Idx ceil_div_nonneg(Idx num, Idx d) {
  return num <= 0 ? Idx(0) : (num + d - 1) / d;
}

template <class T, class Idx>
__global__ void max_forward_kernel(Geometry<Idx> g, const T* __restrict__ x, T* __restrict__ y,
                                   int64_t* __restrict__ ind) {
  const Idx out_plane = g.h_out * g.w_out, in_plane = g.h * g.w;
  const Idx total = g.planes * out_plane;
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx plane = e / out_plane, o = e - plane * out_plane;
    const Idx oy = o / g.w_out, ox = o - oy * g.w_out;
    const MaxWindow<Idx> win = max_window(g, oy, ox);
    const T* xp = x + plane * in_plane;
    // As on the CPU: start from -inf at the first in-bounds element, so a window of
    // -inf (or an empty one) reports that element; a NaN always replaces.
    T m = -static_cast<T>(INFINITY);
    Idx k = win.y0 * g.w + win.x0;
    for (Idx iy = win.y0; iy < win.y1; iy += g.dil_h)
      for (Idx ix = win.x0; ix < win.x1; ix += g.dil_w) {
        const T v = xp[iy * g.w + ix];
        if (v > m || v != v) {
          m = v;
          k = iy * g.w + ix;
        }
      }
    y[e] = m;
    if (ind) ind[e] = static_cast<int64_t>(k);
  }
}

// Gather form; needs the full window geometry.
template <class T, class Idx>
__global__ void max_backward_gather_kernel(Geometry<Idx> g, const T* __restrict__ gy,
                                           const int64_t* __restrict__ ind,
                                           T* __restrict__ gx) {
  const Idx out_plane = g.h_out * g.w_out, in_plane = g.h * g.w;
  const Idx total = g.planes * in_plane;
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx plane = e / in_plane, k = e - plane * in_plane;
    const Idx iy = k / g.w, ix = k - iy * g.w;
    const Idx oy0 = ceil_div_nonneg(iy + g.pad_h - (g.kh - 1) * g.dil_h, g.stride_h);
    const Idx oy1 = min_of((iy + g.pad_h) / g.stride_h, g.h_out - 1);
    const Idx ox0 = ceil_div_nonneg(ix + g.pad_w - (g.kw - 1) * g.dil_w, g.stride_w);
    const Idx ox1 = min_of((ix + g.pad_w) / g.stride_w, g.w_out - 1);
    const T* gp = gy + plane * out_plane;
    const int64_t* ip = ind + plane * out_plane;
    T acc = 0;
    for (Idx oy = oy0; oy <= oy1; ++oy) {
      if (g.dil_h > 1 && (iy + g.pad_h - oy * g.stride_h) % g.dil_h != 0) continue;
      for (Idx ox = ox0; ox <= ox1; ++ox) {
        if (g.dil_w > 1 && (ix + g.pad_w - ox * g.stride_w) % g.dil_w != 0) continue;
        const Idx o = oy * g.w_out + ox;
        if (ip[o] == static_cast<int64_t>(k)) acc += gp[o];
      }
    }
    gx[e] = acc;
  }
}

// Scatter form for when only the plane sizes are known; grad_x was zeroed.
template <class T, class Idx>
__global__ void max_backward_scatter_kernel(Geometry<Idx> g, const T* __restrict__ gy,
                                            const int64_t* __restrict__ ind,
                                            T* __restrict__ gx) {
  const Idx out_plane = g.h_out * g.w_out, in_plane = g.h * g.w;
  const Idx total = g.planes * out_plane;
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx plane = e / out_plane;
    const int64_t k = ind[e];
    if (k >= 0 && k < static_cast<int64_t>(in_plane))
      atomicAdd(gx + plane * in_plane + static_cast<Idx>(k), gy[e]);
  }
}

template <class T, class Idx>
__global__ void avg_forward_kernel(Geometry<Idx> g, const T* __restrict__ x,
                                   T* __restrict__ y) {
  const Idx out_plane = g.h_out * g.w_out, in_plane = g.h * g.w;
  const Idx total = g.planes * out_plane;
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx plane = e / out_plane, o = e - plane * out_plane;
    const Idx oy = o / g.w_out, ox = o - oy * g.w_out;
    const AvgWindow<Idx> a = avg_window(g, oy, ox);
    const T* xp = x + plane * in_plane;
    T sum = 0;
    for (Idx iy = a.y0; iy < a.y1; ++iy)
      for (Idx ix = a.x0; ix < a.x1; ++ix) sum += xp[iy * g.w + ix];
    y[e] = a.empty() ? T(0) : sum / static_cast<T>(a.divisor);
  }
}

template <class T, class Idx>
__global__ void avg_backward_kernel(Geometry<Idx> g, const T* __restrict__ gy,
                                    T* __restrict__ gx) {
  const Idx out_plane = g.h_out * g.w_out, in_plane = g.h * g.w;
  const Idx total = g.planes * in_plane;
  const Idx stride = Idx(gridDim.x) * blockDim.x;
  for (Idx e = Idx(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const Idx plane = e / in_plane, k = e - plane * in_plane;
    const Idx iy = k / g.w, ix = k - iy * g.w;
    // Windows are undilated here: row oy covers [oy*sh - ph, oy*sh - ph + kh).
    const Idx oy0 = ceil_div_nonneg(iy + g.pad_h - g.kh + 1, g.stride_h);
    const Idx oy1 = min_of((iy + g.pad_h) / g.stride_h, g.h_out - 1);
    const Idx ox0 = ceil_div_nonneg(ix + g.pad_w - g.kw + 1, g.stride_w);
    const Idx ox1 = min_of((ix + g.pad_w) / g.stride_w, g.w_out - 1);
    const T* gp = gy + plane * out_plane;
    T acc = 0;
    for (Idx oy = oy0; oy <= oy1; ++oy)
      for (Idx ox = ox0; ox <= ox1; ++ox) {
        // (iy, ix) lies inside this window's clipped part, so it is not empty.
        const int64_t divisor = avg_window(g, oy, ox).divisor;
        acc += gp[oy * g.w_out + ox] / static_cast<T>(divisor);
      }
    gx[e] = acc;
  }
}

// Runs f.operator()<T, Idx>() for the dtype and the index width the shape needs.
template <class F>
void dispatch_pool(DType dt, const Pool2dShape& s, const char* op, F&& f) {
  const bool narrow = fits_int32(s);
  if (dt == DType::Float32)
    return narrow ? f.template operator()<float, int32_t>() : f.template operator()<float, int64_t>();
  if (dt == DType::Float64)
    return narrow ? f.template operator()<double, int32_t>()
                  : f.template operator()<double, int64_t>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cuda and dtype " +
                            dtype_name(dt));
}

int64_t out_elements(const Pool2dShape& s) {
  return s.n * s.c * std::max<int64_t>(s.h_out, 0) * std::max<int64_t>(s.w_out, 0);
}

}  // namespace

void max_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        int64_t* indices, cudaStream_t stream) {
  dispatch_pool(dt, s, "max_pool2d_forward", [&]<class T, class Idx>() {
    launch_1d(out_elements(s), stream, max_forward_kernel<T, Idx>, geometry<Idx>(s),
              static_cast<const T*>(x), static_cast<T*>(y), indices);
  });
}

void max_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x, cudaStream_t stream) {
  dispatch_pool(dt, s, "max_pool2d_backward", [&]<class T, class Idx>() {
    const int64_t in = s.n * s.c * s.h * s.w;
    if (in <= 0) return;
    const T* gy = static_cast<const T*>(grad_y);
    T* gx = static_cast<T*>(grad_x);
    if (s.kh >= 1 && s.kw >= 1) {
      launch_1d(in, stream, max_backward_gather_kernel<T, Idx>, geometry<Idx>(s), gy, indices, gx);
      return;
    }
    EMBER_CUDA_CHECK(cudaMemsetAsync(gx, 0, size_t(in) * sizeof(T), stream));  // +0.0
    launch_1d(out_elements(s), stream, max_backward_scatter_kernel<T, Idx>, geometry<Idx>(s), gy,
              indices, gx);
  });
}

void avg_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        cudaStream_t stream) {
  dispatch_pool(dt, s, "avg_pool2d_forward", [&]<class T, class Idx>() {
    launch_1d(out_elements(s), stream, avg_forward_kernel<T, Idx>, geometry<Idx>(s),
              static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void avg_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y, void* grad_x,
                         cudaStream_t stream) {
  dispatch_pool(dt, s, "avg_pool2d_backward", [&]<class T, class Idx>() {
    launch_1d(s.n * s.c * s.h * s.w, stream, avg_backward_kernel<T, Idx>, geometry<Idx>(s),
              static_cast<const T*>(grad_y), static_cast<T*>(grad_x));
  });
}

}  // namespace ember::cuda
