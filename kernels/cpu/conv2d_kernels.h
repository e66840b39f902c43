// What conv2d.cpp (threads, scratch, the weight gradient's fixed summation order)
// shares with the two ways a convolution is computed: the im2col path of any stride
// (conv2d_im2col.cpp) and the stride-1 direct kernels, one file per instruction set
// (conv2d_direct_<isa>.cpp over conv2d_direct_impl.h). Not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/base/window.h"
#include "kernels/cpu/team_rates.h"

namespace ember::cpu::conv2d_detail {

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }

// The stride-1 geometry: the input plane padded to Hv x Wv (a copy is made only when
// there is padding), the Pv virtual positions that hold outputs, and off[k] for the
// taps of one group. Output pixel (oy, ox) sits at virtual position oy*Wv + ox, and
// every position p' < Pv plus any off[k] stays inside the plane, because
// h_out + dil_h*(kh-1) == Hv and likewise for the width.
struct Direct {
  int64_t Hv = 0, Wv = 0, plane = 0, Pv = 0;
  bool padded = false;
  std::vector<int64_t> off;

  Direct() = default;
  Direct(const Conv2dShape& s, const Conv2dDims& d)
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
  }
};

// The packed weight's block width for cog channels per group: the largest of 32,
// 16 and 8 that divides cog, else cog. The layout is [G][cog/bw][K][bw]: each
// block's weights are one contiguous stream (a tile of channels reads its own
// block, not a slice of every tap's row of the group), and it does not depend on
// the instruction-set level, whose lane tiles of NR = 8, 16 or 32 channels each
// fall inside one block (NR divides cog, so it divides bw).
constexpr int64_t pack_block(int64_t cog) {
  return cog % 32 == 0 ? 32 : cog % 16 == 0 ? 16 : cog % 8 == 0 ? 8 : cog;
}

// Everything one pass needs, for the kernels of either path.
template <class T>
struct Args {
  const Conv2dShape* s;
  const Conv2dDims* d;
  const Direct* v;  // stride-1 geometry; unused by the im2col path
  const T* x;       // forward, weight gradient
  const T* w;       // forward, input gradient; see w_block
  const T* bias;    // forward (nullable)
  const T* gy;      // gradients
  T* out;           // y or grad_x; with relu_pool, the pooled y [n][c_out][h_out/2][w_out/2]
  // Forward of the direct kernels only: ReLU and 2x2 max pooling applied to each
  // image's output before it is stored (relu_pool_impl.h); window (nullable)
  // receives each pooled value's position in its window.
  bool relu_pool = false;
  uint8_t* window = nullptr;
  // With relu_pool, float only: each output rounded to bfloat16 before ReLU and
  // pooling (autocast's bfloat16 block, tensor/conv_relu_pool.cpp).
  bool round_bf16 = false;
  // Gradients of the direct kernels only: when set, gy is the pooled gradient of the
  // fused forward ([n][c_out][h_out/2][w_out/2]) and these its window bytes; the
  // kernels spread it back (ReLU's mask, each window's position) as they read it,
  // so the convolution's full-size output gradient is never stored.
  const uint8_t* gy_window = nullptr;
  // Forward of the direct kernels only: 0 when w is laid out [G][cog][K] (ONNX's
  // and PyTorch's layout), else w is packed (pack_lane_weights) and this is its
  // block width, pack_block of the whole layer's cog. The grid tiles broadcast
  // single weights, so they read either layout through strides, and a caller that
  // keeps the packed copy alone needs no unpacking. A channel share's w starts at
  // the packed block that holds its first channel, w_lead channels before it.
  int64_t w_block = 0, w_lead = 0;
  // Forward of the direct kernels only, not with relu_pool: the weight packed
  // (pack_lane_weights, in blocks of pack_block(cog) channels), which selects the
  // channel-lane tiles (conv2d_lanes_impl.h). Set only where Kernels::lane_fits
  // holds.
  const T* w_lanes = nullptr;
  bool lane_relu = false;  // with w_lanes: ReLU applied as the tiles store y
  // With w_lanes: only output rows [lane_oy0, lane_oy1) of each image (-1: to the
  // last), so that the threads can share one image's rows.
  int64_t lane_oy0 = 0, lane_oy1 = -1;
};

// One path's kernels for one dtype. Each runs single-threaded over images [lo, hi)
// with `ws`, a workspace of the matching *_scratch elements, of its own.
template <class T>
struct Kernels {
  void (*forward)(const Args<T>&, int64_t lo, int64_t hi, T* ws);
  void (*backward_input)(const Args<T>&, int64_t lo, int64_t hi, T* ws);
  // Sums images [lo, hi) into pw (and pb, nullable) for weight units [u0, u1) only.
  void (*backward_weight)(const Args<T>&, int64_t lo, int64_t hi, T* ws, T* pw, T* pb, int64_t u0,
                          int64_t u1);
  int64_t (*forward_scratch)(const Args<T>&);
  int64_t (*backward_input_scratch)(const Args<T>&);
  int64_t (*backward_weight_scratch)(const Args<T>&);
  // How many independent parts the weight gradient of one image range can be split
  // into (each dW element belongs to one part and is summed the same way whatever
  // the split): the stride-1 kernels' channel tiles; 1 for the im2col path, whose
  // im2col every part would have to repeat.
  int64_t (*backward_weight_units)(const Args<T>&);
  // The channel-lane forward (direct kernels, float32; null and 0 elsewhere): whether
  // a shape suits it, the channels of one tile (a group's must be a multiple), and
  // the packing of its weight into Args::w_lanes.
  bool (*lane_fits)(const Conv2dShape&, const Conv2dDims&) = nullptr;
  int64_t lane_channels = 0;
  void (*pack_lanes)(const Conv2dDims&, const T* w, T* wl) = nullptr;
};

// The im2col path (conv2d_im2col.cpp), float and double.
template <class T>
const Kernels<T>& im2col_kernels();

// The fused ReLU + 2x2 max-pool epilogue and its backward (relu_pool_impl.h), for
// any convolution's output: planes [planes][h_out][w_out] read with the given
// strides, pooled values and window bytes contiguous [planes][h_out/2][w_out/2].
template <class T>
struct ReluPool {
  void (*forward_planes)(const T* conv, int64_t planes, int64_t plane_stride, int64_t row_stride, int64_t h_out,
                         int64_t w_out, T* y, uint8_t* window, bool round_bf16);
  void (*backward_planes)(const T* gy, const uint8_t* window, int64_t planes, int64_t h_out, int64_t w_out,
                          T* grad_conv);
};

// The stride-1 kernels compiled for one instruction set (the avx512 set borrows the
// avx2 set's float64 entries: conv2d_direct_avx512.cpp says why).
struct DirectKernels {
  const char* name;
  Kernels<float> f32;
  Kernels<double> f64;
  ReluPool<float> relu_pool_f32;
  ReluPool<double> relu_pool_f64;
};

// The stride-1 kernels on bfloat16 values (bits, as uint16_t) with float32 sums, for
// the avx512_bf16 level (conv2d_direct_bf16.cpp); the Kernels fields of the same
// names, with float32 scratch and results.
struct DirectBf16Kernels {
  const char* name;
  void (*forward)(const Args<uint16_t>&, int64_t lo, int64_t hi, float* ws);
  void (*backward_input)(const Args<uint16_t>&, int64_t lo, int64_t hi, float* ws);
  void (*backward_weight)(const Args<uint16_t>&, int64_t lo, int64_t hi, float* ws, float* pw, float* pb,
                          int64_t u0, int64_t u1);
  int64_t (*forward_scratch)(const Args<uint16_t>&);
  int64_t (*backward_input_scratch)(const Args<uint16_t>&);
  int64_t (*backward_weight_scratch)(const Args<uint16_t>&);
  int64_t (*backward_weight_units)(const Args<uint16_t>&);
};

// nullptr when this build cannot emit that instruction set.
const DirectBf16Kernels* direct_kernels_bf16();
const DirectKernels* direct_kernels_avx512();
const DirectKernels* direct_kernels_avx2();
const DirectKernels* direct_kernels_generic();

// The thread rates that size the forward's and the input gradient's image ranges
// (team_rates.h), one for every convolution in the process.
TeamRates& conv2d_team_rates();

}  // namespace ember::cpu::conv2d_detail
