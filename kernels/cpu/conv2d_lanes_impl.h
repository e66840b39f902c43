// The stride-1 forward with output channels in the vector lanes, included by
// conv2d_direct_impl.h (inside each instruction set's region) for float32.
//
// Why a second forward: the grid tiles (outer_tile) put positions in the lanes and
// read x in place, so they compute the grid's padding columns too: a 3x3 layer at
// 14x14 fills 16-wide rows, 224 positions for 196. With channels in the lanes a tile
// is a run of one output row's positions, each broadcast from x, times NV vectors of
// output channels loaded from the packed weight (pack_lane_weights: blocks of 32
// channels, [g][cog / 32][K][32], narrower where 32 does not divide cog): no
// position is computed that is not an output. It needs the packed weight (the
// caller's, packed once, or one pass per call, which conv2d.cpp makes only for
// batches large enough to pay for it) and cog a multiple of NV vectors, and its
// results leave the registers transposed (a channel's positions are one row of y).
//
// Each output's sum starts from its bias (or +0) and adds the taps in the order k of
// Direct::off, one fused multiply-add each (a multiply and an add on the baseline
// level), as outer_tile does: the two forwards give the same bits, except which NaN
// payload survives where two NaNs meet: one product with a NaN in both x and the
// weight, or, on the baseline level, two NaN inputs in one sum (the instruction's
// operand order decides, and the compiler orders the two tiles' operands
// differently).
#pragma once

// The weight W[g][co][k] of one call as wl[g][co / bw][k][co % bw] (bw =
// pack_block(cog)), the lane tiles' layout. Written in order, read across bw rows
// of W, whose lines stay in L1 while 16 taps use them (the other order, one
// scattered write each, left batch 11 of conv_block.onnx 3-7% slower).
template <class T>
void pack_lane_weights(const Conv2dDims& d, const T* w, T* wl) {
  const int64_t bw = pack_block(d.cog);
  for (int64_t c0 = 0; c0 < d.G * d.cog; c0 += bw) {  // blocks never straddle groups
    const T* src = w + c0 * d.K;
    T* dst = wl + c0 * d.K;
    for (int64_t k = 0; k < d.K; ++k)
      for (int64_t c = 0; c < bw; ++c) dst[k * bw + c] = src[c * d.K + k];
  }
}

// ROWS positions (x offsets 0 .. ROWS-1 from x) x NV vectors of channels (the
// packed weight's columns from wl, rows w_rs apart):
//   y[c * y_cs + i] = bias[c] (or +0) + sum_d x[off[d] + i] * wl[d * w_rs + c].
template <class T, int ROWS>
[[gnu::noinline]] void lane_tile(int64_t depth, const T* x, const int64_t* off, const T* wl, int64_t w_rs,
                                 const T* bias, T* y, int64_t y_cs, bool relu) {
  using S = Vec<T>;
  using V = typename S::V;
  constexpr int L = S::L, NV = Tiles<T>::NV;
  V acc[ROWS][NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) {
    const V b = bias ? S::load(bias + j * L) : V{};
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) acc[i][j] = b;
  }
  for (int64_t d = 0; d < depth; ++d) {
    const T* xd = x + off[d];
    V wv[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) wv[j] = S::load(wl + d * w_rs + j * L);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const V xi = xd[i] - V{};  // broadcast; x - (+0) is x, -0 included
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] += xi * wv[j];
    }
  }
  // Lane c of acc[i][j] is channel j*L + c at position i: through a buffer, each
  // channel's ROWS positions become one run of its plane.
  // With relu, functors::relu's bits: x > 0 or NaN kept, the rest (-0 too) +0.
  T buf[ROWS][NV * L];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      const V v = acc[i][j];
      S::store(buf[i] + j * L, relu ? (((v > 0) | (v != v)) ? v : V{}) : v);
    }
  if constexpr (kBytes == 64 && std::is_same_v<T, float>) {
    // AVX-512: each 16-channel column of the buffer transposed in registers
    // (transpose16_avx512.h, which the includer includes before this file: the
    // call is found by ordinary lookup there), 16 masked row stores, where the loop
    // below takes 16 * ROWS scalar loads and stores (kLaneRunMax's comment has the
    // timing of the two changes together).
    static_assert(ROWS <= L);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      transpose16x16_32bit(buf[0] + j * L, int64_t(sizeof(buf[0])), ROWS, y + j * L * y_cs, y_cs);
  } else {
    for (int c = 0; c < NV * L; ++c)
#pragma GCC unroll 16
      for (int i = 0; i < ROWS; ++i) y[c * y_cs + i] = buf[i][c];
  }
}

// The smallest and largest run a lane tile takes: a row of w_out positions is cut
// into cdiv(w_out, kLaneRunMax) runs as even as can be, each then at least
// kLaneRunMin long (w_out >= kLaneRunMin). Shorter rows stay on the grid tiles,
// where one panel spans several rows. float32 on AVX-512 runs up to 14 positions:
// 28 accumulators, 2 weight vectors and the broadcast fill 31 of its 32 registers
// (runs of the grid tiles' 12 cut a 14-wide row into two of 7, which streamed the
// weight tile twice per row). With the transposed store in lane_tile: 64 channels
// of 3x3 at 14x14, batch 32, one thread, 2454-2891 us (median 2526) -> 2313-2436
// (2418); runs of 14 alone measured within that noise. Elsewhere the grid tiles' MR.
template <class T>
constexpr int kLaneRunMax = kBytes == 64 && sizeof(T) == 4 ? 14 : Tiles<T>::MR;
template <class T>
constexpr int kLaneRunMin = (Tiles<T>::MR + 1) / 2;
static_assert((kLaneRunMax<float> + 1) / 2 >= kLaneRunMin<float>, "no run of a cut row is under kLaneRunMin");

// lane_tile for a run-time run length r in [kLaneRunMin, R]. forward_lanes' cut
// never makes a shorter run: with m = cdiv(w, R) runs, m >= 2 means
// w >= (m - 1) R + 1, so w / m >= (R + 1) / 2 >= kLaneRunMin; and m = 1 means the
// whole row, which lane_fits holds to at least kLaneRunMin.
template <class T, int R>
void lane_tile_rows(int64_t r, int64_t depth, const T* x, const int64_t* off, const T* wl, int64_t w_rs,
                    const T* bias, T* y, int64_t y_cs, bool relu) {
  if (r == R || R == kLaneRunMin<T>) return lane_tile<T, R>(depth, x, off, wl, w_rs, bias, y, y_cs, relu);
  if constexpr (R > kLaneRunMin<T>) lane_tile_rows<T, R - 1>(r, depth, x, off, wl, w_rs, bias, y, y_cs, relu);
}

// Whether a shape suits the lane tiles: whole channel tiles and rows long enough
// for a run. (Whether the batch pays for packing the weight is conv2d.cpp's call.)
// Any depth: the transposed store costs less than the grid's copy out of its rows
// even at 9 taps (64 channels of 3x3 over 1 input channel at 14x14, batch 100, 2
// threads: 228-247 us against 447-467 on the grid tiles; 3 input channels 392-450
// against 587-658; 16, 1204-1205 against 1634-1668).
template <class T>
bool lane_fits(const Conv2dShape& s, const Conv2dDims& d) {
  return d.cog % Tiles<T>::NR == 0 && s.w_out >= kLaneRunMin<T>;
}

// Forward of images [lo, hi) with the packed weight a.w_lanes (and ReLU when
// a.lane_relu): per group, per tile of NV vectors of channels, per output row of
// [a.lane_oy0, a.lane_oy1), its runs. A tile of packed weights (K x NV vectors) is
// read once per run from L2, x once per channel tile. The next image's x is
// prefetched a slice per row, so that its copy into the padded planes does not
// wait on memory.
template <class T>
void forward_lanes(const Args<T>& a, int64_t lo, int64_t hi, T* ws) {
  constexpr int64_t C = Tiles<T>::NR;  // channels per tile
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const Direct& v = *a.v;
  const int64_t runs = cdiv(s.w_out, kLaneRunMax<T>);
  const int64_t oy0 = a.lane_oy0, oy1 = a.lane_oy1 < 0 ? s.h_out : a.lane_oy1;
  const int64_t slices = std::max<int64_t>(d.G * (d.cog / C) * (oy1 - oy0), 1);
  const int64_t slice_lines = cdiv(cdiv(d.x_img, kLine), slices);
  for (int64_t i = lo; i < hi; ++i) {
    const T* xi = a.x + i * d.x_img;
    if (v.padded) {  // the rows the tiles read: a thread sharing one image pads its own
      pad_image_rows(s, v, xi, ws, oy0, std::min(v.Hv, oy1 + (s.kh - 1) * s.dil_h));
      xi = ws;
    }
    const T* next = i + 1 < hi ? a.x + (i + 1) * d.x_img : nullptr;
    int64_t line = 0;
    for (int64_t g = 0; g < d.G; ++g) {
      const T* xg = xi + g * d.cig * v.plane;
      const T* wg = a.w_lanes + g * d.K * d.cog;
      const int64_t bw = pack_block(d.cog);  // a multiple of C (lane_fits)
      for (int64_t c0 = 0; c0 < d.cog; c0 += C) {
        const T* bias = a.bias ? a.bias + g * d.cog + c0 : nullptr;
        T* yc = a.out + i * d.y_img + (g * d.cog + c0) * d.P;
        for (int64_t oy = oy0; oy < oy1; ++oy) {
          for (int64_t r = 0; r < runs; ++r) {
            const int64_t ox0 = s.w_out * r / runs, ox1 = s.w_out * (r + 1) / runs;
            lane_tile_rows<T, kLaneRunMax<T>>(ox1 - ox0, d.K, xg + oy * v.Wv + ox0, v.off.data(),
                                              wg + c0 / bw * bw * d.K + c0 % bw, bw, bias, yc + oy * s.w_out + ox0,
                                              d.P, a.lane_relu);
          }
          if (next)
            for (int64_t e = 0; e < slice_lines && line * kLine < d.x_img; ++e, ++line)
              __builtin_prefetch(next + line * kLine);
        }
      }
    }
  }
}
