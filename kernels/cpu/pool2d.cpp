// Pooling by direct loops over each output's window, one input plane (n, c) at a
// time; planes are independent, so threads split them and the backward scatters of
// one plane never touch another's. The window of output (oy, ox) starts at
// (oy*stride - pad) and is clipped to the input (max, and avg's summation) or to
// the padded input (avg's count_include_pad divisor). Non-overlapping 2x2 windows
// with stride 2 and no padding (the FashionMNIST net's pooling) have their own
// loops: four loads and three selects per output, no clipping.
#include "kernels/cpu/pool2d.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

// x > m in PyTorch's max pooling order: a NaN always replaces the running maximum,
// so the result is NaN if any value is, and otherwise the first largest.
template <class T>
inline bool replaces(T v, T m) {
  return v > m || v != v;
}

// Full 2x2 windows, stride 2: output row oy reads input rows 2oy and 2oy+1.
template <class T>
void max_plane_2x2(const Pool2dShape& s, const T* __restrict x, T* __restrict y,
                   int64_t* __restrict ind) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    const T* r0 = x + 2 * oy * s.w;
    const T* r1 = r0 + s.w;
    T* yr = y + oy * s.w_out;
    if (ind) {
      int64_t* ir = ind + oy * s.w_out;
      const int64_t base = 2 * oy * s.w;
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        T m = r0[2 * ox];
        int64_t k = 0;
        if (replaces(r0[2 * ox + 1], m)) m = r0[2 * ox + 1], k = 1;
        if (replaces(r1[2 * ox], m)) m = r1[2 * ox], k = s.w;
        if (replaces(r1[2 * ox + 1], m)) m = r1[2 * ox + 1], k = s.w + 1;
        yr[ox] = m;
        ir[ox] = base + 2 * ox + k;
      }
    } else {
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        T m = r0[2 * ox];
        m = replaces(r0[2 * ox + 1], m) ? r0[2 * ox + 1] : m;
        m = replaces(r1[2 * ox], m) ? r1[2 * ox] : m;
        m = replaces(r1[2 * ox + 1], m) ? r1[2 * ox + 1] : m;
        yr[ox] = m;
      }
    }
  }
}

template <class T>
void max_plane(const Pool2dShape& s, const T* __restrict x, T* __restrict y,
               int64_t* __restrict ind) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    int64_t y0 = oy * s.stride_h - s.pad_h;
    const int64_t y1 = std::min(y0 + (s.kh - 1) * s.dil_h + 1, s.h);
    while (y0 < 0) y0 += s.dil_h;
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      int64_t x0 = ox * s.stride_w - s.pad_w;
      const int64_t x1 = std::min(x0 + (s.kw - 1) * s.dil_w + 1, s.w);
      while (x0 < 0) x0 += s.dil_w;
      // PyTorch starts from -inf at the window's first in-bounds element, so a
      // window of -inf (or an empty one) reports that element.
      T m = -std::numeric_limits<T>::infinity();
      int64_t k = y0 * s.w + x0;
      for (int64_t iy = y0; iy < y1; iy += s.dil_h)
        for (int64_t ix = x0; ix < x1; ix += s.dil_w) {
          const T v = x[iy * s.w + ix];
          if (replaces(v, m)) m = v, k = iy * s.w + ix;
        }
      y[oy * s.w_out + ox] = m;
      if (ind) ind[oy * s.w_out + ox] = k;
    }
  }
}

// Whether every window is a whole, non-overlapping 2x2 block of the input.
bool is_2x2(const Pool2dShape& s) {
  return s.kh == 2 && s.kw == 2 && s.stride_h == 2 && s.stride_w == 2 && s.pad_h == 0 &&
         s.pad_w == 0 && s.dil_h == 1 && s.dil_w == 1 && 2 * s.h_out <= s.h &&
         2 * s.w_out <= s.w;
}

// One window of average pooling: its clipped bounds and divisor.
struct AvgWindow {
  int64_t y0, y1, x0, x1, divisor;
  bool empty() const { return y0 >= y1 || x0 >= x1; }
};

AvgWindow avg_window(const Pool2dShape& s, int64_t oy, int64_t ox) {
  AvgWindow a;
  a.y0 = oy * s.stride_h - s.pad_h;
  a.x0 = ox * s.stride_w - s.pad_w;
  a.y1 = std::min(a.y0 + s.kh, s.h + s.pad_h);
  a.x1 = std::min(a.x0 + s.kw, s.w + s.pad_w);
  const int64_t padded = (a.y1 - a.y0) * (a.x1 - a.x0);
  a.y0 = std::max<int64_t>(a.y0, 0);
  a.x0 = std::max<int64_t>(a.x0, 0);
  a.y1 = std::min(a.y1, s.h);
  a.x1 = std::min(a.x1, s.w);
  a.divisor = s.divisor_override != 0 ? s.divisor_override
              : s.count_include_pad   ? padded
                                      : (a.y1 - a.y0) * (a.x1 - a.x0);
  return a;
}

template <class T>
void avg_plane(const Pool2dShape& s, const T* __restrict x, T* __restrict y) {
  if (is_2x2(s) && s.divisor_override == 0) {
    for (int64_t oy = 0; oy < s.h_out; ++oy) {
      const T* r0 = x + 2 * oy * s.w;
      const T* r1 = r0 + s.w;
      for (int64_t ox = 0; ox < s.w_out; ++ox)
        y[oy * s.w_out + ox] = (r0[2 * ox] + r0[2 * ox + 1] + r1[2 * ox] + r1[2 * ox + 1]) * T(0.25);
    }
    return;
  }
  for (int64_t oy = 0; oy < s.h_out; ++oy)
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      const AvgWindow a = avg_window(s, oy, ox);
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
      const AvgWindow a = avg_window(s, oy, ox);
      if (a.empty()) continue;
      const T g = gy[oy * s.w_out + ox] / T(a.divisor);
      for (int64_t iy = a.y0; iy < a.y1; ++iy)
        for (int64_t ix = a.x0; ix < a.x1; ++ix) gx[iy * s.w + ix] += g;
    }
}

// Runs f(plane) for every (n, c) plane, on the team when there is enough data.
template <class F>
void for_each_plane(const Pool2dShape& s, F&& f) {
  const int64_t planes = s.n * s.c;
  if (planes <= 0) return;
  const int64_t work = planes * std::max<int64_t>(s.h * s.w, s.h_out * s.w_out);
#pragma omp parallel for schedule(static) if (work >= kParallelGrain && planes > 1)
  for (int64_t p = 0; p < planes; ++p) f(p);
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
    const bool fast = is_2x2(s);
    for_each_plane(s, [&](int64_t p) {
      const T* xp = static_cast<const T*>(x) + p * in_plane;
      T* yp = static_cast<T*>(y) + p * out_plane;
      int64_t* ip = indices ? indices + p * out_plane : nullptr;
      if (fast) max_plane_2x2(s, xp, yp, ip);
      else max_plane(s, xp, yp, ip);
    });
  });
}

void max_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x) {
  float_types(dt, "max_pool2d_backward", [&]<class T>() {
    const int64_t in_plane = s.h * s.w;
    const int64_t out_plane = std::max<int64_t>(s.h_out, 0) * std::max<int64_t>(s.w_out, 0);
    for_each_plane(s, [&](int64_t p) {
      const T* gy = static_cast<const T*>(grad_y) + p * out_plane;
      const int64_t* ip = indices + p * out_plane;
      T* gx = static_cast<T*>(grad_x) + p * in_plane;
      std::fill(gx, gx + in_plane, T(0));
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t k = ip[o];
        if (k >= 0 && k < in_plane) gx[k] += gy[o];
      }
    });
  });
}

void avg_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y) {
  float_types(dt, "avg_pool2d_forward", [&]<class T>() {
    if (s.h_out <= 0 || s.w_out <= 0) return;
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
    for_each_plane(s, [&](int64_t p) {
      avg_plane(s, static_cast<const T*>(x) + p * in_plane, static_cast<T*>(y) + p * out_plane);
    });
  });
}

void avg_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y, void* grad_x) {
  float_types(dt, "avg_pool2d_backward", [&]<class T>() {
    const int64_t in_plane = s.h * s.w;
    const int64_t out_plane = std::max<int64_t>(s.h_out, 0) * std::max<int64_t>(s.w_out, 0);
    for_each_plane(s, [&](int64_t p) {
      avg_plane_backward(s, static_cast<const T*>(grad_y) + p * out_plane,
                         static_cast<T*>(grad_x) + p * in_plane);
    });
  });
}

}  // namespace ember::cpu
