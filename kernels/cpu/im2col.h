// im2col and its adjoint col2im for the convolutions that run as GEMMs (see
// conv2d.cpp for the formulas): the float path (conv2d_im2col.cpp) and the bfloat16
// one (conv2d_bf16.cpp). Plain templates over the element type: the GEMMs do the
// arithmetic, these only move values.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv2d_kernels.h"

namespace ember::cpu::conv2d_detail {

// Output columns [lo, hi) of tap column kx whose input column ox*stride - pad +
// kx*dil lies inside [0, w); the others read padding.
struct Span {
  int64_t lo, hi;
};
inline Span valid_columns(const Conv2dShape& s, int64_t kx) {
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

}  // namespace ember::cpu::conv2d_detail
