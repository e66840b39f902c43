// The arithmetic of the direct CUDA convolution (conv2d_direct.cu): one function per
// GPU thread's work, in plain C++ with no CUDA header, so that a CPU test
// (tests/kernels/test_conv2d_direct_math.cpp) runs every thread of a grid and checks
// the index math against the definition on machines without a GPU. The .cu file is
// left with the launches, the loads' conversions and one warp reduction.
//
// Why a direct path: the im2col + GEMM path (conv2d.cu) hands the GEMM an m of
// c_out/groups. Layers with few output channels per group (the seed network's 6 and
// 12, depthwise layers' 1) leave most of each GEMM tile idle, and their weight
// gradient is one GEMM whose k is every output position of the batch (576,000 for
// conv1 at batch 1000) over a 6 x 25 result: one tile, one SM, 1.4 ms on an H200.
// Here each output, each input-gradient element and each slice of a weight's sum
// gets a thread of its own.
//
// Layouts as cpu::conv2d_*: x [n][c_in][h][w], w [c_out][c_in/groups][kh][kw],
// y [n][c_out][h_out][w_out], all contiguous.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/base/host_device.h"
#include "kernels/base/window.h"

namespace ember::cuda::direct {

// Whether the direct kernels should run for this shape: few output channels per
// group, where the GEMM path wastes its tiles. They are correct for every shape.
inline bool suits(const Conv2dShape& s) { return s.groups > 0 && s.c_out / s.groups <= 16; }

// A kernel extent: fixed at compile time when E > 0 (the tap loops unroll), else read
// from the shape.
template <int E>
EMBER_HOST_DEVICE int64_t extent(int64_t runtime) {
  return E > 0 ? E : runtime;
}

// y[i] without the bias, i = ((b*c_out + co)*h_out + oy)*w_out + ox: the sum over the
// group's input channels and the kernel's taps that land inside the image.
template <class A, int KH, int KW, class T, class Cvt>
EMBER_HOST_DEVICE A forward_at(const Conv2dShape& s, int64_t i, const T* x, const T* w, Cvt cvt) {
  const int64_t kh = extent<KH>(s.kh), kw = extent<KW>(s.kw);
  const int64_t ox = i % s.w_out, oy = i / s.w_out % s.h_out;
  const int64_t co = i / (s.w_out * s.h_out) % s.c_out, b = i / (s.w_out * s.h_out * s.c_out);
  const int64_t cig = s.c_in / s.groups, ci0 = co / (s.c_out / s.groups) * cig;
  const int64_t iy0 = oy * s.stride_h - s.pad_h, ix0 = ox * s.stride_w - s.pad_w;
  A sum = 0;
  for (int64_t cl = 0; cl < cig; ++cl) {
    const T* xc = x + (b * s.c_in + ci0 + cl) * s.h * s.w;
    const T* wc = w + (co * cig + cl) * kh * kw;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = iy0 + ky * s.dil_h;
      if (iy < 0 || iy >= s.h) continue;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int64_t ix = ix0 + kx * s.dil_w;
        if (ix >= 0 && ix < s.w) sum += cvt(xc[iy * s.w + ix]) * cvt(wc[ky * kw + kx]);
      }
    }
  }
  return sum;
}

// grad_x[i], i = ((b*c_in + ci)*h + iy)*w + ix: the sum of grad_y * w over the outputs
// whose taps read this input, iy = oy*stride - pad + ky*dil for an integer oy in range.
template <class A, int KH, int KW, class T, class Cvt>
EMBER_HOST_DEVICE A input_grad_at(const Conv2dShape& s, int64_t i, const T* gy, const T* w, Cvt cvt) {
  const int64_t kh = extent<KH>(s.kh), kw = extent<KW>(s.kw);
  const int64_t ix = i % s.w, iy = i / s.w % s.h;
  const int64_t ci = i / (s.w * s.h) % s.c_in, b = i / (s.w * s.h * s.c_in);
  const int64_t cig = s.c_in / s.groups, cog = s.c_out / s.groups;
  const int64_t co0 = ci / cig * cog, cl = ci % cig, P = s.h_out * s.w_out;
  const T* gyb = gy + (b * s.c_out + co0) * P;  // grad_y[b][co0]
  const T* wb = w + (co0 * cig + cl) * kh * kw;   // w[co0][cl]
  A sum = 0;
  // The taps' validity (one division each) does not depend on co: decided once per
  // tap, then the group's output channels are summed.
  for (int64_t ky = 0; ky < kh; ++ky) {
    const int64_t ty = iy + s.pad_h - ky * s.dil_h;
    if (ty < 0) continue;
    const int64_t oy = ty / s.stride_h;
    if (oy * s.stride_h != ty || oy >= s.h_out) continue;
    for (int64_t kx = 0; kx < kw; ++kx) {
      const int64_t tx = ix + s.pad_w - kx * s.dil_w;
      if (tx < 0) continue;
      const int64_t ox = tx / s.stride_w;
      if (ox * s.stride_w != tx || ox >= s.w_out) continue;
      for (int64_t c = 0; c < cog; ++c)
        sum += cvt(gyb[c * P + oy * s.w_out + ox]) * cvt(wb[c * cig * kh * kw + ky * kw + kx]);
    }
  }
  return sum;
}

// ---------------------------------------------------------------- weight gradient
//
// grad_w[co][cl][ky][kx] is a sum over every output position (image, oy, ox) of the
// batch. Two launches, no atomics, so the result has the same bits every run:
//  1. `rows * parts` threads. A row is one kernel row of one weight slice, (co, cl, ky)
//     and up to kRowTaps consecutive kx (one row of taps shares its grad_y load), or,
//     when the bias gradient is asked for, one output channel. Thread (row, part) sums
//     the positions part, part + parts, part + 2*parts, ...: neighbouring threads of a
//     warp read neighbouring positions. It writes one partial per tap to
//     ws[slot * parts + part], slot = the tap's index in grad_w (the bias after).
//  2. One warp per slot: lane l sums parts l, l + 32, ... in order, then a fixed
//     shuffle tree adds the 32 lane sums.

// Taps of one kernel row that one thread keeps in registers.
inline constexpr int kRowTaps = 8;
// Fewest positions per thread (unless the batch has fewer): the partials and their
// merge stay small beside the sums themselves.
inline constexpr int64_t kMinTerms = 32;

struct WeightGradPlan {
  int64_t chunks = 0;       // pieces of kRowTaps taps per kernel row: ceil(kw / kRowTaps)
  int64_t weight_rows = 0;  // c_out * c_in/groups * kh * chunks
  int64_t rows = 0;         // weight_rows, plus c_out bias rows when the bias gradient is asked for
  int64_t taps = 0;         // elements of grad_w: the first slots
  int64_t slots = 0;        // taps, plus c_out when the bias gradient is asked for
  int64_t positions = 0;    // n * h_out * w_out: the terms of every sum
  int64_t parts = 1;        // threads per row
};

// parts is chosen so that weight_rows * parts is about `threads_wanted` (a few waves of
// the GPU), with at least kMinTerms positions per thread; the bias rows do not count,
// so grad_w has the same bits whether or not grad_b is asked for. positions must be
// positive.
inline WeightGradPlan weight_grad_plan(const Conv2dShape& s, bool bias, int64_t threads_wanted) {
  WeightGradPlan pl;
  const int64_t cig = s.c_in / s.groups;
  pl.chunks = (s.kw + kRowTaps - 1) / kRowTaps;
  pl.weight_rows = s.c_out * cig * s.kh * pl.chunks;
  pl.rows = pl.weight_rows + (bias ? s.c_out : 0);
  pl.taps = s.c_out * cig * s.kh * s.kw;
  pl.slots = pl.taps + (bias ? s.c_out : 0);
  pl.positions = s.n * s.h_out * s.w_out;
  const int64_t split_rows = std::max<int64_t>(pl.weight_rows > 0 ? pl.weight_rows : pl.rows, 1);
  const int64_t wanted = (threads_wanted + split_rows - 1) / split_rows;
  pl.parts = std::clamp<int64_t>(wanted, 1, std::max<int64_t>(1, pl.positions / kMinTerms));
  return pl;
}

// An output position (b, oy, ox) stepped forward by a fixed stride of positions
// without a division per step: the stride is split once into images, rows and
// columns, and each step carries like a mixed-radix counter.
struct PositionWalk {
  int64_t b, oy, ox;
  int64_t db, doy, dox;

  EMBER_HOST_DEVICE PositionWalk(const Conv2dShape& s, int64_t start, int64_t step) {
    const int64_t P = s.h_out * s.w_out;
    b = start / P, oy = start % P / s.w_out, ox = start % s.w_out;
    db = step / P, doy = step % P / s.w_out, dox = step % s.w_out;
  }
  EMBER_HOST_DEVICE void advance(const Conv2dShape& s) {
    ox += dox;
    oy += doy;
    b += db;
    if (ox >= s.w_out) ox -= s.w_out, ++oy;
    if (oy >= s.h_out) oy -= s.h_out, ++b;
  }
};

// Stage 1 for thread t (row t / parts, part t % parts): see above.
template <class A, class T, class Cvt>
EMBER_HOST_DEVICE void weight_grad_partial(const Conv2dShape& s, const WeightGradPlan& pl, int64_t t,
                                           const T* gy, const T* x, A* ws, Cvt cvt) {
  const int64_t row = t / pl.parts, part = t % pl.parts, P = s.h_out * s.w_out;
  PositionWalk at(s, part, pl.parts);
  if (row >= pl.weight_rows) {  // a bias row
    const int64_t co = row - pl.weight_rows;
    A sum = 0;
    for (int64_t j = part; j < pl.positions; j += pl.parts, at.advance(s))
      sum += cvt(gy[(at.b * s.c_out + co) * P + at.oy * s.w_out + at.ox]);
    ws[(pl.taps + co) * pl.parts + part] = sum;
    return;
  }
  const int64_t cig = s.c_in / s.groups, cog = s.c_out / s.groups;
  const int64_t chunk = row % pl.chunks, ky = row / pl.chunks % s.kh;
  const int64_t cl = row / (pl.chunks * s.kh) % cig, co = row / (pl.chunks * s.kh * cig);
  const int64_t ci = co / cog * cig + cl, kx0 = chunk * kRowTaps;
  const int64_t count = std::min<int64_t>(kRowTaps, s.kw - kx0);
  A acc[kRowTaps] = {};
  for (int64_t j = part; j < pl.positions; j += pl.parts, at.advance(s)) {
    const int64_t iy = at.oy * s.stride_h - s.pad_h + ky * s.dil_h;
    if (iy < 0 || iy >= s.h) continue;
    const A g = cvt(gy[(at.b * s.c_out + co) * P + at.oy * s.w_out + at.ox]);
    const T* xr = x + ((at.b * s.c_in + ci) * s.h + iy) * s.w;
    const int64_t ix0 = at.ox * s.stride_w - s.pad_w + kx0 * s.dil_w;
    for (int k = 0; k < kRowTaps; ++k) {
      const int64_t ix = ix0 + k * s.dil_w;
      if (k < count && ix >= 0 && ix < s.w) acc[k] += g * cvt(xr[ix]);
    }
  }
  const int64_t slot0 = ((co * cig + cl) * s.kh + ky) * s.kw + kx0;
  for (int k = 0; k < kRowTaps; ++k)
    if (k < count) ws[(slot0 + k) * pl.parts + part] = acc[k];
}

// Stage 2, one lane's share of a slot: parts lane, lane + lanes, ... in order.
template <class A>
EMBER_HOST_DEVICE A weight_grad_lane_sum(const WeightGradPlan& pl, int64_t slot, int lane, int lanes,
                                         const A* ws) {
  A sum = 0;
  for (int64_t p = lane; p < pl.parts; p += lanes) sum += ws[slot * pl.parts + p];
  return sum;
}

}  // namespace ember::cuda::direct
