// The geometry of sliding-window ops (convolution and pooling, NCHW), shared by the
// CPU and CUDA kernels: the shape structs, PyTorch's output-size rules, the sizes a
// convolution derives from its shape, and the clipped bounds of a pooling window.
#pragma once

#include <cstdint>

namespace ember {

// x [n, c_in, h, w], weight [c_out, c_in/groups, kh, kw], bias [c_out] (or null),
// y [n, c_out, h_out, w_out], all contiguous. c_in and c_out are multiples of
// groups; strides and dilations are >= 1, paddings >= 0; h_out and w_out are what
// conv2d_output_size gives (the front-end computes and checks them).
struct Conv2dShape {
  int64_t n = 0, c_in = 0, h = 0, w = 0;
  int64_t c_out = 0, kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  int64_t h_out = 0, w_out = 0;
};

// floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1; zero or less means the padded
// input is smaller than the dilated kernel.
constexpr int64_t conv2d_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                     int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// Fills h_out and w_out of s from the other fields.
inline Conv2dShape& conv2d_set_output_size(Conv2dShape& s) {
  s.h_out = conv2d_output_size(s.h, s.kh, s.stride_h, s.pad_h, s.dil_h);
  s.w_out = conv2d_output_size(s.w, s.kw, s.stride_w, s.pad_w, s.dil_w);
  return s;
}

// Sizes one convolution derives from its shape. Per group, the forward pass is the
// GEMM y[cog, P] = W[cog, K] . col[K, P]; CK is K over all groups (the rows of one
// image's full im2col matrix).
struct Conv2dDims {
  int64_t P;             // output pixels per channel: h_out * w_out
  int64_t G, cig, cog;   // groups, input and output channels per group
  int64_t K, CK;         // taps per output channel (one group), and over all groups
  int64_t x_img, y_img;  // elements of one image of x and of y

  constexpr explicit Conv2dDims(const Conv2dShape& s)
      : P(s.h_out * s.w_out),
        G(s.groups),
        cig(s.c_in / s.groups),
        cog(s.c_out / s.groups),
        K(s.c_in / s.groups * s.kh * s.kw),
        CK(s.c_in * s.kh * s.kw),
        x_img(s.c_in * s.h * s.w),
        y_img(s.c_out * s.h_out * s.w_out) {}
};

// x [n, c, h, w] and y [n, c, h_out, w_out], contiguous. Padding is implicit: max
// pooling never selects it, average pooling counts it toward the divisor only when
// count_include_pad. Dilation applies to max pooling only (average pooling requires
// dil_h == dil_w == 1, as PyTorch has no dilated average pooling).
struct Pool2dShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t h_out = 0, w_out = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  int64_t divisor_override = 0;   // average pooling only; 0 means none
};

// PyTorch's rule: floor (or, with ceil_mode, ceil) of
// (in + 2*pad - dil*(k-1) - 1) / stride, plus one; in ceil mode a last window that
// would start past the input and its left padding is dropped. The result may be
// zero or negative: the front-end rejects such shapes.
constexpr int64_t pool2d_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                     int64_t dil, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Division rounding toward minus infinity, as PyTorch's div_rtn.
  const int64_t q = num / stride - ((num % stride != 0) && (num < 0) ? 1 : 0);
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Fills h_out and w_out of s from the other fields.
inline Pool2dShape& pool2d_set_output_size(Pool2dShape& s) {
  s.h_out = pool2d_output_size(s.h, s.kh, s.stride_h, s.pad_h, s.dil_h, s.ceil_mode);
  s.w_out = pool2d_output_size(s.w, s.kw, s.stride_w, s.pad_w, s.dil_w, s.ceil_mode);
  return s;
}

// The windows below are computed the same way on both backends, from any geometry G
// with Pool2dShape's field names (the CUDA kernels keep them in a narrower index
// type Idx when the shape allows). constexpr, so device code may call them too.

// The window of max-pooling output (oy, ox), clipped to the input: rows y0, y0 + dil_h,
// ... below y1, likewise for columns. The first row (column) is the first tap of the
// dilated window that lies inside the input; the window may be empty.
template <class Idx>
struct MaxWindow {
  Idx y0, y1, x0, x1;
};

template <class Idx, class G>
constexpr MaxWindow<Idx> max_window(const G& g, Idx oy, Idx ox) {
  MaxWindow<Idx> m;
  m.y0 = oy * g.stride_h - g.pad_h;
  m.x0 = ox * g.stride_w - g.pad_w;
  const Idx y_end = m.y0 + (g.kh - 1) * g.dil_h + 1, x_end = m.x0 + (g.kw - 1) * g.dil_w + 1;
  m.y1 = y_end < g.h ? y_end : g.h;
  m.x1 = x_end < g.w ? x_end : g.w;
  if (m.y0 < 0) m.y0 += (-m.y0 + g.dil_h - 1) / g.dil_h * g.dil_h;
  if (m.x0 < 0) m.x0 += (-m.x0 + g.dil_w - 1) / g.dil_w * g.dil_w;
  return m;
}

// The window of average-pooling output (oy, ox) (undilated): its bounds clipped to
// the input, which the sum runs over, and its divisor: divisor_override when set,
// else the window clipped to the padded input (count_include_pad) or to the input.
template <class Idx>
struct AvgWindow {
  Idx y0, y1, x0, x1;
  int64_t divisor;
  constexpr bool empty() const { return y0 >= y1 || x0 >= x1; }
};

template <class Idx, class G>
constexpr AvgWindow<Idx> avg_window(const G& g, Idx oy, Idx ox) {
  AvgWindow<Idx> a;
  a.y0 = oy * g.stride_h - g.pad_h;
  a.x0 = ox * g.stride_w - g.pad_w;
  a.y1 = a.y0 + g.kh < g.h + g.pad_h ? a.y0 + g.kh : g.h + g.pad_h;
  a.x1 = a.x0 + g.kw < g.w + g.pad_w ? a.x0 + g.kw : g.w + g.pad_w;
  const int64_t padded = int64_t(a.y1 - a.y0) * int64_t(a.x1 - a.x0);
  a.y0 = a.y0 > 0 ? a.y0 : Idx(0);
  a.x0 = a.x0 > 0 ? a.x0 : Idx(0);
  a.y1 = a.y1 < g.h ? a.y1 : g.h;
  a.x1 = a.x1 < g.w ? a.x1 : g.w;
  a.divisor = g.divisor_override != 0 ? g.divisor_override
              : g.count_include_pad   ? padded
                                      : int64_t(a.y1 - a.y0) * int64_t(a.x1 - a.x0);
  return a;
}

}  // namespace ember
