// Pooling by direct loops over each output's window, one input plane (n, c) at a
// time; planes are independent, so threads split them and the backward scatters of
// one plane never touch another's. The window of output (oy, ox) starts at
// (oy*stride - pad) and is clipped to the input (max, and avg's summation) or to
// the padded input (avg's count_include_pad divisor). Non-overlapping 2x2 windows
// with stride 2 and no padding (the FashionMNIST net's pooling) have their own
// loops, four loads and three selects per output with no clipping, compiled for
// AVX-512, AVX2 and the baseline, and for float32 max pooling a hand-written AVX-512
// version.
#include "kernels/cpu/pool2d.h"

#include <omp.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

// v replaces the running maximum m in PyTorch's max pooling order: a NaN always
// does, so the result is NaN if any value is (the last NaN), and otherwise the first
// largest value.
template <class T>
inline bool replaces(T v, T m) {
  return v > m || v != v;
}

// Full 2x2 windows with stride 2 on one plane: output row oy reads input rows 2oy
// and 2oy+1. Written as selects, not branches, so that the loop vectorizes; the
// clones below compile it for AVX-512, AVX2 and the baseline.
template <class T>
[[gnu::always_inline]] inline void max_plane_2x2(const Pool2dShape& s, const T* __restrict x,
                                                 T* __restrict y, int64_t* __restrict ind) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    const T* r0 = x + 2 * oy * s.w;
    const T* r1 = r0 + s.w;
    T* yr = y + oy * s.w_out;
    if (ind) {
      int64_t* ir = ind + oy * s.w_out;
      const int64_t base = 2 * oy * s.w, w = s.w;
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        T m = r0[2 * ox];
        int64_t k = base + 2 * ox;
        T v = r0[2 * ox + 1];
        bool c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + 2 * ox + 1 : k;
        v = r1[2 * ox];
        c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + w + 2 * ox : k;
        v = r1[2 * ox + 1];
        c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + w + 2 * ox + 1 : k;
        yr[ox] = m;
        ir[ox] = k;
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
[[gnu::always_inline]] inline void avg_plane_2x2(const Pool2dShape& s, const T* __restrict x,
                                                 T* __restrict y) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    const T* r0 = x + 2 * oy * s.w;
    const T* r1 = r0 + s.w;
    T* yr = y + oy * s.w_out;
    for (int64_t ox = 0; ox < s.w_out; ++ox)
      yr[ox] = ((r0[2 * ox] + r0[2 * ox + 1]) + (r1[2 * ox] + r1[2 * ox + 1])) * T(0.25);
  }
}

// Planes [p0, p1) of the 2x2 fast paths, one clone per instruction set.
#define EMBER_POOL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define EMBER_POOL_2X2(T, name)                                                              \
  EMBER_POOL_CLONES void max_2x2_##name(const Pool2dShape& s, const T* x, T* y, int64_t* ind, \
                                        int64_t p0, int64_t p1) {                           \
    const int64_t in = s.h * s.w, out = s.h_out * s.w_out;                                 \
    for (int64_t p = p0; p < p1; ++p)                                                        \
      max_plane_2x2(s, x + p * in, y + p * out, ind ? ind + p * out : nullptr);              \
  }                                                                                          \
  EMBER_POOL_CLONES void avg_2x2_##name(const Pool2dShape& s, const T* x, T* y, int64_t p0,   \
                                        int64_t p1) {                                        \
    const int64_t in = s.h * s.w, out = s.h_out * s.w_out;                                 \
    for (int64_t p = p0; p < p1; ++p) avg_plane_2x2(s, x + p * in, y + p * out);             \
  }
EMBER_POOL_2X2(float, f32)
EMBER_POOL_2X2(double, f64)
#undef EMBER_POOL_2X2
#undef EMBER_POOL_CLONES

#if defined(__x86_64__)
// The same for float32 with AVX-512, 16 outputs of a row at a time; the compiler's
// vectorization of the loop above leaves a row of 12 (the net's first pooling) half
// scalar. Each input row's 32 floats are loaded under a mask (nothing past the row is
// touched) and split into even and odd columns, the four candidates run the select
// chain of max_plane_2x2 as mask blends, and the chosen offsets (0, 1, w, w+1) ride
// along in 32-bit lanes.
#pragma GCC diagnostic push
// max_step passes vectors by value; it is only ever inlined into AVX-512 code.
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's AVX-512 conversion intrinsics seed their result with a self-initialized
// "undefined" vector, which -Wmaybe-uninitialized reports (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define EMBER_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))

// One candidate v of every lane's window: where it replaces the running maximum m,
// take it and its offset.
EMBER_AVX512 [[gnu::always_inline]] inline void max_step(__m512& m, __m512i& k, __m512 v,
                                                          __m512i off) {
  const __mmask16 c =
      _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  m = _mm512_mask_blend_ps(c, m, v);
  k = _mm512_mask_blend_epi32(c, k, off);
}

EMBER_AVX512 void max_2x2_avx512(
    const Pool2dShape& s, const float* x, float* y, int64_t* ind, int64_t p0, int64_t p1) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i two_lane = even;  // 2 * lane
  const int64_t in = s.h * s.w, out = s.h_out * s.w_out;
  const __m512i off_r = _mm512_set1_epi32(1), off_b = _mm512_set1_epi32(int32_t(s.w)),
                off_br = _mm512_set1_epi32(int32_t(s.w + 1));
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t oy = 0; oy < s.h_out; ++oy) {
      const float* r0 = x + p * in + 2 * oy * s.w;
      const float* r1 = r0 + s.w;
      float* yr = y + p * out + oy * s.w_out;
      for (int64_t ox = 0; ox < s.w_out; ox += 16) {
        const int n = int(std::min<int64_t>(16, s.w_out - ox));
        const uint32_t in_mask = n == 16 ? 0xFFFFFFFFu : (1u << (2 * n)) - 1;
        const __mmask16 lo = __mmask16(in_mask), hi = __mmask16(in_mask >> 16);
        const __mmask16 keep = __mmask16(n == 16 ? 0xFFFFu : (1u << n) - 1);
        const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ox);
        const __m512 a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ox + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ox);
        const __m512 b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ox + 16);
        __m512 m = _mm512_permutex2var_ps(a0, even, a1);
        __m512i k = _mm512_setzero_si512();
        max_step(m, k, _mm512_permutex2var_ps(a0, odd, a1), off_r);
        max_step(m, k, _mm512_permutex2var_ps(b0, even, b1), off_b);
        max_step(m, k, _mm512_permutex2var_ps(b0, odd, b1), off_br);
        _mm512_mask_storeu_ps(yr + ox, keep, m);
        if (ind) {
          // Index within the plane: 2*oy*w + 2*(ox + lane) + chosen offset.
          const __m512i i32 = _mm512_add_epi32(
              _mm512_add_epi32(k, two_lane), _mm512_set1_epi32(int32_t(2 * oy * s.w + 2 * ox)));
          int64_t* ir = ind + p * out + oy * s.w_out + ox;
          _mm512_mask_storeu_epi64(ir, __mmask8(keep),
                                   _mm512_cvtepi32_epi64(_mm512_castsi512_si256(i32)));
          _mm512_mask_storeu_epi64(ir + 8, __mmask8(keep >> 8),
                                   _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(i32, 1)));
        }
      }
    }
}

#undef EMBER_AVX512
#pragma GCC diagnostic pop

bool has_avx512() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  }();
  return yes;
}
#endif

template <class T>
void max_2x2(const Pool2dShape& s, const T* x, T* y, int64_t* ind, int64_t p0, int64_t p1) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__x86_64__)
    // 32-bit lane indices: planes up to 2^31 elements.
    if (has_avx512() && s.h * s.w < (int64_t(1) << 31)) return max_2x2_avx512(s, x, y, ind, p0, p1);
#endif
    max_2x2_f32(s, x, y, ind, p0, p1);
  } else {
    max_2x2_f64(s, x, y, ind, p0, p1);
  }
}

template <class T>
void avg_2x2(const Pool2dShape& s, const T* x, T* y, int64_t p0, int64_t p1) {
  if constexpr (std::is_same_v<T, float>) avg_2x2_f32(s, x, y, p0, p1);
  else avg_2x2_f64(s, x, y, p0, p1);
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

// Runs f(p0, p1) over ranges of the n*c planes, split among the team when there is
// enough data to be worth waking it.
template <class F>
void for_plane_ranges(const Pool2dShape& s, F&& f) {
  const int64_t planes = s.n * s.c;
  if (planes <= 0) return;
  const int64_t work = planes * std::max<int64_t>(s.h * s.w, s.h_out * s.w_out);
  const bool team = work >= kParallelGrain && planes > 1 && !omp_in_parallel();
#pragma omp parallel if (team)
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
