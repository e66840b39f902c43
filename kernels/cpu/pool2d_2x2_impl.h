// The 2x2 stride-2 pooling loops, written once and included by each
// pool2d_2x2_<isa>.cpp inside its instruction-set region: output row oy reads input
// rows 2oy and 2oy+1, four loads and three selects per output with no clipping.
// Selects, not branches, so that the loops vectorize for the region's vector width.
// Everything sits in an anonymous namespace (see isa.h).
#pragma once

namespace ember::cpu::pool2d_detail {
namespace {

template <class T>
[[gnu::always_inline]] inline void max_plane_2x2(const Pool2dShape& s, const T* __restrict x,
                                                 T* __restrict y, int64_t* __restrict ind) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    const T* r0 = x + 2 * oy * s.w;
    const T* r1 = r0 + s.w;
    T* yr = y + oy * s.w_out;
    if (ind) {
      int64_t* ir = ind + oy * s.w_out;
      const int64_t base = 2 * oy * s.w, w = s.w;
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        T m = r0[2 * ox];
        int64_t k = base + 2 * ox;
        T v = r0[2 * ox + 1];
        bool c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + 2 * ox + 1 : k;
        v = r1[2 * ox];
        c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + w + 2 * ox : k;
        v = r1[2 * ox + 1];
        c = replaces(v, m);
        m = c ? v : m;
        k = c ? base + w + 2 * ox + 1 : k;
        yr[ox] = m;
        ir[ox] = k;
      }
    } else {
      for (int64_t ox = 0; ox < s.w_out; ++ox) {
        T m = r0[2 * ox];
        m = replaces(r0[2 * ox + 1], m) ? r0[2 * ox + 1] : m;
        m = replaces(r1[2 * ox], m) ? r1[2 * ox] : m;
        m = replaces(r1[2 * ox + 1], m) ? r1[2 * ox + 1] : m;
        yr[ox] = m;
      }
    }
  }
}

template <class T>
[[gnu::always_inline]] inline void avg_plane_2x2(const Pool2dShape& s, const T* __restrict x,
                                                 T* __restrict y) {
  for (int64_t oy = 0; oy < s.h_out; ++oy) {
    const T* r0 = x + 2 * oy * s.w;
    const T* r1 = r0 + s.w;
    T* yr = y + oy * s.w_out;
    for (int64_t ox = 0; ox < s.w_out; ++ox)
      yr[ox] = ((r0[2 * ox] + r0[2 * ox + 1]) + (r1[2 * ox] + r1[2 * ox + 1])) * T(0.25);
  }
}

// Planes [p0, p1).
template <class T>
void max_2x2(const Pool2dShape& s, const T* x, T* y, int64_t* ind, int64_t p0, int64_t p1) {
  const int64_t in = s.h * s.w, out = s.h_out * s.w_out;
  for (int64_t p = p0; p < p1; ++p) max_plane_2x2(s, x + p * in, y + p * out, ind ? ind + p * out : nullptr);
}

template <class T>
void avg_2x2(const Pool2dShape& s, const T* x, T* y, int64_t p0, int64_t p1) {
  const int64_t in = s.h * s.w, out = s.h_out * s.w_out;
  for (int64_t p = p0; p < p1; ++p) avg_plane_2x2(s, x + p * in, y + p * out);
}

}  // namespace
}  // namespace ember::cpu::pool2d_detail
