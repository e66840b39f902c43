// 2-D convolution as a GEMM over the im2col matrix. With K = (c_in/groups)*kh*kw,
// P = h_out*w_out and col[K, P] (col[(ci,ky,kx), p] = the input pixel that tap meets
// at output pixel p, zero in the padding), for each image and group:
//   forward          y[c_out, P]   = W[c_out, K] . col   (+ bias)
//   input gradient   dcol[K, P]    = W^T . gy, each entry added back to its pixel
//   weight gradient  dW[c_out, K] += gy . col^T
//
// Stride 1 (the FashionMNIST net, and most 3x3 layers) never builds col. Lay the
// output out on the input's grid: output pixel (oy, ox) sits at virtual position
// p' = oy*Wv + ox of the (zero-padded) input plane of width Wv, so col[k, p'] is the
// input at p' + off[k], off[k] = ci*plane + ky*dil_h*Wv + kx*dil_w, and a run of
// consecutive p' is a run of consecutive input. The register tiles then read the
// input in place: the forward tile keeps up to 12 output channels x 32 pixels (two
// AVX-512 vectors) and walks k, the input-gradient tile keeps taps x pixels and
// walks c_out, the weight-gradient tile is a dot product over pixels (3 channels x 6
// taps). Positions with ox >= w_out are padding columns of that grid: the forward
// pass computes and drops them, the gradients see zeros of gy there (so an Inf or
// NaN in x or the weight, which already makes the gradients non-finite, can reach a
// few more of their entries than a direct sum would). Other strides go through an
// explicit im2col buffer and cpu::gemm.
//
// The net's products are tiny (6 x 576 x 25, 12 x 64 x 150 per image), so threads
// take whole images, each running the single-threaded kernels above (cpu::gemm stays
// on its thread inside a parallel region); the weight gradient is summed per thread
// and the partial sums added at the end.
//
// The stride-1 kernels are written once over GCC vector types, in the second half of
// this file, which includes itself once per instruction set (AVX-512, AVX2+FMA,
// baseline SSE2) under the matching target pragma; the first half picks one at run
// time. A template compiles for the target in force where it is defined, so this is
// how one source yields three instruction sets without a file per set.
#ifndef EMBER_CONV2D_ISA

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/scratch.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cpu/gemm.h"

namespace ember::cpu::conv2d_detail {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

// Sizes derived once from the shape.
struct Dims {
  int64_t P, HW, G, cig, cog, K;
  int64_t x_img, y_img;

  explicit Dims(const Conv2dShape& s)
      : P(s.h_out * s.w_out),
        HW(s.h * s.w),
        G(s.groups),
        cig(s.c_in / s.groups),
        cog(s.c_out / s.groups),
        K(s.c_in / s.groups * s.kh * s.kw),
        x_img(s.c_in * s.h * s.w),
        y_img(s.c_out * s.h_out * s.w_out) {}
};

// The stride-1 geometry: the input plane padded to Hv x Wv (a copy is made only when
// there is padding), the Pv virtual positions that hold outputs, and off[k] for the
// taps of one group. Every position p' < Pv plus any off[k] stays inside the plane,
// because h_out + dil_h*(kh-1) == Hv and likewise for the width.
struct Direct {
  int64_t Hv = 0, Wv = 0, plane = 0, Pv = 0;
  bool padded = false;
  std::vector<int64_t> off;
  // The input gradient adds one row per tap into the plane; taps taken in (kx, ky,
  // ci) order put consecutive rows in different channels, so one row's
  // read-modify-write never waits on the store of the row before it (overlapping
  // unaligned stores and loads defeat store forwarding). order[j] is the j-th tap
  // of that order, scatter_off[j] its offset.
  std::vector<int64_t> order, scatter_off;

  Direct() = default;
  Direct(const Conv2dShape& s, const Dims& d)
      : Hv(s.h + 2 * s.pad_h),
        Wv(s.w + 2 * s.pad_w),
        plane(Hv * Wv),
        Pv((s.h_out - 1) * Wv + s.w_out),
        padded(s.pad_h > 0 || s.pad_w > 0),
        off(size_t(d.K)) {
    for (int64_t ci = 0, k = 0; ci < d.cig; ++ci)
      for (int64_t ky = 0; ky < s.kh; ++ky)
        for (int64_t kx = 0; kx < s.kw; ++kx, ++k)
          off[size_t(k)] = ci * plane + ky * s.dil_h * Wv + kx * s.dil_w;
    order.reserve(size_t(d.K));
    for (int64_t kx = 0; kx < s.kw; ++kx)
      for (int64_t ky = 0; ky < s.kh; ++ky)
        for (int64_t ci = 0; ci < d.cig; ++ci) order.push_back((ci * s.kh + ky) * s.kw + kx);
    for (int64_t k : order) scatter_off.push_back(off[size_t(k)]);
  }
};

// Everything one pass needs, for the kernels of any instruction set.
template <class T>
struct Args {
  const Conv2dShape* s;
  const Dims* d;
  const Direct* v;
  const T* x;     // forward, weight gradient
  const T* w;     // forward, input gradient
  const T* bias;  // forward (nullable)
  const T* gy;    // gradients
  T* out;         // y or grad_x
};

}  // namespace
}  // namespace ember::cpu::conv2d_detail

// The stride-1 kernels, once per instruction set.
#define EMBER_CONV2D_ISA avx512
#define EMBER_CONV2D_BYTES 64
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#include "kernels/cpu/conv2d.cpp"
#pragma GCC pop_options
#undef EMBER_CONV2D_ISA
#undef EMBER_CONV2D_BYTES

#define EMBER_CONV2D_ISA avx2
#define EMBER_CONV2D_BYTES 32
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "kernels/cpu/conv2d.cpp"
#pragma GCC pop_options
#undef EMBER_CONV2D_ISA
#undef EMBER_CONV2D_BYTES

#define EMBER_CONV2D_ISA sse
#define EMBER_CONV2D_BYTES 16
#include "kernels/cpu/conv2d.cpp"
#undef EMBER_CONV2D_ISA
#undef EMBER_CONV2D_BYTES

namespace ember::cpu::conv2d_detail {
namespace {

// Below this many multiply-adds in the whole call the batch runs on one thread:
// waking the team costs a few microseconds, about one small image's work.
constexpr double kParallelMacs = 200000;

// ---------------------------------------------------------------------------------
// The general path (any stride): im2col into a buffer, cpu::gemm, col2im.

// Output columns [lo, hi) of tap column kx whose input column ox*stride - pad +
// kx*dil lies inside [0, w); the others read padding.
struct Span {
  int64_t lo, hi;
};
Span valid_columns(const Conv2dShape& s, int64_t kx) {
  const int64_t off = kx * s.dil_w - s.pad_w;  // input column of output column 0
  const int64_t lo = off >= 0 ? 0 : std::min(s.w_out, cdiv(-off, s.stride_w));
  const int64_t end = s.w - off;
  const int64_t hi = end <= 0 ? 0 : std::min(s.w_out, cdiv(end, s.stride_w));
  return {lo, std::max(lo, hi)};
}

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
          const T* xr = x + (ci * s.h + iy) * s.w;
          std::fill(r, r + sp.lo, T(0));
          for (int64_t ox = sp.lo; ox < sp.hi; ++ox) r[ox] = xr[ox * s.stride_w + off];
          std::fill(r + sp.hi, r + s.w_out, T(0));
        }
      }
}

// The adjoint of im2col: every col entry is added to the input pixel it was copied
// from; padding entries are dropped. gx must be zeroed by the caller.
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
          T* gr = gx + (ci * s.h + iy) * s.w;
          for (int64_t ox = sp.lo; ox < sp.hi; ++ox) gr[ox * s.stride_w + off] += r[ox];
        }
      }
}

template <class T>
void gemm_forward(const Args<T>& a, int64_t lo, int64_t hi, T* col) {
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  for (int64_t i = lo; i < hi; ++i) {
    T* yi = a.out + i * d.y_img;
    im2col(s, a.x + i * d.x_img, col);
    if (a.bias)
      for (int64_t co = 0; co < s.c_out; ++co)
        std::fill(yi + co * d.P, yi + (co + 1) * d.P, a.bias[co]);
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.cog, d.P, d.K, T(1), a.w + g * d.cog * d.K, d.K, 1, col + g * d.K * d.P, d.P, 1,
           a.bias ? T(1) : T(0), yi + g * d.cog * d.P, d.P, 1);
  }
}

template <class T>
void gemm_backward_input(const Args<T>& a, int64_t lo, int64_t hi, T* col) {
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  for (int64_t i = lo; i < hi; ++i) {
    // W_g^T is read through swapped strides: row k of it is column k of W_g.
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.K, d.P, d.cog, T(1), a.w + g * d.cog * d.K, 1, d.K,
           a.gy + i * d.y_img + g * d.cog * d.P, d.P, 1, T(0), col + g * d.K * d.P, d.P, 1);
    T* gxi = a.out + i * d.x_img;
    std::fill(gxi, gxi + d.x_img, T(0));
    col2im(s, col, gxi);
  }
}

template <class T>
void gemm_backward_weight(const Args<T>& a, int64_t lo, int64_t hi, T* col, T* pw, T* pb, int64_t, int64_t) {
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  std::fill(pw, pw + s.c_out * d.K, T(0));
  if (pb) std::fill(pb, pb + s.c_out, T(0));
  for (int64_t i = lo; i < hi; ++i) {
    const T* gyi = a.gy + i * d.y_img;
    im2col(s, a.x + i * d.x_img, col);
    // col^T is read through swapped strides (b_rs = 1, b_cs = P).
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.cog, d.K, d.P, T(1), gyi + g * d.cog * d.P, d.P, 1, col + g * d.K * d.P, 1, d.P,
           T(1), pw + g * d.cog * d.K, d.K, 1);
    if (pb)
      for (int64_t co = 0; co < s.c_out; ++co)
        for (int64_t p = 0; p < d.P; ++p) pb[co] += gyi[co * d.P + p];
  }
}

// ---------------------------------------------------------------------------------
// Choosing kernels.

// One pass's kernel and its scratch need (elements per thread).
template <class T>
struct Kernels {
  void (*forward)(const Args<T>&, int64_t, int64_t, T*);
  void (*backward_input)(const Args<T>&, int64_t, int64_t, T*);
  // Images [lo, hi), weight units [u0, u1) (see backward_weight_units).
  void (*backward_weight)(const Args<T>&, int64_t lo, int64_t hi, T*, T*, T*, int64_t u0, int64_t u1);
  int64_t (*forward_scratch)(const Args<T>&);
  int64_t (*backward_input_scratch)(const Args<T>&);
  int64_t (*backward_weight_scratch)(const Args<T>&);
  // How many independent parts the weight gradient of one image range can be split
  // into (each dW element belongs to one part and is summed the same way whatever
  // the split): the stride-1 kernels' channel tiles; 1 for the im2col path, whose
  // im2col every part would have to repeat.
  int64_t (*backward_weight_units)(const Args<T>&);
};

template <class T>
int64_t gemm_scratch(const Args<T>& a) {
  return a.s->c_in * a.s->kh * a.s->kw * a.d->P;
}

template <class T>
int64_t one_unit(const Args<T>&) {
  return 1;
}

template <class T>
const Kernels<T>& general_kernels() {
  static const Kernels<T> k{gemm_forward<T>, gemm_backward_input<T>, gemm_backward_weight<T>,
                            gemm_scratch<T>, gemm_scratch<T>, gemm_scratch<T>, one_unit<T>};
  return k;
}

#define EMBER_CONV2D_KERNELS(isa)                                                        \
  Kernels<T> {                                                                           \
    isa::forward<T>, isa::backward_input<T>, isa::backward_weight<T>,                    \
        isa::forward_scratch<T>, isa::backward_input_scratch<T>,                         \
        isa::backward_weight_scratch<T>, isa::backward_weight_units<T>                   \
  }

template <class T>
const Kernels<T>* direct_kernels_for(std::string_view isa) {
  static const Kernels<T> avx512_k = EMBER_CONV2D_KERNELS(avx512);
  static const Kernels<T> avx2_k = EMBER_CONV2D_KERNELS(avx2);
  static const Kernels<T> sse_k = EMBER_CONV2D_KERNELS(sse);
  __builtin_cpu_init();
  const bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == "auto") isa = has_avx512 ? "avx512" : has_avx2 ? "avx2" : "sse";
  if (isa == "avx512" && has_avx512) return &avx512_k;
  if (isa == "avx2" && has_avx2) return &avx2_k;
  if (isa == "sse") return &sse_k;
  return nullptr;
}
#undef EMBER_CONV2D_KERNELS

template <class T>
const Kernels<T>*& active_direct_kernels() {
  static const Kernels<T>* k = direct_kernels_for<T>("auto");
  return k;
}

template <class T>
const Kernels<T>& direct_kernels() {
  return *active_direct_kernels<T>();
}

bool is_direct(const Conv2dShape& s) { return s.stride_h == 1 && s.stride_w == 1; }

// ---------------------------------------------------------------------------------
// Threads and scratch.


thread_local Scratch scratch;

// How many threads a batch of n images with `macs` multiply-adds each should use.
int team_size(int64_t n, double macs) {
  if (n < 2 || omp_in_parallel()) return 1;
  if (double(n) * macs < kParallelMacs) return 1;
  return int(std::min<int64_t>(n, omp_get_max_threads()));
}

// How many fixed image ranges the weight gradient of a batch of n is cut into: up
// to kWeightRanges, with at least kRangeImages images each (every range pays for
// zeroing and summing its accumulators: at 6 images a range the seed net's conv2
// ran 25% slower on 2 threads), and fewer when the partials would take more than
// kWeightPartialBytes in all. Small batches still use every thread: each range
// is also split by output channels (backward_weight_impl).
constexpr int64_t kWeightRanges = 16;
constexpr int64_t kRangeImages = 16;
constexpr int64_t kWeightPartialBytes = 64 << 20;
int64_t weight_ranges(int64_t n, int64_t part_bytes) {
  const int64_t by_memory = 1 + kWeightPartialBytes / std::max<int64_t>(part_bytes, 1);
  return std::clamp<int64_t>(std::min({kWeightRanges, by_memory, n / kRangeImages}), 1, std::max<int64_t>(n, 1));
}

// Runs body(lo, hi, slice) over contiguous image ranges covering [0, n) on up to
// nt threads, each with its own `slice` elements of scratch. A cpu::gemm workspace
// that cannot grow throws inside the team: the first exception is rethrown here.
template <class T, class Body>
void for_ranges(int64_t n, int nt, int64_t slice_elems, Body&& body) {
  const int64_t slice = round_up(std::max<int64_t>(slice_elems, 1), 64 / int64_t(sizeof(T)));
  T* ws = static_cast<T*>(scratch.get(sizeof(T) * size_t(slice * nt)));
  if (nt <= 1) return body(int64_t(0), n, ws);
  std::exception_ptr error;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), got = omp_get_num_threads();
    try {
      body(n * tid / got, n * (tid + 1) / got, ws + tid * slice);
    } catch (...) {
#pragma omp critical(ember_conv2d_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template <class T>
void forward_impl(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const Dims d(s);
  if (s.n <= 0 || s.c_out <= 0 || d.P <= 0) return;
  const bool direct = is_direct(s);
  const Direct v = direct ? Direct(s, d) : Direct();
  const Kernels<T>& k = direct ? direct_kernels<T>() : general_kernels<T>();
  const Args<T> a{&s, &d, &v, x, w, bias, nullptr, y};
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<T>(s.n, nt, k.forward_scratch(a), [&](int64_t lo, int64_t hi, T* ws) { k.forward(a, lo, hi, ws); });
}

template <class T>
void backward_input_impl(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  const Dims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  if (s.c_out <= 0 || d.P <= 0) {
    std::fill(gx, gx + s.n * d.x_img, T(0));
    return;
  }
  const bool direct = is_direct(s);
  const Direct v = direct ? Direct(s, d) : Direct();
  const Kernels<T>& k = direct ? direct_kernels<T>() : general_kernels<T>();
  const Args<T> a{&s, &d, &v, nullptr, w, nullptr, gy, gx};
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<T>(s.n, nt, k.backward_input_scratch(a),
                [&](int64_t lo, int64_t hi, T* ws) { k.backward_input(a, lo, hi, ws); });
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
  const bool direct = is_direct(s);
  const Direct v = direct ? Direct(s, d) : Direct();
  const Kernels<T>& k = direct ? direct_kernels<T>() : general_kernels<T>();
  const Args<T> a{&s, &d, &v, x, nullptr, nullptr, gy, nullptr};
  // The batch is cut into ranges fixed by the shape, never by the thread count:
  // each range sums its images into its own partial dW and db, and the partials
  // are added in range order. So the gradient has the same bits on 1 thread or 64,
  // and a seeded training run does not change with --threads. (forward and
  // backward_input need no such care: each of their outputs comes from one image.)
  const int64_t work = round_up(k.backward_weight_scratch(a), 16);
  const int64_t part = round_up(w_elems + s.c_out, 16);
  const int64_t ranges = weight_ranges(s.n, part * int64_t(sizeof(T)));
  // With fewer ranges than threads (small batches), each range's weight is split
  // into blocks of channel tiles too. That split may follow the thread count: it
  // decides which thread computes an element, not how the element is summed.
  const int team = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  const int64_t units = k.backward_weight_units(a);
  const int64_t blocks = std::clamp<int64_t>(cdiv(team, ranges), 1, units);
  const int64_t items = ranges * blocks;
  const int nt = int(std::min<int64_t>(team, items));
  // Scratch: each thread's kernel workspace, then the partials of ranges 1..;
  // range 0 sums straight into the outputs.
  T* ws = static_cast<T*>(scratch.get(sizeof(T) * size_t(work * nt + part * (ranges - 1))));
  T* partials = ws + work * nt;
  auto run_item = [&](int64_t item, int tid) {
    const int64_t r = item / blocks, b = item % blocks;
    T* pw = r == 0 ? gw : partials + (r - 1) * part;
    T* pb = !gb ? nullptr : r == 0 ? gb : partials + (r - 1) * part + w_elems;
    k.backward_weight(a, s.n * r / ranges, s.n * (r + 1) / ranges, ws + tid * work, pw, pb, units * b / blocks,
                      units * (b + 1) / blocks);
  };
  if (nt <= 1) {
    for (int64_t item = 0; item < items; ++item) run_item(item, 0);
  } else {
    std::exception_ptr error;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int64_t item = 0; item < items; ++item) {
      try {
        run_item(item, omp_get_thread_num());
      } catch (...) {
#pragma omp critical(ember_conv2d_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }
  for (int64_t r = 1; r < ranges; ++r) {
    const T* pw = partials + (r - 1) * part;
    for (int64_t j = 0; j < w_elems; ++j) gw[j] += pw[j];
    if (gb)
      for (int64_t co = 0; co < s.c_out; ++co) gb[co] += pw[w_elems + co];
  }
}

// The two dtypes with kernels; the caller converts the others.
template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " +
                            dtype_name(dt));
}

}  // namespace
}  // namespace ember::cpu::conv2d_detail

namespace ember::cpu {

void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y) {
  conv2d_detail::float_types(dt, "conv2d_forward", [&]<class T>() {
    conv2d_detail::forward_impl<T>(s, static_cast<const T*>(x), static_cast<const T*>(weight),
                                   static_cast<const T*>(bias), static_cast<T*>(y));
  });
}

void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x) {
  conv2d_detail::float_types(dt, "conv2d_backward_input", [&]<class T>() {
    conv2d_detail::backward_input_impl<T>(s, static_cast<const T*>(grad_y),
                                          static_cast<const T*>(weight), static_cast<T*>(grad_x));
  });
}

void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias) {
  conv2d_detail::float_types(dt, "conv2d_backward_weight", [&]<class T>() {
    conv2d_detail::backward_weight_impl<T>(s, static_cast<const T*>(grad_y),
                                           static_cast<const T*>(x), static_cast<T*>(grad_weight),
                                           static_cast<T*>(grad_bias));
  });
}

bool conv2d_set_kernels(const char* isa) {
  using namespace conv2d_detail;
  const std::string_view name = isa ? isa : "";
  const Kernels<float>* f = direct_kernels_for<float>(name);
  const Kernels<double>* d = direct_kernels_for<double>(name);
  if (!f || !d) return false;
  active_direct_kernels<float>() = f;
  active_direct_kernels<double>() = d;
  return true;
}

}  // namespace ember::cpu

#else  // EMBER_CONV2D_ISA: the stride-1 kernels for one instruction set

// GCC flags vector types passed by value in functions whose target may lack the
// width; every such function here is compiled for a target that has it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ember::cpu::conv2d_detail::EMBER_CONV2D_ISA {
namespace {

// B bytes of T as one vector; the kernels use the widest (kBytes) and the copies
// step down through narrower ones for row tails.
constexpr int kBytes = EMBER_CONV2D_BYTES;

template <class T, int B = kBytes>
struct Vec {
  static constexpr int L = B / int(sizeof(T));
  typedef T V __attribute__((vector_size(B)));
  static V load(const T* p) {
    V v;
    __builtin_memcpy(&v, p, B);
    return v;
  }
  static void store(T* p, V v) { __builtin_memcpy(p, &v, B); }
  static T sum(V v) {
    T s = v[0];
    for (int i = 1; i < L; ++i) s += v[i];
    return s;
  }
};

// Register blocking: the outer-product tile holds MR rows x NV vectors (24 of
// AVX-512's 32 registers; 12 of the 16 elsewhere), the dot tile RC x RK.
template <class T>
struct Tiles {
  static constexpr int L = Vec<T>::L;
  static constexpr int NV = 2, NR = NV * L;
  static constexpr int MR = kBytes == 64 ? 12 : 6;
  static constexpr int RC = kBytes == 64 ? 3 : 2, RK = kBytes == 64 ? 6 : 4;
};

// Row copies and fills, in vectors of halving width for the tail. The empty asm makes
// the loaded value opaque, which keeps GCC from turning the loop into a memmove or
// memset call: the rows here are 8 to a few dozen elements, shorter than a call.
template <class T, int B>
void tail_copy(T* d, const T* s, int64_t n) {
  using S = Vec<T, B>;
  int64_t t = 0;
  if (n >= S::L) {
    S::store(d, S::load(s));
    t = S::L;
  }
  if constexpr (B / 2 >= int(sizeof(T))) tail_copy<T, B / 2>(d + t, s + t, n - t);
}

template <class T>
void copy_n(T* __restrict d, const T* __restrict s, int64_t n) {
  using S = Vec<T>;
  int64_t t = 0;
  for (; t + S::L <= n; t += S::L) {
    typename S::V v = S::load(s + t);
    asm("" : "+x"(v));
    S::store(d + t, v);
  }
  tail_copy<T, kBytes / 2>(d + t, s + t, n - t);
}

template <class T, int B>
void tail_zero(T* d, int64_t n) {
  using S = Vec<T, B>;
  int64_t t = 0;
  if (n >= S::L) {
    S::store(d, typename S::V{});
    t = S::L;
  }
  if constexpr (B / 2 >= int(sizeof(T))) tail_zero<T, B / 2>(d + t, n - t);
}

template <class T>
void zero_n(T* d, int64_t n) {
  using S = Vec<T>;
  typename S::V z{};
  asm("" : "+x"(z));
  int64_t t = 0;
  for (; t + S::L <= n; t += S::L) S::store(d + t, z);
  tail_zero<T, kBytes / 2>(d + t, n - t);
}

template <class T, int B>
void tail_add(T* d, const T* s, int64_t n) {
  using S = Vec<T, B>;
  int64_t t = 0;
  if (n >= S::L) {
    S::store(d, S::load(d) + S::load(s));
    t = S::L;
  }
  if constexpr (B / 2 >= int(sizeof(T))) tail_add<T, B / 2>(d + t, s + t, n - t);
}

template <class T>
void add_n(T* __restrict d, const T* __restrict s, int64_t n) {
  using S = Vec<T>;
  int64_t t = 0;
  for (; t + S::L <= n; t += S::L) S::store(d + t, S::load(d + t) + S::load(s + t));
  tail_add<T, kBytes / 2>(d + t, s + t, n - t);
}

// The outer-product tile: for ROWS rows i and the NV vectors of one panel,
//   C_i[0 .. ncols) = init[i] (or 0) + sum_d a[i*a_rs + d*a_cs] * B_d[lanes].
// Row d of B starts at b + boff[d] when a table is given, else at b + d*b_rs; it
// must hold NR readable elements (ncols only limits the store). Row i of C is
// c + i*c_rs, overwritten, or, with a table, c + coff[i], added to. a is broadcast
// one element at a time and needs no packing.
template <class T, int ROWS, bool BOFF, bool COFF>
[[gnu::noinline]] void outer_tile(int64_t depth, const T* a, int64_t a_rs, int64_t a_cs,
                                  const T* b, int64_t b_rs, const int64_t* boff, const T* init,
                                  T* c, int64_t c_rs, const int64_t* coff, int64_t ncols) {
  using S = Vec<T>;
  using V = typename S::V;
  constexpr int L = S::L, NV = Tiles<T>::NV;
  V acc[ROWS][NV];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    const V v = init ? init[i] - V{} : V{};  // x - 0 is x, -0 included
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = v;
  }
  for (int64_t d = 0; d < depth; ++d) {
    const T* bd = b + (BOFF ? boff[d] : d * b_rs);
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) bv[j] = S::load(bd + j * L);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const V ai = a[i * a_rs + d * a_cs] - V{};
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] += ai * bv[j];
    }
  }
  if (ncols == NV * L) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      T* ci = c + (COFF ? coff[i] : i * c_rs);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        S::store(ci + j * L, COFF ? S::load(ci + j * L) + acc[i][j] : acc[i][j]);
    }
    return;
  }
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    T buf[NV * L];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) S::store(buf + j * L, acc[i][j]);
    if (COFF) add_n(c + coff[i], buf, ncols);
    else copy_n(c + i * c_rs, buf, ncols);
  }
}

// outer_tile for a run-time row count r <= R.
template <class T, int R, bool BOFF, bool COFF>
void outer_tile_rows(int64_t r, int64_t depth, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                     int64_t b_rs, const int64_t* boff, const T* init, T* c, int64_t c_rs,
                     const int64_t* coff, int64_t ncols) {
  if constexpr (R >= 1) {
    if (r == R)
      return outer_tile<T, R, BOFF, COFF>(depth, a, a_rs, a_cs, b, b_rs, boff, init, c, c_rs,
                                          coff, ncols);
    outer_tile_rows<T, R - 1, BOFF, COFF>(r, depth, a, a_rs, a_cs, b, b_rs, boff, init, c, c_rs,
                                          coff, ncols);
  }
}

// All `rows` rows of one panel, MR at a time.
template <class T, bool BOFF, bool COFF>
void outer_rows(int64_t rows, int64_t depth, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                int64_t b_rs, const int64_t* boff, const T* init, T* c, int64_t c_rs,
                const int64_t* coff, int64_t ncols) {
  constexpr int MR = Tiles<T>::MR;
  for (int64_t r0 = 0; r0 < rows; r0 += MR)
    outer_tile_rows<T, MR, BOFF, COFF>(std::min<int64_t>(MR, rows - r0), depth, a + r0 * a_rs,
                                       a_rs, a_cs, b, b_rs, boff, init ? init + r0 : nullptr,
                                       COFF ? c : c + r0 * c_rs, c_rs, COFF ? coff + r0 : nullptr,
                                       ncols);
}

// x of one image (all channels) copied into the zero-padded Hv x Wv planes.
template <class T>
void pad_image(const Conv2dShape& s, const Direct& v, const T* x, T* xp) {
  for (int64_t ci = 0; ci < s.c_in; ++ci) {
    T* plane = xp + ci * v.plane;
    zero_n(plane, s.pad_h * v.Wv);
    for (int64_t iy = 0; iy < s.h; ++iy) {
      T* row = plane + (iy + s.pad_h) * v.Wv;
      zero_n(row, s.pad_w);
      copy_n(row + s.pad_w, x + (ci * s.h + iy) * s.w, s.w);
      zero_n(row + s.pad_w + s.w, s.pad_w);
    }
    zero_n(plane + (s.h + s.pad_h) * v.Wv, s.pad_h * v.Wv);
  }
}

// The rows [c0, c0 + rows) of gy (one image, rows of w_out) spread onto the virtual
// grid: dst row r, of length ld >= Pv, holds gy at oy*Wv + ox and zero elsewhere.
template <class T>
void spread_rows(const Conv2dShape& s, const Direct& v, const T* gy, int64_t rows, T* dst,
                 int64_t ld) {
  const int64_t P = s.h_out * s.w_out;
  for (int64_t r = 0; r < rows; ++r) {
    T* d = dst + r * ld;
    for (int64_t oy = 0; oy < s.h_out; ++oy) {
      copy_n(d + oy * v.Wv, gy + r * P + oy * s.w_out, s.w_out);
      zero_n(d + oy * v.Wv + s.w_out, std::min(v.Wv - s.w_out, ld - oy * v.Wv - s.w_out));
    }
    zero_n(d + v.Pv, ld - v.Pv);
  }
}

// Forward, images [lo, hi). Scratch: padded x, one tail panel [K][NR], and the
// virtual output rows [cog][Pr] when they differ from y's.
template <class T>
int64_t forward_scratch_elems(const Args<T>& a) {
  using Tl = Tiles<T>;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  return (v.padded ? a.s->c_in * v.plane : 0) + d.K * Tl::NR + d.cog * round_up(v.Pv, Tl::NR);
}

template <class T>
void forward_images(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  using Tl = Tiles<T>;
  constexpr int64_t NR = Tl::NR;
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  const int64_t Pr = round_up(v.Pv, NR);
  T* xp = ws;
  T* panel = xp + (v.padded ? s.c_in * v.plane : 0);
  T* ybuf = panel + d.K * NR;
  // When the grid is exactly y's (no columns to drop), the tiles write y itself.
  const bool in_place = v.Wv == s.w_out;
  for (int64_t i = lo; i < hi; ++i) {
    const T* xi = a.x + i * d.x_img;
    if (v.padded) {
      pad_image(s, v, xi, xp);
      xi = xp;
    }
    for (int64_t g = 0; g < d.G; ++g) {
      const T* xg = xi + g * d.cig * v.plane;
      T* yg = a.out + i * d.y_img + g * d.cog * d.P;
      T* c = in_place ? yg : ybuf;
      const int64_t c_rs = in_place ? d.P : Pr;
      for (int64_t p0 = 0; p0 < v.Pv; p0 += NR) {
        const int64_t nb = std::min(NR, v.Pv - p0);
        const T* wg = a.w + g * d.cog * d.K;
        const T* init = a.bias ? a.bias + g * d.cog : nullptr;
        if (nb == NR) {
          outer_rows<T, true, false>(d.cog, d.K, wg, d.K, 1, xg + p0, 0, v.off.data(), init, c + p0,
                                     c_rs, nullptr, nb);
        } else {
          // The last panel would read past the plane: copy what it needs, zero the rest.
          for (int64_t k = 0; k < d.K; ++k) {
            copy_n(panel + k * NR, xg + v.off[k] + p0, nb);
            zero_n(panel + k * NR + nb, NR - nb);
          }
          outer_rows<T, false, false>(d.cog, d.K, wg, d.K, 1, panel, NR, nullptr, init, c + p0,
                                      c_rs, nullptr, nb);
        }
      }
      if (!in_place)
        for (int64_t co = 0; co < d.cog; ++co)
          for (int64_t oy = 0; oy < s.h_out; ++oy)
            copy_n(yg + co * d.P + oy * s.w_out, ybuf + co * Pr + oy * v.Wv, s.w_out);
    }
  }
}

// Input gradient, images [lo, hi). Scratch: W^T with its rows in scatter order
// [G][K][cog], the padded gradient plane and gy on the virtual grid [cog][Pr].
template <class T>
int64_t backward_input_scratch_elems(const Args<T>& a) {
  using Tl = Tiles<T>;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  return a.s->c_out * d.K + (v.padded ? a.s->c_in * v.plane : 0) + d.cog * round_up(v.Pv, Tl::NR);
}

template <class T>
void backward_input_images(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  using Tl = Tiles<T>;
  constexpr int64_t NR = Tl::NR;
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  const int64_t Pr = round_up(v.Pv, NR);
  T* wt = ws;
  T* gp = wt + s.c_out * d.K;
  T* gyv = gp + (v.padded ? s.c_in * v.plane : 0);
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t j = 0; j < d.K; ++j)
      for (int64_t co = 0; co < d.cog; ++co)
        wt[(g * d.K + j) * d.cog + co] = a.w[(g * d.cog + co) * d.K + v.order[j]];
  for (int64_t i = lo; i < hi; ++i) {
    T* gxi = a.out + i * d.x_img;
    T* gx = v.padded ? gp : gxi;
    zero_n(gx, s.c_in * v.plane);
    for (int64_t g = 0; g < d.G; ++g) {
      spread_rows(s, v, a.gy + i * d.y_img + g * d.cog * d.P, d.cog, gyv, Pr);
      T* gxg = gx + g * d.cig * v.plane;
      for (int64_t p0 = 0; p0 < v.Pv; p0 += NR) {
        const int64_t nb = std::min(NR, v.Pv - p0);
        // dcol[k][.] = sum over c of W_g[c][k] * gy[c][.], added straight to the
        // pixels at off[k].
        outer_rows<T, false, true>(d.K, d.cog, wt + g * d.K * d.cog, d.cog, 1, gyv + p0, Pr,
                                   nullptr, nullptr, gxg + p0, 0, v.scatter_off.data(), nb);
      }
    }
    if (v.padded)
      for (int64_t ci = 0; ci < s.c_in; ++ci)
        for (int64_t iy = 0; iy < s.h; ++iy)
          copy_n(gxi + (ci * s.h + iy) * s.w,
                 gp + ci * v.plane + (iy + s.pad_h) * v.Wv + s.pad_w, s.w);
  }
}

// Weight gradient. dW[c][k] = sum over images and virtual positions of
// gy'[c][p'] * x[off[k] + p'], where gy' is gy spread on the virtual grid with zeros
// between rows: a dot product of contiguous rows, read straight from x. Images go
// in chunks small enough that their gy' and x stay in L1 while every RC x RK tile
// walks them; each tile's vector accumulators live in a scratch array between
// chunks and are summed across lanes once at the end.
//
// A row of x is read in whole vectors, up to Pw = Pv rounded up to a vector, so up
// to a vector past the plane: inside the batch that is the next plane (its values
// meet zeros of gy'), but past the last image it is outside x. That image, and
// every image when there is padding, is read from a copy with zeroed slack.
struct WeightLayout {
  int64_t Pw, Kp, Cp;
  int64_t x_elems;    // one copied image: c_in padded planes and a vector of slack
  int64_t gy_elems;   // gy' of one image: G x Cp rows of Pw
  int64_t per_image;  // x_elems + gy_elems
  int64_t chunk;      // images per chunk
  int64_t acc_elems;  // G x Cp x Kp vectors of dW, then c_out vectors of db
};

template <class T>
WeightLayout weight_layout(const Args<T>& a) {
  using Tl = Tiles<T>;
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  WeightLayout l;
  l.Pw = round_up(v.Pv, Tl::L);
  l.Kp = round_up(d.K, Tl::RK);
  l.Cp = round_up(d.cog, Tl::RC);
  l.x_elems = round_up(s.c_in * v.plane + Tl::L, Tl::L);
  l.gy_elems = d.G * l.Cp * l.Pw;
  l.per_image = l.x_elems + l.gy_elems;
  // What x and gy' of a chunk take in L1: about 32 KiB, at least one image.
  const int64_t bytes = (d.x_img + l.gy_elems) * int64_t(sizeof(T));
  l.chunk = std::clamp<int64_t>((32 << 10) / std::max<int64_t>(bytes, 1), 1, s.n);
  l.acc_elems = (d.G * l.Cp * l.Kp + s.c_out) * Tl::L;
  return l;
}

template <class T>
int64_t backward_weight_scratch_elems(const Args<T>& a) {
  const WeightLayout l = weight_layout(a);
  return l.acc_elems + l.chunk * l.per_image;
}

// One RC x RK tile of dW (group g, channels c.., taps k..) over a chunk of images:
// xs[m] and gys[m] are image m's x planes of group g and its gy' rows c...
template <class T>
[[gnu::noinline]] void dot_tile(const Direct& v, const WeightLayout& l, int64_t imgs,
                                const T* const* xs, const T* const* gys, int64_t K, int64_t k,
                                T* acc_mem) {
  using S = Vec<T>;
  using V = typename S::V;
  constexpr int RC = Tiles<T>::RC, RK = Tiles<T>::RK, L = S::L;
  V acc[RC][RK];
#pragma GCC unroll 8
  for (int r = 0; r < RC; ++r)
#pragma GCC unroll 8
    for (int q = 0; q < RK; ++q) acc[r][q] = S::load(acc_mem + (r * RK + q) * L);
  int64_t toff[RK];
#pragma GCC unroll 8
  for (int q = 0; q < RK; ++q) toff[q] = v.off[std::min(k + q, K - 1)];  // padding taps: any row
  for (int64_t m = 0; m < imgs; ++m) {
    const T* gyr = gys[m];
    const T* xr[RK];
#pragma GCC unroll 8
    for (int q = 0; q < RK; ++q) xr[q] = xs[m] + toff[q];
    for (int64_t p = 0; p < l.Pw; p += L) {
      V av[RC];
#pragma GCC unroll 8
      for (int r = 0; r < RC; ++r) av[r] = S::load(gyr + r * l.Pw + p);
#pragma GCC unroll 8
      for (int q = 0; q < RK; ++q) {
        // Loaded once into a register: folded into each FMA, as GCC prefers, the
        // unaligned load would be repeated RC times.
        V bv = S::load(xr[q] + p);
        asm("" : "+x"(bv));
#pragma GCC unroll 8
        for (int r = 0; r < RC; ++r) acc[r][q] += av[r] * bv;
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < RC; ++r)
#pragma GCC unroll 8
    for (int q = 0; q < RK; ++q) S::store(acc_mem + (r * RK + q) * L, acc[r][q]);
}

// The weight gradient splits into G x Cp / RC channel tiles: unit u is tile
// u % (Cp / RC) of group u / (Cp / RC).
template <class T>
int64_t backward_weight_units(const Args<T>& a) {
  return a.d->G * weight_layout(a).Cp / Tiles<T>::RC;
}

// Images [lo, hi) into the dW rows (and db entries) of channel tiles [u0, u1).
template <class T>
void backward_weight_images(const Args<T>& a, int64_t lo, int64_t hi, T* ws, T* pw, T* pb, int64_t u0,
                            int64_t u1) {
  using S = Vec<T>;
  constexpr int L = S::L, RC = Tiles<T>::RC, RK = Tiles<T>::RK;
  const Conv2dShape& s = *a.s;
  const Dims& d = *a.d;
  const Direct& v = *a.v;
  const WeightLayout l = weight_layout(a);
  const int64_t tiles_per_group = l.Cp / RC;
  // Whether channel c of group g is in this call's tiles.
  auto mine = [&](int64_t g, int64_t c) {
    const int64_t u = g * tiles_per_group + c / RC;
    return u >= u0 && u < u1;
  };
  auto group_is_mine = [&](int64_t g) {
    return g * tiles_per_group < u1 && (g + 1) * tiles_per_group > u0;
  };
  T* acc = ws;  // [g][c tile][k tile][RC][RK][L], then [c_out][L] for the bias
  T* bacc = acc + d.G * l.Cp * l.Kp * L;
  T* chunk = acc + l.acc_elems;
  zero_n(acc, l.acc_elems);
  std::vector<const T*> xs(size_t(l.chunk)), xg(size_t(l.chunk)), gys(size_t(l.chunk));
  for (int64_t i0 = lo; i0 < hi; i0 += l.chunk) {
    const int64_t imgs = std::min(l.chunk, hi - i0);
    for (int64_t m = 0; m < imgs; ++m) {
      T* xc = chunk + m * l.per_image;
      T* gyv = xc + l.x_elems;
      const T* xi = a.x + (i0 + m) * d.x_img;
      if (v.padded) {
        pad_image(s, v, xi, xc);
        zero_n(xc + s.c_in * v.plane, l.x_elems - s.c_in * v.plane);
        xi = xc;
      } else if (i0 + m == s.n - 1) {
        copy_n(xc, xi, d.x_img);
        zero_n(xc + d.x_img, l.x_elems - d.x_img);
        xi = xc;
      }
      xs[size_t(m)] = xi;
      for (int64_t g = 0; g < d.G; ++g) {
        if (!group_is_mine(g)) continue;
        T* rows = gyv + g * l.Cp * l.Pw;
        spread_rows(s, v, a.gy + (i0 + m) * d.y_img + g * d.cog * d.P, d.cog, rows, l.Pw);
        zero_n(rows + d.cog * l.Pw, (l.Cp - d.cog) * l.Pw);
        if (pb)
          for (int64_t co = 0; co < d.cog; ++co) {
            if (!mine(g, co)) continue;
            T* bc = bacc + (g * d.cog + co) * L;
            typename S::V sum = S::load(bc);
            for (int64_t p = 0; p < l.Pw; p += L) sum += S::load(rows + co * l.Pw + p);
            S::store(bc, sum);
          }
      }
    }
    for (int64_t g = 0; g < d.G; ++g) {
      if (!group_is_mine(g)) continue;
      for (int64_t m = 0; m < imgs; ++m) xg[size_t(m)] = xs[size_t(m)] + g * d.cig * v.plane;
      for (int64_t c = 0; c < l.Cp; c += RC) {
        if (!mine(g, c)) continue;
        for (int64_t m = 0; m < imgs; ++m)
          gys[size_t(m)] = chunk + m * l.per_image + l.x_elems + (g * l.Cp + c) * l.Pw;
        for (int64_t k = 0; k < l.Kp; k += RK)
          dot_tile(v, l, imgs, xg.data(), gys.data(), d.K, k,
                   acc + ((g * l.Cp + c) * l.Kp + k * RC) * L);
      }
    }
  }
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t c = 0; c < d.cog; ++c) {
      if (!mine(g, c)) continue;
      for (int64_t k = 0; k < d.K; ++k) {
        const int64_t tile = (g * l.Cp + c / RC * RC) * l.Kp + k / RK * RK * RC;
        pw[(g * d.cog + c) * d.K + k] = S::sum(S::load(acc + (tile + c % RC * RK + k % RK) * L));
      }
      if (pb) pb[g * d.cog + c] = S::sum(S::load(bacc + (g * d.cog + c) * L));
    }
}

// The entry points the dispatcher takes the addresses of.
template <class T>
void forward(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  forward_images(a, lo, hi, ws);
}
template <class T>
void backward_input(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  backward_input_images(a, lo, hi, ws);
}
template <class T>
void backward_weight(const Args<T>& a, int64_t lo, int64_t hi, T* ws, T* pw, T* pb, int64_t u0, int64_t u1) {
  backward_weight_images(a, lo, hi, ws, pw, pb, u0, u1);
}
template <class T>
int64_t forward_scratch(const Args<T>& a) {
  return forward_scratch_elems(a);
}
template <class T>
int64_t backward_input_scratch(const Args<T>& a) {
  return backward_input_scratch_elems(a);
}
template <class T>
int64_t backward_weight_scratch(const Args<T>& a) {
  return backward_weight_scratch_elems(a);
}

}  // namespace
}  // namespace ember::cpu::conv2d_detail::EMBER_CONV2D_ISA

#pragma GCC diagnostic pop

#endif  // EMBER_CONV2D_ISA
