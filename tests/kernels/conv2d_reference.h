// The convolution's definition for kernel tests: a float64 loop over every
// (output, input channel, kernel tap) term, read forwards for y and backwards for
// grad_x, grad_w and grad_b, plus the shapes the CPU kernels are tested on. Shared
// by the CPU kernels' test (test_conv2d.cpp) and the CUDA direct convolution's
// arithmetic test (test_conv2d_direct_math.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/base/window.h"

namespace conv2d_ref {

using ember::Conv2dShape;

struct Case {
  const char* name;
  Conv2dShape s;
  bool bias;
};

inline Conv2dShape shape(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh,
                  int64_t kw, int64_t sh = 1, int64_t sw = 1, int64_t ph = 0, int64_t pw = 0,
                  int64_t dh = 1, int64_t dw = 1, int64_t groups = 1) {
  Conv2dShape s;
  s.n = n, s.c_in = c_in, s.h = h, s.w = w, s.c_out = c_out, s.kh = kh, s.kw = kw;
  s.stride_h = sh, s.stride_w = sw, s.pad_h = ph, s.pad_w = pw, s.dil_h = dh, s.dil_w = dw;
  s.groups = groups;
  return ember::conv2d_set_output_size(s);
}

inline std::vector<Case> cases() {
  return {
      {"3x3 on 5x5", shape(1, 1, 5, 5, 1, 3, 3), true},
      {"stride 2x1, pad 1x0, 3x2 kernel", shape(2, 3, 7, 9, 4, 3, 2, 2, 1, 1, 0), true},
      {"stride 2, pad 2", shape(1, 2, 9, 8, 3, 3, 3, 2, 2, 2, 2), false},
      {"dilation 2, pad 2x1", shape(1, 2, 8, 6, 3, 3, 3, 1, 1, 2, 1, 2, 2), true},
      {"groups 2, stride 1x2, pad 1x2, 2x3 kernel",
       shape(5, 4, 6, 5, 6, 2, 3, 1, 2, 1, 2, 1, 1, 2), true},
      {"groups 3, stride 2, pad 1, dilation 1x2",
       shape(2, 6, 9, 7, 9, 3, 3, 2, 2, 1, 1, 1, 2, 3), true},
      {"groups 3, stride 1, pad 2, dilation 2x1 (stride-1 kernels)",
       shape(3, 6, 8, 9, 9, 3, 2, 1, 1, 2, 2, 2, 1, 3), true},
      {"depthwise", shape(3, 4, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4), false},
      {"1x1", shape(3, 5, 4, 6, 7, 1, 1), true},
      {"1x1 grouped", shape(2, 6, 3, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2), true},
      {"1x1 stride 2", shape(2, 3, 5, 6, 2, 1, 1, 2, 2), true},
      {"1x1 padded", shape(1, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1), true},
      {"kernel as large as the padded input", shape(2, 2, 2, 3, 3, 4, 5, 1, 1, 1, 1), true},
      {"stride wider than kernel", shape(2, 3, 10, 11, 2, 2, 2, 3, 4), true},
      {"pad beyond dilated reach", shape(1, 1, 3, 4, 2, 2, 2, 2, 3, 2, 2, 2, 1), true},
      // Images smaller than one panel of outputs: a panel's reads reach several
      // images ahead, past the batch for all but the first (read from a copy).
      {"3x3 images, batch 4", shape(4, 1, 3, 3, 2, 2, 2), true},
      {"net conv1, batch 3", shape(3, 1, 28, 28, 6, 5, 5), true},
      {"net conv2, batch 5", shape(5, 6, 12, 12, 12, 5, 5), true},
      {"net conv2, batch 1", shape(1, 6, 12, 12, 12, 5, 5), true},
      // Several weight-gradient ranges (50 images or more each): partials summed in order.
      {"net conv2, batch 101", shape(101, 6, 12, 12, 12, 5, 5), true},
      // Outputs half a vector wide (8 float32 pixels on AVX-512, 4 on AVX2): the
      // forward tiles read two output rows per vector (row pairs), the last panel's
      // rows past h_out included, so reads run past the image (a copy), or into the
      // padding.
      {"row pairs: 8 wide, 5 rows, batch 3", shape(3, 2, 7, 10, 5, 3, 3), true},
      {"row pairs: 8 wide, 1 row", shape(1, 2, 3, 10, 3, 3, 3), false},
      {"row pairs: 8 wide, pad 2, dilation 2", shape(2, 3, 5, 8, 4, 3, 3, 1, 1, 2, 2, 2, 2), true},
      {"row pairs: 8 wide, groups 2, 2x3 kernel", shape(2, 4, 9, 10, 6, 2, 3, 1, 1, 0, 0, 1, 1, 2), true},
      {"row pairs: 8 wide, 1x1", shape(2, 3, 3, 8, 5, 1, 1), true},
      {"row pairs: 4 wide, 13 channels", shape(2, 3, 6, 6, 13, 3, 3), true},
      {"row pairs: 4 wide, 3 rows, pad 1", shape(3, 2, 3, 4, 3, 3, 3, 1, 1, 1, 1), true},
      // Channels in the vector lanes (conv2d_lanes_impl.h): 32 or 64 output channels
      // a group, batches of 1024 output positions or more. Rows cut
      // into runs: 14 wide is 7 + 7 on AVX-512 (4 + 5 + 5 on AVX2), 11 one run (5 + 6),
      // 6 the shortest run AVX-512 takes, 25 three runs (8 + 8 + 9).
      {"channel lanes: 3x3, pad 1, 14 wide, batch 12", shape(12, 8, 14, 14, 32, 3, 3, 1, 1, 1, 1), true},
      {"channel lanes: batch 6 of 14x14, just past the threshold", shape(6, 8, 14, 14, 32, 3, 3, 1, 1, 1, 1), false},
      {"channel lanes: groups 2, 11 wide", shape(16, 16, 13, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2), true},
      {"channel lanes: dilation 2, 6 wide", shape(60, 8, 10, 10, 32, 3, 3, 1, 1, 0, 0, 2, 2), true},
      {"channel lanes: 25 wide, 2x4 kernel", shape(4, 8, 24, 28, 32, 2, 4), false},
      {"channel lanes: one input channel (9 taps)", shape(8, 1, 14, 14, 32, 3, 3, 1, 1, 1, 1), true},
      {"stride 2, pad 1, batch 21 (im2col path)", shape(21, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1), true},
      // One image large enough for the team: on the stride-1 kernels the threads
      // share its 40 output channels (20 each); with stride 2 cpu::gemm takes the team.
      {"one image, output channels shared", shape(1, 8, 24, 24, 40, 3, 3, 1, 1, 1, 1), true},
      // 32 channels: two shares of 16 whatever the thread count (see kShareChannels).
      {"one image in row pairs, output channels shared", shape(1, 16, 18, 10, 32, 3, 3), true},
      {"one image, stride 2, the team inside the GEMM", shape(1, 8, 24, 24, 40, 3, 3, 2, 2, 1, 1), true},
  };
}

// Calls f(n, co, ci, tap, yi, xi) for every term w[co][ci % cig][tap] * x[xi] of
// every output y[yi]: the definition of the convolution, nothing precomputed.
inline void for_each_term(const Conv2dShape& s,
                   const std::function<void(int64_t co, int64_t wi, int64_t yi, int64_t xi)>& f) {
  const int64_t cig = s.c_in / s.groups, cog = s.c_out / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t co = 0; co < s.c_out; ++co)
      for (int64_t oy = 0; oy < s.h_out; ++oy)
        for (int64_t ox = 0; ox < s.w_out; ++ox)
          for (int64_t cl = 0; cl < cig; ++cl)
            for (int64_t ky = 0; ky < s.kh; ++ky)
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
                const int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dil_w;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                const int64_t ci = co / cog * cig + cl;
                f(co, ((co * cig + cl) * s.kh + ky) * s.kw + kx,
                  ((n * s.c_out + co) * s.h_out + oy) * s.w_out + ox,
                  ((n * s.c_in + ci) * s.h + iy) * s.w + ix);
              }
}

struct Sizes {
  int64_t x, w, y;
};
inline Sizes sizes(const Conv2dShape& s) {
  return {s.n * s.c_in * s.h * s.w, s.c_out * (s.c_in / s.groups) * s.kh * s.kw,
          s.n * s.c_out * s.h_out * s.w_out};
}

struct Reference {
  std::vector<double> y, gx, gw, gb;
};

inline Reference reference(const Conv2dShape& s, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>* b,
                    const std::vector<double>& gy) {
  const Sizes z = sizes(s);
  Reference r;
  r.y.assign(z.y, 0.0);
  r.gx.assign(z.x, 0.0);
  r.gw.assign(z.w, 0.0);
  r.gb.assign(s.c_out, 0.0);
  const int64_t plane = s.h_out * s.w_out;
  for (int64_t i = 0; i < z.y; ++i) {
    const int64_t co = i / plane % s.c_out;
    if (b) r.y[i] = (*b)[co];
    r.gb[co] += gy[i];
  }
  for_each_term(s, [&](int64_t, int64_t wi, int64_t yi, int64_t xi) {
    r.y[yi] += w[wi] * x[xi];
    r.gx[xi] += gy[yi] * w[wi];
    r.gw[wi] += gy[yi] * x[xi];
  });
  return r;
}

}  // namespace conv2d_ref
