// Layer norm on the CPU (contract in layer_norm.h). Forward: one pass over each row
// accumulates sum(x - s) and sum((x - s)^2) around a shift s = the row's first
// element, in 8 independent lanes (the compiler vectorizes them; 8 partial sums also
// shorten each sum's error chain); mean = s + S1/n, var = S2/n - (S1/n)^2. The shift
// keeps the subtraction from cancelling when the mean is large against the spread.
// The accumulators have the dtype's precision: float for float32 (and, through the
// front-end, for float16/bfloat16), double for float64. A second pass writes y. Rows run
// in parallel. Backward: a row pass for grad_x (two row sums, then the formula), and
// a column pass for grad_weight and grad_bias in which each thread owns a block of
// columns and walks the rows in order, so the sums do not depend on the thread count.
#include "kernels/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

constexpr int kLanes = 8;

template <class T>
void forward_rows(int64_t rows, int64_t n, const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd) {
  parallel_rows(rows, rows * n >= kParallelGrain, [&](int64_t r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    if (n == 0) {
      mean[r] = 0;
      rstd[r] = T(1) / std::sqrt(eps);
      return;
    }
    const T s = xr[0];
    T s1[kLanes] = {}, s2[kLanes] = {};
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const T d = xr[j + l] - s;
        s1[l] += d;
        s2[l] += d * d;
      }
    for (int l = 0; j < n; ++j, ++l) {
      const T d = xr[j] - s;
      s1[l] += d;
      s2[l] += d * d;
    }
    T t1 = 0, t2 = 0;
    for (int l = 0; l < kLanes; ++l) t1 += s1[l], t2 += s2[l];
    const T m1 = t1 / static_cast<T>(n);
    const T var = std::max(T(0), t2 / static_cast<T>(n) - m1 * m1);
    const T mu = s + m1, rs = T(1) / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (int64_t k = 0; k < n; ++k) {
      const T v = (xr[k] - mu) * rs;
      yr[k] = (w ? v * w[k] : v) + (b ? b[k] : T(0));
    }
  });
}

template <class T>
void backward_rows(int64_t rows, int64_t n, const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* gx) {
  parallel_rows(rows, rows * n >= kParallelGrain, [&](int64_t r) {
    const T* gr = g + r * n;
    const T* xr = x + r * n;
    const T mu = mean[r], rs = rstd[r];
    T a = 0, c = 0;  // sum(gxhat), sum(gxhat * xhat)
    for (int64_t j = 0; j < n; ++j) {
      const T gh = w ? gr[j] * w[j] : gr[j];
      a += gh;
      c += gh * (xr[j] - mu) * rs;
    }
    a /= static_cast<T>(n);
    c /= static_cast<T>(n);
    T* out = gx + r * n;
    for (int64_t j = 0; j < n; ++j) {
      const T gh = w ? gr[j] * w[j] : gr[j];
      out[j] = rs * (gh - a - (xr[j] - mu) * rs * c);
    }
  });
}

template <class T>
void backward_params(int64_t rows, int64_t n, const T* g, const T* x, const T* mean, const T* rstd, T* gw, T* gb) {
  constexpr int64_t kCols = 64;
  const int64_t blocks = (n + kCols - 1) / kCols;
  parallel_rows(blocks, rows * n >= kParallelGrain, [&](int64_t blk) {
    const int64_t c0 = blk * kCols, c1 = std::min(n, c0 + kCols);
    T sw[kCols] = {}, sb[kCols] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* gr = g + r * n;
      const T* xr = x + r * n;
      const T mu = mean[r], rs = rstd[r];
      for (int64_t j = c0; j < c1; ++j) {
        sw[j - c0] += gr[j] * (xr[j] - mu) * rs;
        sb[j - c0] += gr[j];
      }
    }
    for (int64_t j = c0; j < c1; ++j) {
      if (gw) gw[j] = sw[j - c0];
      if (gb) gb[j] = sb[j - c0];
    }
  });
}

template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " + dtype_name(dt));
}

}  // namespace

void layer_norm_forward(DType dt, int64_t rows, int64_t cols, const void* x, const void* weight, const void* bias,
                        double eps, void* y, void* mean, void* rstd) {
  float_types(dt, "layer_norm", [&]<class T>() {
    forward_rows<T>(rows, cols, static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
                    static_cast<T>(eps), static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd));
  });
}

void layer_norm_backward(DType dt, int64_t rows, int64_t cols, const void* grad_y, const void* x, const void* mean,
                         const void* rstd, const void* weight, void* grad_x, void* grad_weight, void* grad_bias) {
  float_types(dt, "layer_norm_backward", [&]<class T>() {
    const T *g = static_cast<const T*>(grad_y), *xs = static_cast<const T*>(x);
    const T *mu = static_cast<const T*>(mean), *rs = static_cast<const T*>(rstd);
    if (grad_x && cols > 0)
      backward_rows<T>(rows, cols, g, xs, mu, rs, static_cast<const T*>(weight), static_cast<T*>(grad_x));
    if (grad_weight || grad_bias)
      backward_params<T>(rows, cols, g, xs, mu, rs, static_cast<T*>(grad_weight), static_cast<T*>(grad_bias));
  });
}

}  // namespace ember::cpu
