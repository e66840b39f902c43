// 2-D convolution by im2col + GEMM, one image at a time. For image i and group g,
// with K = (c_in/groups)*kh*kw and P = h_out*w_out:
//   forward          y_i[c_out/g, P]  = W_g[c_out/g, K] . col_i[K, P]   (+ bias)
//   input gradient   dcol[K, P]       = W_g^T . gy_i[c_out/g, P], then col2im adds
//                                       each column entry back to the pixel it came from
//   weight gradient  dW_g[c_out/g, K] += gy_i . col_i^T
// col keeps the output pixels along its rows, so the GEMM's long dimension is P
// (576 for the FashionMNIST net's first layer) and y_i is written in NCHW order
// directly, with no transpose. A 1x1 kernel with stride 1 and no padding needs no
// col at all: x_i already is [c_in, P].
//
// The per-image products are small (6 x 576 x 25, 12 x 64 x 150), far below what
// pays for splitting one GEMM across threads, so batches run whole images per
// thread, each calling a single-threaded GEMM (gemm.cpp stays on its thread inside
// a parallel region). The weight gradient is summed in a private buffer per thread
// and the buffers are added at the end; thread 0 accumulates straight into the
// output. Scratch (col buffers, partial sums) is carved for the whole team out of
// one grow-only buffer of the calling thread before the team starts, so steady
// training allocates nothing and nothing inside the parallel region allocates.
#include "kernels/cpu/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cpu/gemm.h"

namespace ember::cpu {
namespace {

// Below this many multiply-adds in the whole call the batch runs on one thread:
// waking the team costs a few microseconds, about one small image's work.
constexpr double kParallelMacs = 200000;

// A 64-byte-aligned buffer that only grows, one per calling thread.
class Scratch {
 public:
  ~Scratch() { std::free(p_); }
  void* get(size_t bytes) {
    if (bytes > bytes_) {
      std::free(p_);
      p_ = nullptr;
      bytes_ = 0;
      const size_t rounded = (bytes + 4095) & ~size_t(4095);
      p_ = std::aligned_alloc(64, rounded);
      if (!p_) throw std::bad_alloc();
      bytes_ = rounded;
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

thread_local Scratch scratch;

// Sizes derived once from the shape.
struct Dims {
  int64_t P, G, cig, cog, K;  // pixels out, groups, channels per group in/out, GEMM depth
  int64_t x_img, y_img;       // elements of one image of x and of y
  bool pointwise;             // 1x1, stride 1, no padding: col_i is x_i itself

  explicit Dims(const Conv2dShape& s)
      : P(s.h_out * s.w_out),
        G(s.groups),
        cig(s.c_in / s.groups),
        cog(s.c_out / s.groups),
        K(s.c_in / s.groups * s.kh * s.kw),
        x_img(s.c_in * s.h * s.w),
        y_img(s.c_out * s.h_out * s.w_out),
        pointwise(s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 &&
                  s.pad_h == 0 && s.pad_w == 0) {}
};

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Output columns [lo, hi) whose input column ox*stride - pad + kx*dil lies inside
// [0, w): the rest read the zero padding.
struct Span {
  int64_t lo, hi;
};
Span valid_columns(const Conv2dShape& s, int64_t kx) {
  const int64_t off = kx * s.dil_w - s.pad_w;  // input column of output column 0
  const int64_t lo = off >= 0 ? 0 : std::min(s.w_out, cdiv(-off, s.stride_w));
  const int64_t end = s.w - off;  // first output column must satisfy ox*stride >= end to leave
  const int64_t hi = end <= 0 ? 0 : std::min(s.w_out, cdiv(end, s.stride_w));
  return {lo, std::max(lo, hi)};
}

// col[(ci*kh + ky)*kw + kx][oy*w_out + ox] = x[ci][oy*sh - ph + ky*dh][ox*sw - pw + kx*dw],
// zero where that falls in the padding.
template <class T>
void im2col(const Conv2dShape& s, const T* __restrict x, T* __restrict col) {
  const int64_t P = s.h_out * s.w_out;
  for (int64_t ci = 0; ci < s.c_in; ++ci)
    for (int64_t ky = 0; ky < s.kh; ++ky)
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        T* row = col + ((ci * s.kh + ky) * s.kw + kx) * P;
        const Span sp = valid_columns(s, kx);
        const int64_t off = kx * s.dil_w - s.pad_w;
        for (int64_t oy = 0; oy < s.h_out; ++oy) {
          T* r = row + oy * s.w_out;
          const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
          if (iy < 0 || iy >= s.h) {
            std::fill(r, r + s.w_out, T(0));
            continue;
          }
          const T* xr = x + (ci * s.h + iy) * s.w + off;
          std::fill(r, r + sp.lo, T(0));
          if (s.stride_w == 1) {
            for (int64_t ox = sp.lo; ox < sp.hi; ++ox) r[ox] = xr[ox];
          } else {
            for (int64_t ox = sp.lo; ox < sp.hi; ++ox) r[ox] = xr[ox * s.stride_w];
          }
          std::fill(r + sp.hi, r + s.w_out, T(0));
        }
      }
}

// The adjoint of im2col: every col entry is added to the input pixel it was copied
// from (padding entries are dropped). gx must be zeroed by the caller.
template <class T>
void col2im(const Conv2dShape& s, const T* __restrict col, T* __restrict gx) {
  const int64_t P = s.h_out * s.w_out;
  for (int64_t ci = 0; ci < s.c_in; ++ci)
    for (int64_t ky = 0; ky < s.kh; ++ky)
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const T* row = col + ((ci * s.kh + ky) * s.kw + kx) * P;
        const Span sp = valid_columns(s, kx);
        const int64_t off = kx * s.dil_w - s.pad_w;
        for (int64_t oy = 0; oy < s.h_out; ++oy) {
          const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
          if (iy < 0 || iy >= s.h) continue;
          const T* r = row + oy * s.w_out;
          T* gr = gx + (ci * s.h + iy) * s.w + off;
          if (s.stride_w == 1) {
            for (int64_t ox = sp.lo; ox < sp.hi; ++ox) gr[ox] += r[ox];
          } else {
            for (int64_t ox = sp.lo; ox < sp.hi; ++ox) gr[ox * s.stride_w] += r[ox];
          }
        }
      }
}

// Sum of a row, in 8 independent lanes so the loop vectorizes without reordering
// anything the compiler must keep in order.
template <class T>
T row_sum(const T* p, int64_t n) {
  T lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += p[i + l];
  T s = 0;
  for (; i < n; ++i) s += p[i];
  for (int l = 0; l < 8; ++l) s += lane[l];
  return s;
}

// How many threads a batch of n images with `macs` multiply-adds each should use.
int team_size(int64_t n, double macs) {
  if (n < 2 || omp_in_parallel()) return 1;
  if (double(n) * macs < kParallelMacs) return 1;
  return int(std::min<int64_t>(n, omp_get_max_threads()));
}

// Runs body(lo, hi, tid, slice) for contiguous image ranges covering [0, n), on up
// to nt threads; slice is that thread's `slice_elems` of scratch (64-byte aligned).
// Returns how many ranges (threads) there were. An exception in any thread (a GEMM
// workspace that cannot grow) is rethrown here after the team has finished.
template <class T, class Body>
int for_image_ranges(int64_t n, int nt, int64_t slice_elems, Body&& body) {
  const int64_t line = 64 / int64_t(sizeof(T));
  const int64_t slice = cdiv(std::max<int64_t>(slice_elems, 1), line) * line;
  T* ws = static_cast<T*>(scratch.get(sizeof(T) * size_t(slice * nt)));
  if (nt <= 1) {
    body(int64_t(0), n, 0, ws);
    return 1;
  }
  std::exception_ptr error;
  int team = 1;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), got = omp_get_num_threads();
    if (tid == 0) team = got;
    try {
      body(n * tid / got, n * (tid + 1) / got, tid, ws + tid * slice);
    } catch (...) {
#pragma omp critical(ember_conv2d_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return team;
}

template <class T>
void forward_impl(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const Dims d(s);
  if (s.n <= 0 || s.c_out <= 0 || d.P <= 0) return;
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  const int64_t col_elems = d.pointwise ? 0 : s.c_in * s.kh * s.kw * d.P;
  for_image_ranges<T>(s.n, nt, col_elems, [&](int64_t lo, int64_t hi, int, T* col) {
    for (int64_t i = lo; i < hi; ++i) {
      const T* xi = x + i * d.x_img;
      T* yi = y + i * d.y_img;
      const T* src = xi;
      if (!d.pointwise) {
        im2col(s, xi, col);
        src = col;
      }
      if (bias)
        for (int64_t co = 0; co < s.c_out; ++co) std::fill(yi + co * d.P, yi + (co + 1) * d.P, bias[co]);
      for (int64_t g = 0; g < d.G; ++g)
        gemm(d.cog, d.P, d.K, T(1), w + g * d.cog * d.K, d.K, 1, src + g * d.K * d.P, d.P, 1,
             bias ? T(1) : T(0), yi + g * d.cog * d.P, d.P, 1);
    }
  });
}

template <class T>
void backward_input_impl(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  const Dims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  if (s.c_out <= 0 || d.P <= 0) {
    std::fill(gx, gx + s.n * d.x_img, T(0));
    return;
  }
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  const int64_t col_elems = d.pointwise ? 0 : s.c_in * s.kh * s.kw * d.P;
  for_image_ranges<T>(s.n, nt, col_elems, [&](int64_t lo, int64_t hi, int, T* col) {
    for (int64_t i = lo; i < hi; ++i) {
      const T* gyi = gy + i * d.y_img;
      T* gxi = gx + i * d.x_img;
      // W_g^T is read through swapped strides: row k of it is column k of W_g.
      T* dst = d.pointwise ? gxi : col;
      for (int64_t g = 0; g < d.G; ++g)
        gemm(d.K, d.P, d.cog, T(1), w + g * d.cog * d.K, 1, d.K, gyi + g * d.cog * d.P, d.P, 1,
             T(0), dst + g * d.K * d.P, d.P, 1);
      if (!d.pointwise) {
        std::fill(gxi, gxi + d.x_img, T(0));
        col2im(s, col, gxi);
      }
    }
  });
}

template <class T>
void backward_weight_impl(const Conv2dShape& s, const T* gy, const T* x, T* gw, T* gb) {
  const Dims d(s);
  const int64_t w_elems = s.c_out * d.K;
  if (s.n <= 0 || d.P <= 0 || s.c_out <= 0) {
    std::fill(gw, gw + std::max<int64_t>(w_elems, 0), T(0));
    if (gb) std::fill(gb, gb + std::max<int64_t>(s.c_out, 0), T(0));
    return;
  }
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  const int64_t col_elems = d.pointwise ? 0 : cdiv(s.c_in * s.kh * s.kw * d.P, 16) * 16;
  const int64_t part_elems = cdiv(w_elems + s.c_out, 16) * 16;
  // Slice layout: [col | partial dW | partial db]. Thread 0 sums into gw and gb.
  const int team = for_image_ranges<T>(
      s.n, nt, col_elems + part_elems, [&](int64_t lo, int64_t hi, int tid, T* slice) {
        T* col = slice;
        T* pw = tid == 0 ? gw : slice + col_elems;
        T* pb = !gb ? nullptr : tid == 0 ? gb : slice + col_elems + w_elems;
        if (hi <= lo) {
          std::fill(pw, pw + w_elems, T(0));
          if (pb) std::fill(pb, pb + s.c_out, T(0));
          return;
        }
        for (int64_t i = lo; i < hi; ++i) {
          const T* xi = x + i * d.x_img;
          const T* gyi = gy + i * d.y_img;
          const T* src = xi;
          if (!d.pointwise) {
            im2col(s, xi, col);
            src = col;
          }
          // col_i^T is read through swapped strides (b_rs = 1, b_cs = P).
          const T beta = i == lo ? T(0) : T(1);
          for (int64_t g = 0; g < d.G; ++g)
            gemm(d.cog, d.K, d.P, T(1), gyi + g * d.cog * d.P, d.P, 1, src + g * d.K * d.P, 1,
                 d.P, beta, pw + g * d.cog * d.K, d.K, 1);
          if (pb)
            for (int64_t co = 0; co < s.c_out; ++co) {
              const T r = row_sum(gyi + co * d.P, d.P);
              pb[co] = i == lo ? r : pb[co] + r;
            }
        }
      });
  // Fold the other threads' partial sums into thread 0's (the outputs). The scratch
  // is still intact: nothing has run on this thread since.
  if (team > 1) {
    const int64_t line = 64 / int64_t(sizeof(T));
    const int64_t slice = cdiv(col_elems + part_elems, line) * line;
    const T* ws = static_cast<const T*>(scratch.get(0));
    for (int t = 1; t < team; ++t) {
      const T* pw = ws + t * slice + col_elems;
      for (int64_t j = 0; j < w_elems; ++j) gw[j] += pw[j];
      if (gb)
        for (int64_t co = 0; co < s.c_out; ++co) gb[co] += pw[w_elems + co];
    }
  }
}

// The two dtypes with kernels; the rest are converted by the caller.
template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " +
                            dtype_name(dt));
}

}  // namespace

void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y) {
  float_types(dt, "conv2d_forward", [&]<class T>() {
    forward_impl<T>(s, static_cast<const T*>(x), static_cast<const T*>(weight),
                    static_cast<const T*>(bias), static_cast<T*>(y));
  });
}

void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x) {
  float_types(dt, "conv2d_backward_input", [&]<class T>() {
    backward_input_impl<T>(s, static_cast<const T*>(grad_y), static_cast<const T*>(weight),
                           static_cast<T*>(grad_x));
  });
}

void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias) {
  float_types(dt, "conv2d_backward_weight", [&]<class T>() {
    backward_weight_impl<T>(s, static_cast<const T*>(grad_y), static_cast<const T*>(x),
                            static_cast<T*>(grad_weight), static_cast<T*>(grad_bias));
  });
}

}  // namespace ember::cpu
