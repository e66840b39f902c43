// The float32 softmax loops (softmax_row.h: one row, many short rows, columns),
// written once and included by each softmax_row_<isa>.cpp inside its
// instruction-set region. Everything sits in an anonymous namespace (see isa.h).
// An all -inf row (or column) takes m = 0: exp gives 0s, 0/0 gives NaN as in
// PyTorch.
#pragma once

namespace ember::cpu::softmax_detail {
namespace {

// kVec: the includer's vector width in bytes (64 AVX-512, 32 AVX2, 16 SSE2). The
// row max runs in K vectors of that width (GCC/Clang vector types): written over
// a plain lane array, the compare-and-select stayed one scalar vmaxss per element.
template <int kVec>
struct FloatVec {
  typedef float type __attribute__((vector_size(kVec)));
};

// The largest of x[0, n) that is not NaN (-inf when there is none).
template <int kVec>
float row_max(const float* x, int64_t n) {
  using V = typename FloatVec<kVec>::type;
  constexpr int W = kVec / 4, K = 4;
  V lane[K];
  for (int k = 0; k < K; ++k) lane[k] = V{} - std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + K * W <= n; i += K * W)
    for (int k = 0; k < K; ++k) {
      V v;
      std::memcpy(&v, x + i + k * W, sizeof v);
      lane[k] = v > lane[k] ? v : lane[k];
    }
  float m = -std::numeric_limits<float>::infinity();
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < W; ++l) m = lane[k][l] > m ? lane[k][l] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// One vector written with a streaming store (p aligned to kVec): the line goes to
// memory without being read into the cache first.
template <int kVec, class V>
inline void stream_store(float* p, V v) {
#if defined(__x86_64__)
  if constexpr (kVec == 64) _mm512_stream_ps(p, reinterpret_cast<__m512>(v));
  else if constexpr (kVec == 32) _mm256_stream_ps(p, reinterpret_cast<__m256>(v));
  else _mm_stream_ps(p, reinterpret_cast<__m128>(v));
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

// The exp of the softmax loops: exp_fast (vec_math.h) in flat loops the compiler
// vectorizes at the includer's width (a flat loop gets exp's constants hoisted out
// of it). An includer with a faster vector exp passes its own policy with the same
// two functions to table<> (softmax_row_avx512.cpp).
template <bool kFma>
struct ExpLoop {
  // e[i] = exp(x[i] - m) for i in [0, n); e may be x.
  static void shifted(const float* x, float m, float* e, int64_t n) {
    for (int64_t i = 0; i < n; ++i) e[i] = exp_fast<kFma>(x[i] - m);
  }
  // e[i] = exp(x[i] - m[i]) for i in [0, n).
  static void shifted_each(const float* x, const float* m, float* e, int64_t n) {
    for (int64_t i = 0; i < n; ++i) e[i] = exp_fast<kFma>(x[i] - m[i]);
  }
};

// The sum of e[0, n) in 4 vector accumulators (a single running sum would be a
// chain of dependent adds), added pairwise at the end.
template <int kVec>
float row_sum(const float* e, int64_t n) {
  using V = typename FloatVec<kVec>::type;
  constexpr int W = kVec / 4, K = 4;
  V acc[K] = {};
  int64_t i = 0;
  for (; i + K * W <= n; i += K * W)
    for (int k = 0; k < K; ++k) {
      V v;
      std::memcpy(&v, e + i + k * W, sizeof v);
      acc[k] += v;
    }
  const V t = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  float s = 0;
  for (int l = 0; l < W; ++l) s += t[l];
  for (; i < n; ++i) s += e[i];
  return s;
}

// y[i] = src[i] * a + b over [0, n), then + c when kShift2, with streaming stores
// when kStream (the first values up to a kVec boundary of y, and the last ones,
// plainly). log_softmax passes a = 1, b = -max, c = -log sum: (x - max) is exact
// near the max, where x - (max + log sum) would lose max's low bits (logits near 1e6
// lost 0.03, as PyTorch does not).
template <int kVec, bool kStream, bool kShift2>
void scale_shift(const float* src, float* y, int64_t n, float a, float b, float c) {
  using V = typename FloatVec<kVec>::type;
  constexpr int W = kVec / 4;
  const auto one = [&](float v) { return kShift2 ? (v * a + b) + c : v * a + b; };
  int64_t i = 0;
  if constexpr (kStream) {
    for (; i < n && reinterpret_cast<uintptr_t>(y + i) % kVec != 0; ++i) y[i] = one(src[i]);
    for (; i + W <= n; i += W) {
      V v;
      std::memcpy(&v, src + i, sizeof v);
      if constexpr (kShift2) stream_store<kVec>(y + i, (v * a + b) + c);
      else stream_store<kVec>(y + i, v * a + b);
    }
  }
  for (; i < n; ++i) y[i] = one(src[i]);
}

// Rows of float32 (RowFn in softmax_row.h). Per row: the max (from memory, or
// from cache when prefetched), exp into the stage a chunk at a time, its sum; each
// chunk also prefetches its share of the next row's lines and stores its share of
// the previous row (y = src * a + b: src is x for log_softmax, the exp values
// otherwise). Exp: ExpLoop or the includer's own.
template <class Exp, int kVec>
void softmax_row_f32(const float* x, float* y, int64_t rows, int64_t n, bool log, const RowOptions& opt) {
  constexpr int64_t kChunk = 256;  // 16 lines: shorter chunks measured slower
  const float* prev_src = nullptr;
  float* prev_y = nullptr;
  float prev_a = 0, prev_b = 0, prev_c = 0;
  const auto store = [&](int64_t c, int64_t cn) {
    if (log) {
      if (opt.stream) scale_shift<kVec, true, true>(prev_src + c, prev_y + c, cn, prev_a, prev_b, prev_c);
      else scale_shift<kVec, false, true>(prev_src + c, prev_y + c, cn, prev_a, prev_b, prev_c);
    } else {
      if (opt.stream) scale_shift<kVec, true, false>(prev_src + c, prev_y + c, cn, prev_a, prev_b, 0.0f);
      else scale_shift<kVec, false, false>(prev_src + c, prev_y + c, cn, prev_a, prev_b, 0.0f);
    }
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const bool last = r + 1 == rows;
    const char* next = static_cast<const char*>(last ? opt.after : xr + n);
    const int64_t size = last ? opt.after_size : int64_t(sizeof(float));  // bytes per value of next
    float* e = opt.stage + (r & 1) * n;
    float m = row_max<kVec>(xr, n);
    if (m == -std::numeric_limits<float>::infinity()) m = 0;
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t end = std::min(n, c + kChunk);
      if (next)  // the lines of the next row's values [c, end)
        for (int64_t l = c * size / 64, le = (end * size + 63) / 64; l < le; ++l) __builtin_prefetch(next + l * 64);
      Exp::shifted(xr + c, m, e + c, end - c);
      if (prev_src) store(c, end - c);
    }
    const float s = row_sum<kVec>(e, n);
    prev_src = log ? xr : e;
    prev_y = y + r * n;
    prev_a = log ? 1.0f : 1.0f / s;
    prev_b = log ? -m : 0.0f;
    prev_c = log ? -std::log(s) : 0.0f;
  }
  if (prev_src) store(0, n);
#if defined(__x86_64__)
  if (opt.stream) _mm_sfence();  // the streamed stores are visible before the caller goes on
#endif
}

// Many rows of n values, n too short for row_f32's vector loops (which would run
// exp one lane at a time in their tails). A block of rows is treated as one
// contiguous run instead: exp runs vectorized over the whole block. Each row's max
// and sum are chains of n dependent operations (4 cycles a link for an add), so
// they are taken kGroup rows at a time, kGroup chains side by side. y may be x.
template <class Exp>
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  constexpr int64_t kBlock = 2048;  // floats in the buffer: 8 KiB, in L1
  constexpr int kGroup = 8;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float e[kBlock], shift[kBlock], sum[kBlock];
  const int64_t block_rows = std::max<int64_t>(1, kBlock / n);
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t nr = std::min(block_rows, rows - r0);
    const float* xb = x + r0 * n;
    float* yb = y + r0 * n;
    // Row maxima, then e = x - max.
    for (int64_t r = 0; r < nr; r += kGroup) {
      const int g_end = static_cast<int>(std::min<int64_t>(kGroup, nr - r));
      float m[kGroup];
      for (int g = 0; g < kGroup; ++g) m[g] = kNegInf;
      for (int64_t k = 0; k < n; ++k)
        for (int g = 0; g < g_end; ++g) {
          const float v = xb[(r + g) * n + k];
          m[g] = v > m[g] ? v : m[g];
        }
      for (int g = 0; g < g_end; ++g) shift[r + g] = m[g] == kNegInf ? 0 : m[g];
    }
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t k = 0; k < n; ++k) e[r * n + k] = xb[r * n + k] - shift[r];
    Exp::shifted(e, 0.0f, e, nr * n);
    for (int64_t r = 0; r < nr; r += kGroup) {
      const int g_end = static_cast<int>(std::min<int64_t>(kGroup, nr - r));
      float s[kGroup] = {};
      for (int64_t k = 0; k < n; ++k)
        for (int g = 0; g < g_end; ++g) s[g] += e[(r + g) * n + k];
      for (int g = 0; g < g_end; ++g) sum[r + g] = s[g];
    }
    for (int64_t r = 0; r < nr; ++r) {
      if (log) {  // (x - max) - log sum: see scale_shift
        const float ls = std::log(sum[r]);
        for (int64_t k = 0; k < n; ++k) yb[r * n + k] = (xb[r * n + k] - shift[r]) - ls;
      } else {
        const float inv = 1.0f / sum[r];
        for (int64_t k = 0; k < n; ++k) yb[r * n + k] = e[r * n + k] * inv;
      }
    }
  }
}

// Softmax down w adjacent columns of a (dim, inner) block: every pass walks the
// rows in order and, along each row, w contiguous values, so the max, exp, sum and
// scaling all vectorize across columns.
template <class Exp>
void softmax_cols_f32(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, bool log) {
  float m[kColsMax], s[kColsMax], t[kColsMax];
  for (int64_t i = 0; i < w; ++i) m[i] = -std::numeric_limits<float>::infinity();
  for (int64_t d = 0; d < dim; ++d) {
    const float* xr = x + d * inner;
    for (int64_t i = 0; i < w; ++i) m[i] = xr[i] > m[i] ? xr[i] : m[i];
  }
  for (int64_t i = 0; i < w; ++i) {
    if (m[i] == -std::numeric_limits<float>::infinity()) m[i] = 0;
    s[i] = 0;
  }
  for (int64_t d = 0; d < dim; ++d) {
    // exp into y (a softmax's y holds it until scaled) or into a row of scratch.
    float* e = log ? t : y + d * inner;
    Exp::shifted_each(x + d * inner, m, e, w);
    for (int64_t i = 0; i < w; ++i) s[i] += e[i];
  }
  if (log) {
    for (int64_t i = 0; i < w; ++i) s[i] = std::log(s[i]);
    for (int64_t d = 0; d < dim; ++d)  // (x - max) - log sum: see scale_shift
      for (int64_t i = 0; i < w; ++i) y[d * inner + i] = (x[d * inner + i] - m[i]) - s[i];
  } else {
    for (int64_t i = 0; i < w; ++i) s[i] = 1.0f / s[i];
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < w; ++i) y[d * inner + i] *= s[i];
  }
}

template <class Exp, int kVec>
constexpr SoftmaxRowKernels table(const char* name) {
  return {name, softmax_row_f32<Exp, kVec>, softmax_rows_f32<Exp>, softmax_cols_f32<Exp>};
}

}  // namespace
}  // namespace ember::cpu::softmax_detail
