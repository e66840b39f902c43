// The loops of the integer convolution (see conv_int8.h). Each splits its work over
// the thread team when there is enough of it.
#include "kernels/cpu/conv_int8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/base/parallel.h"

namespace ember::cpu {

namespace {
// Pixels (or positions) per block: the 64-byte runs read from each channel and
// the runs written per pixel both stay in L1.
constexpr int64_t kBlock = 64;
}  // namespace

void conv_int8_channels_last(int64_t n, int64_t c, int64_t hw, const uint8_t* x, uint8_t flip, uint8_t* out) {
  const int64_t per_image = (hw + kBlock - 1) / kBlock;
  parallel_rows(n * per_image, n * c * hw >= kParallelGrain, [&](int64_t b) {
    const int64_t i = b / per_image, lo = (b % per_image) * kBlock, hi = std::min(hw, lo + kBlock);
    const uint8_t* xi = x + i * c * hw;
    uint8_t* oi = out + i * c * hw;
    for (int64_t ch = 0; ch < c; ++ch) {
      const uint8_t* src = xi + ch * hw;
      for (int64_t p = lo; p < hi; ++p) oi[p * c + ch] = uint8_t(src[p] ^ flip);
    }
  });
}

namespace {

// Copies of a few bytes, the usual length of a run (one pixel's channels, or a
// window's width of them): fixed-size moves, overlapping for lengths between the
// powers of two, in place of a library call per run.
inline void copy_bytes(uint8_t* d, const uint8_t* s, int64_t n) {
  if (n > 16) {
    std::memcpy(d, s, size_t(n));
  } else if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  }
}

inline void fill_bytes(uint8_t* d, uint8_t v, int64_t n) {
  if (n > 16) std::memset(d, v, size_t(n));
  else
    for (int64_t i = 0; i < n; ++i) d[i] = v;
}

}  // namespace

void conv_int8_rows(const ConvInt8Shape& s, const uint8_t* x, int64_t x_channels, int64_t c0, uint8_t pad,
                    int64_t q0, int64_t q1, uint8_t* rows, int64_t ldr, int32_t* row_sums) {
  const int64_t C = s.channels, k = s.kh * s.kw * C, P = s.h_out * s.w_out, run = s.kw * C;
  // With one group and no dilation across the width, a window row is one run of
  // kw pixels, clipped at the image's sides.
  const bool whole_rows = s.dil_w == 1 && C == x_channels;
  const int64_t image_bytes = s.h * s.w * x_channels;
  const int64_t blocks = (q1 - q0 + kBlock - 1) / kBlock;
  parallel_rows(blocks, (q1 - q0) * k >= kParallelGrain, [&](int64_t b) {
    const int64_t lo = q0 + b * kBlock, hi = std::min(q1, lo + kBlock);
    // Where position lo is; the loop below steps through the next ones.
    int64_t image = lo / P, p = lo % P, oy = p / s.w_out, ox = p % s.w_out;
    for (int64_t q = lo; q < hi; ++q) {
      const uint8_t* img = x + image * image_bytes + c0;
      uint8_t* dst = rows + (q - q0) * ldr;
      const int64_t ix0 = ox * s.stride_w - s.pad_left;
      for (int64_t ky = 0; ky < s.kh; ++ky) {
        const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dil_h;
        uint8_t* out = dst + ky * run;
        if (iy < 0 || iy >= s.h) {
          fill_bytes(out, pad, run);
          continue;
        }
        const uint8_t* line = img + iy * s.w * x_channels;
        if (whole_rows) {
          const int64_t first = std::clamp<int64_t>(-ix0, 0, s.kw), last = std::clamp<int64_t>(s.w - ix0, first, s.kw);
          fill_bytes(out, pad, first * C);
          if (last > first) copy_bytes(out + first * C, line + (ix0 + first) * C, (last - first) * C);
          fill_bytes(out + last * C, pad, (s.kw - last) * C);
          continue;
        }
        for (int64_t kx = 0; kx < s.kw; ++kx, out += C) {
          const int64_t ix = ix0 + kx * s.dil_w;
          if (ix < 0 || ix >= s.w) fill_bytes(out, pad, C);
          else copy_bytes(out, line + ix * x_channels, C);
        }
      }
      for (int64_t t = k; t < ldr; ++t) dst[t] = 0;
      if (row_sums) {
        int32_t sum = 0;
        for (int64_t t = 0; t < k; ++t) sum += dst[t];
        row_sums[q - q0] = sum;
      }
      if (++ox == s.w_out) {
        ox = 0;
        if (++oy == s.h_out) oy = 0, ++image;
      }
    }
  });
}

void conv_int8_store(const ConvInt8Store& st, int64_t q0, int64_t q1, const int32_t* c, int32_t* out) {
  // Blocks of at most kBlock positions that never cross an image, transposed
  // channel by channel.
  struct Span {
    int64_t lo, hi;
  };
  std::vector<Span> spans;
  for (int64_t lo = q0; lo < q1;) {
    const int64_t hi = std::min({q1, lo + kBlock, (lo / st.positions + 1) * st.positions});
    spans.push_back({lo, hi});
    lo = hi;
  }
  // Unsigned arithmetic: the wrap of int32 sums without signed overflow.
  const uint32_t ux = uint32_t(st.zx), uk = uint32_t(st.k);
  const int64_t n = st.n;
  parallel_rows(int64_t(spans.size()), (q1 - q0) * n >= kParallelGrain, [&](int64_t b) {
    const Span sp = spans[size_t(b)];
    const int64_t image = sp.lo / st.positions, p0 = sp.lo % st.positions;
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t zj = uint32_t(st.zw[j]);
      const uint32_t fixed = (st.bias ? uint32_t(st.bias[j]) : 0u) - ux * uint32_t(st.col_sums[j]) + uk * ux * zj;
      int32_t* o = out + image * st.image_stride + j * st.positions + p0;
      const int32_t* cj = c + (sp.lo - q0) * n + j;
      const int64_t len = sp.hi - sp.lo;
      if (st.row_sums && zj != 0) {
        const int32_t* rs = st.row_sums + (sp.lo - q0);
        for (int64_t t = 0; t < len; ++t) o[t] = int32_t(uint32_t(cj[t * n]) - zj * uint32_t(rs[t]) + fixed);
      } else {
        for (int64_t t = 0; t < len; ++t) o[t] = int32_t(uint32_t(cj[t * n]) + fixed);
      }
    }
  });
}

}  // namespace ember::cpu
