// Pooling by direct loops over each output's window, one input plane (n, c) at a
// time; planes are independent, so threads split them and the backward scatters of
// one plane never touch another's. The windows (kernels/base/window.h, shared with
// CUDA) start at (oy*stride - pad) and are clipped to the input (max, and avg's
// summation) or to the padded input (avg's count_include_pad divisor).
// Non-overlapping 2x2 windows with stride 2 and no padding (the FashionMNIST net's
// pooling) take a fast path compiled per instruction set (pool2d_2x2.h).
#include "kernels/cpu/pool2d.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/pool2d_2x2.h"

namespace ember::cpu {
namespace {

using pool2d_detail::replaces;

const pool2d_detail::Pool2x2Kernels& pool2x2() {
  static const PerIsa<pool2d_detail::Pool2x2Kernels> tables(
      pool2d_detail::pool2x2_kernels_generic(), pool2d_detail::pool2x2_kernels_avx2(),
      pool2d_detail::pool2x2_kernels_avx512(), nullptr);
  return tables.pick();
}

template <class T>
void max_2x2(const Pool2dShape& s, const T* x, T* y, int64_t* ind, int64_t p0, int64_t p1) {
  if constexpr (std::is_same_v<T, float>) pool2x2().max_f32(s, x, y, ind, p0, p1);
  else pool2x2().max_f64(s, x, y, ind, p0, p1);
}

template <class T>
void avg_2x2(const Pool2dShape& s, const T* x, T* y, int64_t p0, int64_t p1) {
  if constexpr (std::is_same_v<T, float>) pool2x2().avg_f32(s, x, y, p0, p1);
  else pool2x2().avg_f64(s, x, y, p0, p1);
}

template <class T>
void max_plane(const Pool2dShape& s, const T* __restrict x, T* __restrict y,
               int64_t* __restrict ind) {
  for (int64_t oy = 0; oy < s.h_out; ++oy)
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      const MaxWindow<int64_t> m = max_window(s, oy, ox);
      // PyTorch starts from -inf at the window's first in-bounds element, so a
      // window of -inf (or an empty one) reports that element.
      T best = -std::numeric_limits<T>::infinity();
      int64_t k = m.y0 * s.w + m.x0;
      for (int64_t iy = m.y0; iy < m.y1; iy += s.dil_h)
        for (int64_t ix = m.x0; ix < m.x1; ix += s.dil_w) {
          const T v = x[iy * s.w + ix];
          if (replaces(v, best)) best = v, k = iy * s.w + ix;
        }
      y[oy * s.w_out + ox] = best;
      if (ind) ind[oy * s.w_out + ox] = k;
    }
}

// Whether every window is a whole, non-overlapping 2x2 block of the input.
bool is_2x2(const Pool2dShape& s) {
  return s.kh == 2 && s.kw == 2 && s.stride_h == 2 && s.stride_w == 2 && s.pad_h == 0 &&
         s.pad_w == 0 && s.dil_h == 1 && s.dil_w == 1 && 2 * s.h_out <= s.h &&
         2 * s.w_out <= s.w;
}

template <class T>
void avg_plane(const Pool2dShape& s, const T* __restrict x, T* __restrict y) {
  for (int64_t oy = 0; oy < s.h_out; ++oy)
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      const AvgWindow<int64_t> a = avg_window(s, oy, ox);
      T sum = 0;
      if (!a.empty())
        for (int64_t iy = a.y0; iy < a.y1; ++iy)
          for (int64_t ix = a.x0; ix < a.x1; ++ix) sum += x[iy * s.w + ix];
      y[oy * s.w_out + ox] = a.empty() ? T(0) : sum / T(a.divisor);
    }
}

template <class T>
void avg_plane_backward(const Pool2dShape& s, const T* __restrict gy, T* __restrict gx) {
  std::fill(gx, gx + s.h * s.w, T(0));
  for (int64_t oy = 0; oy < s.h_out; ++oy)
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      const AvgWindow<int64_t> a = avg_window(s, oy, ox);
      if (a.empty()) continue;
      const T g = gy[oy * s.w_out + ox] / T(a.divisor);
      for (int64_t iy = a.y0; iy < a.y1; ++iy)
        for (int64_t ix = a.x0; ix < a.x1; ++ix) gx[iy * s.w + ix] += g;
    }
}

// Runs f(p0, p1) over ranges of the n*c planes, split among the team when there is
// enough data to be worth waking it.
template <class F>
void for_plane_ranges(const Pool2dShape& s, F&& f) {
  const int64_t planes = s.n * s.c;
  if (planes <= 0) return;
  const int64_t work = planes * std::max<int64_t>(s.h * s.w, s.h_out * s.w_out);
  // Below the grain, no OpenMP region at all: one with a false if clause still
  // costs about 1.6 us in libgomp, as much as a small pool.
  if (work < kParallelGrain || planes == 1 || omp_in_parallel()) return f(int64_t(0), planes);
#pragma omp parallel num_threads(get_num_threads())
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    f(planes * t / nt, planes * (t + 1) / nt);
  }
}

template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " +
                            dtype_name(dt));
}

}  // namespace

void max_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        int64_t* indices) {
  float_types(dt, "max_pool2d_forward", [&]<class T>() {
    if (s.h_out <= 0 || s.w_out <= 0) return;
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    const bool fast = is_2x2(s);
    for_plane_ranges(s, [&](int64_t p0, int64_t p1) {
      if (fast) return max_2x2(s, xt, yt, indices, p0, p1);
      for (int64_t p = p0; p < p1; ++p)
        max_plane(s, xt + p * in_plane, yt + p * out_plane,
                  indices ? indices + p * out_plane : nullptr);
    });
  });
}

void max_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x) {
  float_types(dt, "max_pool2d_backward", [&]<class T>() {
    const int64_t in_plane = s.h * s.w;
    const int64_t out_plane = std::max<int64_t>(s.h_out, 0) * std::max<int64_t>(s.w_out, 0);
    for_plane_ranges(s, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* gy = static_cast<const T*>(grad_y) + p * out_plane;
        const int64_t* ip = indices + p * out_plane;
        T* gx = static_cast<T*>(grad_x) + p * in_plane;
        std::fill(gx, gx + in_plane, T(0));
        for (int64_t o = 0; o < out_plane; ++o) {
          const int64_t k = ip[o];
          if (k >= 0 && k < in_plane) gx[k] += gy[o];
        }
      }
    });
  });
}

void avg_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y) {
  float_types(dt, "avg_pool2d_forward", [&]<class T>() {
    if (s.h_out <= 0 || s.w_out <= 0) return;
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    const bool fast = is_2x2(s) && s.divisor_override == 0;
    for_plane_ranges(s, [&](int64_t p0, int64_t p1) {
      if (fast) return avg_2x2(s, xt, yt, p0, p1);
      for (int64_t p = p0; p < p1; ++p) avg_plane(s, xt + p * in_plane, yt + p * out_plane);
    });
  });
}

void avg_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y, void* grad_x) {
  float_types(dt, "avg_pool2d_backward", [&]<class T>() {
    const int64_t in_plane = s.h * s.w;
    const int64_t out_plane = std::max<int64_t>(s.h_out, 0) * std::max<int64_t>(s.w_out, 0);
    for_plane_ranges(s, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        avg_plane_backward(s, static_cast<const T*>(grad_y) + p * out_plane,
                           static_cast<T*>(grad_x) + p * in_plane);
    });
  });
}

}  // namespace ember::cpu
