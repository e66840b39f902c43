// The stride-1 convolution kernels, written once over GCC vector types of kBytes
// bytes and included by each conv2d_direct_<isa>.cpp inside its instruction-set
// region, after it defines kBytes (64 for AVX-512, 32 for AVX2, 16 for the baseline).
//
// How they work (see conv2d.cpp for the formulas): the output is laid out on the
// input's grid (conv2d_kernels.h's Direct), so col[k, p'] is x[off[k] + p'] and a
// run of consecutive p' is a run of consecutive input. The register tiles read the
// input in place: the forward tile keeps up to 12 output channels x 32 pixels (two
// AVX-512 vectors) and walks k, the input-gradient tile keeps taps x pixels and walks
// c_out, the weight-gradient tile is a dot product over pixels (3 channels x 5
// taps, which divide a 5x5 kernel's). Positions with ox >= w_out are padding columns
// of that grid: the forward pass computes and drops them, the gradients see zeros
// of gy there (so an Inf or NaN in x or the weight, which already makes the
// gradients non-finite, can reach a few more of their entries than a direct sum
// would).
//
// Everything sits in an anonymous namespace, and the includer has included every
// standard header used here before its region opens (see isa.h).
#pragma once

namespace ember::cpu::conv2d_detail {
namespace {

// B bytes of T as one vector; the kernels use the widest (kBytes) and the copies
// step down through narrower ones for row tails.
static_assert(kBytes == 16 || kBytes == 32 || kBytes == 64,
              "kBytes: the vector width of the includer's instruction set");

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
  // One vector from two half vectors, the lower lanes from lo and the upper from hi
  // (the forward tile's row pairs).
  static V load_halves(const T* lo, const T* hi) {
    return join(Vec<T, B / 2>::load(lo), Vec<T, B / 2>::load(hi), std::make_index_sequence<size_t(L)>{});
  }
  template <class H, size_t... J>
  static V join(H lo, H hi, std::index_sequence<J...>) { return __builtin_shufflevector(lo, hi, int(J)...); }
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
  static constexpr int RC = kBytes == 64 ? 3 : 2, RK = kBytes == 64 ? 5 : 4;
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

// How many taps ahead outer_tile prefetches a packed weight block's rows. A tile
// reads 12 of a block's 32 channels per tap, 128 bytes apart, and the hardware
// prefetchers left one image of a 512-channel 3x3 layer at 4x4 (9.4 MB of weight)
// 8-50% slower than from the plain layout on one thread; 16, 48 or 128 ahead all
// brought it to within 4-6%.
constexpr int64_t kPrefetchAhead = 16;

// The outer-product tile: for ROWS rows i and the NV vectors of one panel,
//   C_i[0 .. ncols) = init[i] (or 0) + sum_d a[i*a_rs + d*a_cs] * B_d[lanes].
// Row d of B starts at b + boff[d] when a table is given, else at b + d*b_rs; it
// must hold NR readable elements (ncols only limits the store). With PAIRS (and a
// table), vector j of row d is instead two half vectors read at b + boff[d] +
// 2j*b_rs and + (2j+1)*b_rs: two output rows of L/2 pixels each (forward_layout).
// Row i of C is c + i*c_rs, overwritten, or, with a table, c + coff[i], added to. a
// is broadcast one element at a time and needs no packing.
template <class T, int ROWS, bool BOFF, bool COFF, bool PAIRS = false>
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
  // a in rows of a packed weight block (a_rs 1, a_cs the block's width): the rows
  // kPrefetchAhead taps on, both of their cache lines, fetched ahead. Only the
  // float32 forward tiles (a table for B, none for C) read packed weights; the other
  // instantiations (float64, the input gradient's) leave the branch out.
  constexpr bool kMayReadPacked = std::is_same_v<T, float> && BOFF && !COFF;
  const bool prefetch_a = kMayReadPacked && a_rs == 1 && a_cs > 1;
  for (int64_t d = 0; d < depth; ++d) {
    if (prefetch_a && d + kPrefetchAhead < depth) {
      // The row's second line as an address only (it may lie past the buffer,
      // which a prefetch never faults on).
      const uintptr_t row = reinterpret_cast<uintptr_t>(a + (d + kPrefetchAhead) * a_cs);
      __builtin_prefetch(reinterpret_cast<const void*>(row));
      __builtin_prefetch(reinterpret_cast<const void*>(row + 64));
    }
    const T* bd = b + (BOFF ? boff[d] : d * b_rs);
    V bv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      bv[j] = PAIRS ? S::load_halves(bd + 2 * j * b_rs, bd + (2 * j + 1) * b_rs) : S::load(bd + j * L);
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
template <class T, int R, bool BOFF, bool COFF, bool PAIRS>
void outer_tile_rows(int64_t r, int64_t depth, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                     int64_t b_rs, const int64_t* boff, const T* init, T* c, int64_t c_rs,
                     const int64_t* coff, int64_t ncols) {
  if constexpr (R >= 1) {
    if (r == R)
      return outer_tile<T, R, BOFF, COFF, PAIRS>(depth, a, a_rs, a_cs, b, b_rs, boff, init, c, c_rs,
                                                 coff, ncols);
    outer_tile_rows<T, R - 1, BOFF, COFF, PAIRS>(r, depth, a, a_rs, a_cs, b, b_rs, boff, init, c, c_rs,
                                                 coff, ncols);
  }
}

// All `rows` rows of one panel, MR at a time.
template <class T, bool BOFF, bool COFF, bool PAIRS = false>
void outer_rows(int64_t rows, int64_t depth, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
                int64_t b_rs, const int64_t* boff, const T* init, T* c, int64_t c_rs,
                const int64_t* coff, int64_t ncols) {
  constexpr int MR = Tiles<T>::MR;
  for (int64_t r0 = 0; r0 < rows; r0 += MR)
    outer_tile_rows<T, MR, BOFF, COFF, PAIRS>(std::min<int64_t>(MR, rows - r0), depth, a + r0 * a_rs,
                                              a_rs, a_cs, b, b_rs, boff, init ? init + r0 : nullptr,
                                              COFF ? c : c + r0 * c_rs, c_rs, COFF ? coff + r0 : nullptr,
                                              ncols);
}

// Rows [r0, r1) of the zero-padded Hv x Wv planes of one image (all channels) of x:
// the padding's rows zero, the others x's row between pad_w zeros on each side.
template <class T>
void pad_image_rows(const Conv2dShape& s, const Direct& v, const T* x, T* xp, int64_t r0, int64_t r1) {
  for (int64_t ci = 0; ci < s.c_in; ++ci) {
    T* plane = xp + ci * v.plane;
    for (int64_t r = r0; r < r1; ++r) {
      T* row = plane + r * v.Wv;
      const int64_t iy = r - s.pad_h;
      if (iy < 0 || iy >= s.h) {
        zero_n(row, v.Wv);
        continue;
      }
      zero_n(row, s.pad_w);
      copy_n(row + s.pad_w, x + (ci * s.h + iy) * s.w, s.w);
      zero_n(row + s.pad_w + s.w, s.pad_w);
    }
  }
}

// x of one image (all channels) copied into the zero-padded Hv x Wv planes.
template <class T>
void pad_image(const Conv2dShape& s, const Direct& v, const T* x, T* xp) {
  pad_image_rows(s, v, x, xp, 0, v.Hv);
}

// The rows [c0, c0 + rows) of gy (one image, rows of w_out) spread onto the virtual
// grid: dst row r, of length ld >= Pv, holds gy at oy*Wv + ox and zero elsewhere.
template <class T>
void spread_rows(const Conv2dShape& s, const Direct& v, const T* gy, int64_t rows, T* dst,
                 int64_t ld) {
  const int64_t P = s.h_out * s.w_out;
  for (int64_t r = 0; r < rows; ++r) {
    // Zeroed whole in wide stores, then the rows copied over it: cheaper than a
    // short zeroing call after every row when rows are a few dozen elements.
    T* d = dst + r * ld;
    if (v.Wv > s.w_out) zero_n(d, ld);
    else zero_n(d + v.Pv, ld - v.Pv);
    for (int64_t oy = 0; oy < s.h_out; ++oy) copy_n(d + oy * v.Wv, gy + r * P + oy * s.w_out, s.w_out);
  }
}

// Defined in relu_pool_impl.h, which each instruction set's file includes next.
template <class T>
void relu_pool_forward_planes(const T* conv, int64_t planes, int64_t plane_stride, int64_t row_stride,
                              int64_t h_out, int64_t w_out, T* y, uint8_t* window, bool round_bf16);
template <class T>
void spread_pooled_rows(const Conv2dShape& s, const Direct& v, const T* gy, const uint8_t* window, int64_t rows,
                        T* dst, int64_t ld);

// Channels [c0, c0 + rows) of image i's output gradient on the virtual grid, as
// spread_rows lays them out: read from gy, or, for the fused block's backward
// (a.gy_window set), made from the pooled gradient and its window bytes.
template <class T>
void gy_rows(const Args<T>& a, int64_t i, int64_t c0, int64_t rows, T* dst, int64_t ld) {
  const Conv2dShape& s = *a.s;
  if (!a.gy_window) return spread_rows(s, *a.v, a.gy + i * a.d->y_img + c0 * a.d->P, rows, dst, ld);
  const int64_t pooled = (s.h_out / 2) * (s.w_out / 2), o = (i * s.c_out + c0) * pooled;
  spread_pooled_rows(s, *a.v, a.gy + o, a.gy_window + o, rows, dst, ld);
}

#include "kernels/cpu/conv2d_lanes_impl.h"

// Where one image's forward sums go and what its panels read.
//
// On the grid (the general case): virtual positions p' < Pv in panels of NR, an
// output row every Wv positions, the padding columns computed and dropped.
//
// In row pairs (float32 on AVX2 and AVX-512, when w_out is half a vector): each
// vector holds two output rows of w_out pixels, its lower half read from x at row oy
// and its upper half at row oy + 1 (outer_tile's PAIRS). No padding column is
// computed and the sums come out in y's own layout: the seed network's conv2 (8x8
// outputs from 12x12 planes) computes 64 positions instead of 96. Rows past h_out in
// the last panel are computed and dropped.
//
// Every panel, the last one included, reads x in place: the last reads past the
// grid's last position (up to NR - nb elements on the grid, whole rows in pairs),
// which are the next channel's or the next image's (their products land in sums that
// are dropped), or past the end of the batch. reach is one past the furthest element
// read, from an image's start; an image whose reads would leave x (the last, or more
// when images are smaller than a panel) or that needs padding is read from a copy
// with zeroed slack. (Copying the last panel's K rows instead cost the seed network's
// batch-1 conv2 more than its other panels together.)
template <class T>
constexpr bool kRowPairs = std::is_same_v<T, float> && kBytes >= 32;

struct ForwardLayout {
  bool pairs = false;
  int64_t positions = 0;  // what the panels cover: Pv, or h_out * w_out in pairs
  int64_t Pr = 0;         // one channel's sums in the scratch rows: whole panels
  int64_t row = 0;        // an output row's stride there: Wv, or w_out in pairs
  int64_t reach = 0;
};

template <class T>
ForwardLayout forward_layout(const Conv2dShape& s, const Conv2dDims& d, const Direct& v) {
  using Tl = Tiles<T>;
  ForwardLayout f;
  // The furthest tap, from the image's start: its last group's last offset.
  const int64_t last_tap = (d.G - 1) * d.cig * v.plane + (v.off.empty() ? 0 : v.off.back());
  f.pairs = kRowPairs<T> && 2 * s.w_out == Tl::L;
  if (f.pairs) {
    const int64_t rows = round_up(s.h_out, 2 * Tl::NV);  // NV vectors of two rows per panel
    f.positions = s.h_out * s.w_out;
    f.Pr = rows * s.w_out;
    f.row = s.w_out;
    f.reach = last_tap + (rows - 1) * v.Wv + s.w_out;
  } else {
    f.positions = v.Pv;
    f.Pr = round_up(v.Pv, Tl::NR);
    f.row = v.Wv;
    f.reach = last_tap + f.Pr;
  }
  if (v.off.empty()) f.reach = 0;  // no taps (no input channels): nothing is read
  return f;
}

// Scratch: the copied image with its slack, and the output rows [cog][Pr].
template <class T>
int64_t forward_scratch_elems(const Args<T>& a) {
  if (a.w_lanes) return a.v->padded ? a.s->c_in * a.v->plane : 0;  // the padded copy
  const ForwardLayout f = forward_layout<T>(*a.s, *a.d, *a.v);
  return std::max(a.s->c_in * a.v->plane, f.reach) + a.d->cog * f.Pr;
}

// Forward, images [lo, hi).
template <class T>
void forward_images(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  constexpr int64_t NR = Tiles<T>::NR;
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  if constexpr (std::is_same_v<T, float>)
    if (a.w_lanes) return forward_lanes(a, lo, hi, ws);
  const ForwardLayout f = forward_layout<T>(s, d, v);
  const int64_t image = s.c_in * v.plane;
  T* xcopy = ws;
  T* ybuf = xcopy + std::max(image, f.reach);
  if (f.reach > image) zero_n(xcopy + image, f.reach - image);
  // When the sums' rows are y's (no columns to drop), the tiles write y itself.
  const bool in_place = !a.relu_pool && f.row == s.w_out;
  // The tiles' rows are output channels, their depth the taps: cog rows of W, or
  // with a packed W (Args::w_block) a block's rows at a time, bw apart per tap.
  const int64_t bw = a.w_block ? a.w_block : d.cog;
  const int64_t w_rs = a.w_block ? 1 : d.K, w_cs = a.w_block ? a.w_block : 1;
  const int64_t pooled = (s.h_out / 2) * (s.w_out / 2);
  for (int64_t i = lo; i < hi; ++i) {
    const T* xi = a.x + i * d.x_img;
    if (v.padded) {
      pad_image(s, v, xi, xcopy);
      xi = xcopy;
    } else if (f.reach > (s.n - i) * image) {  // would read past the batch's last image
      copy_n(xcopy, xi, image);
      xi = xcopy;
    }
    for (int64_t g = 0; g < d.G; ++g) {
      const T* xg = xi + g * d.cig * v.plane;
      T* yg = a.relu_pool ? nullptr : a.out + i * d.y_img + g * d.cog * d.P;
      T* c = in_place ? yg : ybuf;
      const int64_t c_rs = in_place ? d.P : f.Pr;
      for (int64_t c0 = g * d.cog, rows = 0; c0 < (g + 1) * d.cog; c0 += rows) {
        // Channels [c0, c0 + rows) in one block; counted from a.w's start, channel
        // c0 is q, in block q / bw (bw * K values each, in either layout) at q % bw.
        const int64_t q = a.w_lead + c0, at = q % bw;
        rows = std::min(bw - at, (g + 1) * d.cog - c0);
        const T* wb = a.w + (q - at) * d.K + at * w_rs;
        const T* init = a.bias ? a.bias + c0 : nullptr;
        T* cb = c + (c0 - g * d.cog) * c_rs;
        for (int64_t p0 = 0; p0 < f.positions; p0 += NR) {
          const int64_t n = std::min(NR, f.positions - p0);
          if constexpr (kRowPairs<T>) {
            if (f.pairs) {
              // Panel p0 starts at output row p0 / w_out; b_rs steps x's rows.
              outer_rows<T, true, false, true>(rows, d.K, wb, w_rs, w_cs, xg + p0 / s.w_out * v.Wv, v.Wv, v.off.data(),
                                               init, cb + p0, c_rs, nullptr, n);
              continue;
            }
          }
          outer_rows<T, true, false>(rows, d.K, wb, w_rs, w_cs, xg + p0, 0, v.off.data(), init, cb + p0, c_rs, nullptr,
                                     n);
        }
      }
      if (a.relu_pool) {
        const int64_t o = (i * s.c_out + g * d.cog) * pooled;
        relu_pool_forward_planes(ybuf, d.cog, f.Pr, f.row, s.h_out, s.w_out, a.out + o,
                                 a.window ? a.window + o : nullptr, a.round_bf16);
      } else if (!in_place)
        for (int64_t co = 0; co < d.cog; ++co)
          for (int64_t oy = 0; oy < s.h_out; ++oy)
            copy_n(yg + co * d.P + oy * s.w_out, ybuf + co * f.Pr + oy * f.row, s.w_out);
    }
  }
}

// Input gradient, images [lo, hi). gx[ci][ky*Wv + p] (in units of the dilations)
// collects, over output channels co and kernel columns kx, W[co][ci][ky][kx] *
// gy'[co][p - kx], for positions p < Pv + (kw - 1)*dil_w: so a tile's rows are
// (ky, ci), added into the gradient plane at ci*plane + ky*Wv, and its depth is
// (co, kx), reading gy' (spread on the virtual grid, zeros before and after each
// row) shifted by kx. A depth of c_out x kw (60 for the seed net's conv2) instead of
// c_out with single taps as rows: each tile's sums go into the plane a fifth as
// often. Rows ky-major put consecutive rows in different channels, so one row's
// read-modify-write does not wait on the store of the row before it.
struct InputLayout {
  int64_t R, D, Pe, lead, ld;  // rows, depth, positions, zeros before gy' rows, gy' row stride
};

template <class T>
InputLayout input_layout(const Args<T>& a) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  InputLayout l;
  l.R = s.kh * d.cig;
  l.D = d.cog * s.kw;
  l.Pe = a.v->Pv + (s.kw - 1) * s.dil_w;
  l.lead = round_up((s.kw - 1) * s.dil_w, Tiles<T>::L);
  l.ld = round_up(l.Pe, Tiles<T>::NR) + l.lead;
  return l;
}

// Scratch: the weights [G][R][D], the padded gradient plane, the gy' rows.
template <class T>
int64_t backward_input_scratch_elems(const Args<T>& a) {
  const InputLayout l = input_layout(a);
  const Direct& v = *a.v;
  return a.d->G * l.R * l.D + (v.padded ? a.s->c_in * v.plane : 0) + l.lead + a.d->cog * l.ld;
}

template <class T>
void backward_input_images(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  constexpr int64_t NR = Tiles<T>::NR;
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  const InputLayout l = input_layout(a);
  T* wt = ws;
  T* gp = wt + d.G * l.R * l.D;
  T* gyv = gp + (v.padded ? s.c_in * v.plane : 0);
  const int64_t taps = s.kh * s.kw;
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t r = 0; r < l.R; ++r)
      for (int64_t co = 0; co < d.cog; ++co)
        for (int64_t kx = 0; kx < s.kw; ++kx)
          wt[(g * l.R + r) * l.D + co * s.kw + kx] =
              a.w[(g * d.cog + co) * d.K + (r % d.cig) * taps + (r / d.cig) * s.kw + kx];
  std::vector<int64_t> boff(size_t(l.D)), coff(size_t(l.R));
  for (int64_t co = 0; co < d.cog; ++co)
    for (int64_t kx = 0; kx < s.kw; ++kx) boff[size_t(co * s.kw + kx)] = co * l.ld + l.lead - kx * s.dil_w;
  for (int64_t r = 0; r < l.R; ++r) coff[size_t(r)] = (r % d.cig) * v.plane + (r / d.cig) * s.dil_h * v.Wv;
  zero_n(gyv, l.lead);  // the first row's zeros before it; the rest are row tails
  for (int64_t i = lo; i < hi; ++i) {
    T* gxi = a.out + i * d.x_img;
    T* gx = v.padded ? gp : gxi;
    zero_n(gx, s.c_in * v.plane);
    for (int64_t g = 0; g < d.G; ++g) {
      gy_rows(a, i, g * d.cog, d.cog, gyv + l.lead, l.ld);
      T* gxg = gx + g * d.cig * v.plane;
      for (int64_t p0 = 0; p0 < l.Pe; p0 += NR)
        outer_rows<T, true, true>(l.R, l.D, wt + g * l.R * l.D, l.D, 1, gyv + p0, 0, boff.data(), nullptr, gxg + p0,
                                  0, coff.data(), std::min(NR, l.Pe - p0));
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
// meet zeros of gy'), but past the last image it is outside x. That image (and the
// ones before it whose reads would run past it, when images are smaller than a
// vector), and every image when there is padding, is read from a copy with zeroed
// slack.
struct WeightLayout {
  int64_t Pw, Kp, Cp;
  int64_t x_elems;    // one copied image: c_in padded planes and a vector of slack
  int64_t gy_elems;   // gy' of one image: G x Cp rows of Pw
  int64_t per_image;  // x_elems + gy_elems
  int64_t chunk;      // images per chunk
  int64_t acc_elems;  // G x Cp x Kp vectors of dW sums, then c_out vectors of db sums
};

// The layout for values of type E read `step` at a time and vector sums of `lanes`
// lanes, tiles of RC channels x RK taps.
template <class E>
WeightLayout weight_layout(const Args<E>& a, int64_t step, int64_t lanes, int RC, int RK) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  WeightLayout l;
  l.Pw = round_up(v.Pv, step);
  l.Kp = round_up(d.K, RK);
  l.Cp = round_up(d.cog, RC);
  l.x_elems = round_up(s.c_in * v.plane + step, step);
  l.gy_elems = d.G * l.Cp * l.Pw;
  l.per_image = l.x_elems + l.gy_elems;
  // What x and gy' of a chunk take in L1: about 32 KiB, at least one image.
  const int64_t bytes = (d.x_img + l.gy_elems) * int64_t(sizeof(E));
  l.chunk = std::clamp<int64_t>((32 << 10) / std::max<int64_t>(bytes, 1), 1, s.n);
  l.acc_elems = (d.G * l.Cp * l.Kp + s.c_out) * lanes;
  return l;
}

// The float kernels' weight-gradient policy for weight_images below: values and
// sums of type T, RC x RK tiles of FMAs.
template <class T>
struct FloatWeight {
  using E = T;  // the type of x and gy'
  using A = T;  // the type of the sums
  using S = Vec<T>;
  static constexpr int RC = Tiles<T>::RC, RK = Tiles<T>::RK, kStep = S::L, kLanes = S::L;
  static WeightLayout layout(const Args<T>& a) { return weight_layout(a, kStep, kLanes, RC, RK); }
  static void rows(const Args<T>& a, int64_t i, int64_t c0, int64_t n, T* dst, int64_t ld) {
    gy_rows(a, i, c0, n, dst, ld);
  }
  // Image i of x as v's planes (v.padded says when it is needed).
  static void copy_image(const Args<T>& a, int64_t i, T* xc) { pad_image(*a.s, *a.v, a.x + i * a.d->x_img, xc); }
  // bc += one gy' row, lane by lane.
  static void bias(T* bc, const T* row, int64_t Pw) {
    typename S::V sum = S::load(bc);
    for (int64_t p = 0; p < Pw; p += kStep) sum += S::load(row + p);
    S::store(bc, sum);
  }
  static T lane_sum(const T* v) { return S::sum(S::load(v)); }

  // One RC x RK tile of dW over a chunk of images: xs[m] and gys[m] are image m's x
  // planes of the group and its gy' rows c..; toff the tile's tap offsets.
  [[gnu::noinline]] static void tile(const WeightLayout& l, int64_t imgs, const T* const* xs, const T* const* gys,
                                     const int64_t* toff, T* acc_mem) {
    using V = typename S::V;
    constexpr int L = S::L;
    V acc[RC][RK];
#pragma GCC unroll 8
    for (int r = 0; r < RC; ++r)
#pragma GCC unroll 8
      for (int q = 0; q < RK; ++q) acc[r][q] = S::load(acc_mem + (r * RK + q) * L);
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
};

// Scratch in sums (A): the vector sums, then the chunk's copies.
template <class W>
int64_t weight_scratch(const Args<typename W::E>& a) {
  const WeightLayout l = W::layout(a);
  return l.acc_elems + cdiv(l.chunk * l.per_image * int64_t(sizeof(typename W::E)), int64_t(sizeof(typename W::A)));
}

// The weight gradient splits into G x Cp / RC channel tiles: unit u is tile
// u % (Cp / RC) of group u / (Cp / RC).
template <class W>
int64_t weight_units(const Args<typename W::E>& a) {
  return a.d->G * W::layout(a).Cp / W::RC;
}

// Images [lo, hi) into the dW rows (and db entries) of channel tiles [u0, u1), with
// the policy W (FloatWeight, or the bfloat16 one of conv2d_direct_bf16.cpp).
template <class W>
void weight_images(const Args<typename W::E>& a, int64_t lo, int64_t hi, typename W::A* ws, typename W::A* pw,
                   typename W::A* pb, int64_t u0, int64_t u1) {
  using E = typename W::E;
  using A = typename W::A;
  constexpr int RC = W::RC, RK = W::RK, N = W::kLanes;
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  const WeightLayout l = W::layout(a);
  const int64_t tiles_per_group = l.Cp / RC;
  // Whether channel c of group g is in this call's tiles.
  auto mine = [&](int64_t g, int64_t c) {
    const int64_t u = g * tiles_per_group + c / RC;
    return u >= u0 && u < u1;
  };
  auto group_is_mine = [&](int64_t g) {
    return g * tiles_per_group < u1 && (g + 1) * tiles_per_group > u0;
  };
  A* acc = ws;  // [g][c tile][k tile][RC][RK][N], then [c_out][N] for the bias
  A* bacc = acc + d.G * l.Cp * l.Kp * N;
  E* chunk = reinterpret_cast<E*>(acc + l.acc_elems);
  zero_n(acc, l.acc_elems);
  std::vector<const E*> xs(size_t(l.chunk)), xg(size_t(l.chunk)), gys(size_t(l.Cp / RC * l.chunk));
  for (int64_t i0 = lo; i0 < hi; i0 += l.chunk) {
    const int64_t imgs = std::min(l.chunk, hi - i0);
    for (int64_t m = 0; m < imgs; ++m) {
      E* xc = chunk + m * l.per_image;
      E* gyv = xc + l.x_elems;
      const E* xi = a.x + (i0 + m) * d.x_img;
      if (v.padded) {
        W::copy_image(a, i0 + m, xc);
        zero_n(xc + s.c_in * v.plane, l.x_elems - s.c_in * v.plane);
        xi = xc;
      } else if (i0 + m == s.n - 1 || (s.n - 1 - (i0 + m)) * d.x_img < l.Pw - v.Pv) {
        copy_n(xc, xi, d.x_img);
        zero_n(xc + d.x_img, l.x_elems - d.x_img);
        xi = xc;
      }
      xs[size_t(m)] = xi;
      for (int64_t g = 0; g < d.G; ++g) {
        if (!group_is_mine(g)) continue;
        E* rows = gyv + g * l.Cp * l.Pw;
        W::rows(a, i0 + m, g * d.cog, d.cog, rows, l.Pw);
        zero_n(rows + d.cog * l.Pw, (l.Cp - d.cog) * l.Pw);
        if (pb)
          for (int64_t co = 0; co < d.cog; ++co)
            if (mine(g, co)) W::bias(bacc + (g * d.cog + co) * N, rows + co * l.Pw, l.Pw);
      }
    }
    // Tap tiles outside, channel tiles inside: a tap tile's rows of x come into L1
    // once and every channel tile reuses them there, and gy' of all channels stays
    // in L1 (the other order streamed the whole chunk's x once per channel tile).
    for (int64_t g = 0; g < d.G; ++g) {
      if (!group_is_mine(g)) continue;
      for (int64_t m = 0; m < imgs; ++m) xg[size_t(m)] = xs[size_t(m)] + g * d.cig * v.plane;
      for (int64_t c = 0; c < l.Cp; c += RC)
        for (int64_t m = 0; m < imgs && mine(g, c); ++m)
          gys[size_t(c / RC * l.chunk + m)] = chunk + m * l.per_image + l.x_elems + (g * l.Cp + c) * l.Pw;
      for (int64_t k = 0; k < l.Kp; k += RK) {
        int64_t toff[RK];
        for (int q = 0; q < RK; ++q) toff[q] = v.off[size_t(std::min(k + q, d.K - 1))];  // padding taps: any row
        for (int64_t c = 0; c < l.Cp; c += RC)
          if (mine(g, c))
            W::tile(l, imgs, xg.data(), gys.data() + c / RC * l.chunk, toff, acc + ((g * l.Cp + c) * l.Kp + k * RC) * N);
      }
    }
  }
  for (int64_t g = 0; g < d.G; ++g)
    for (int64_t c = 0; c < d.cog; ++c) {
      if (!mine(g, c)) continue;
      for (int64_t k = 0; k < d.K; ++k) {
        const int64_t tile = (g * l.Cp + c / RC * RC) * l.Kp + k / RK * RK * RC;
        pw[(g * d.cog + c) * d.K + k] = W::lane_sum(acc + (tile + c % RC * RK + k % RK) * N);
      }
      if (pb) pb[g * d.cog + c] = W::lane_sum(bacc + (g * d.cog + c) * N);
    }
}

// This instruction set's table.
template <class T>
constexpr Kernels<T> direct_table() {
  Kernels<T> k{forward_images<T>,        backward_input_images<T>,         weight_images<FloatWeight<T>>,
               forward_scratch_elems<T>, backward_input_scratch_elems<T>, weight_scratch<FloatWeight<T>>,
               weight_units<FloatWeight<T>>};
  if constexpr (std::is_same_v<T, float>) {
    k.lane_fits = lane_fits<T>;
    k.lane_channels = Tiles<T>::NR;
    k.pack_lanes = pack_lane_weights<T>;
  }
  return k;
}

}  // namespace
}  // namespace ember::cpu::conv2d_detail
