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

// One float32 row. The sum runs in 16 independent lanes so the loop vectorizes (a
// single running sum would be a dependency chain the compiler must keep in
// order). kFma: the includer's set has fused multiply-add (exp_fast, vec_math.h).
template <bool kFma, int kVec>
void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  constexpr int L = 16;
  float m = row_max<kVec>(x, n);
  if (m == -std::numeric_limits<float>::infinity()) m = 0;
  float lane[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      const float e = exp_fast<kFma>(x[i + l] - m);
      if (!log) y[i + l] = e;
      lane[l] += e;
    }
  float s = 0;
  for (int l = 0; l < L; ++l) s += lane[l];
  for (; i < n; ++i) {
    const float e = exp_fast<kFma>(x[i] - m);
    if (!log) y[i] = e;
    s += e;
  }
  if (log) {
    const float shift = m + std::log(s);
    for (i = 0; i < n; ++i) y[i] = x[i] - shift;
  } else {
    const float inv = 1.0f / s;
    for (i = 0; i < n; ++i) y[i] *= inv;
  }
}

// Many rows of n values, n too short for row_f32's vector loops (which would run
// exp one lane at a time in their tails). A block of rows is treated as one
// contiguous run instead: exp runs vectorized over the whole block. Each row's max
// and sum are chains of n dependent operations (4 cycles a link for an add), so
// they are taken kGroup rows at a time, kGroup chains side by side. y may be x.
template <bool kFma>
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
    for (int64_t i = 0; i < nr * n; ++i) e[i] = exp_fast<kFma>(e[i]);
    for (int64_t r = 0; r < nr; r += kGroup) {
      const int g_end = static_cast<int>(std::min<int64_t>(kGroup, nr - r));
      float s[kGroup] = {};
      for (int64_t k = 0; k < n; ++k)
        for (int g = 0; g < g_end; ++g) s[g] += e[(r + g) * n + k];
      for (int g = 0; g < g_end; ++g) sum[r + g] = s[g];
    }
    for (int64_t r = 0; r < nr; ++r) {
      if (log) {
        const float sh = shift[r] + std::log(sum[r]);
        for (int64_t k = 0; k < n; ++k) yb[r * n + k] = xb[r * n + k] - sh;
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
template <bool kFma>
void softmax_cols_f32(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, bool log) {
  float m[kColsMax], s[kColsMax];
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
    const float* xr = x + d * inner;
    float* yr = y + d * inner;
    for (int64_t i = 0; i < w; ++i) {
      const float e = exp_fast<kFma>(xr[i] - m[i]);
      if (!log) yr[i] = e;
      s[i] += e;
    }
  }
  if (log) {
    for (int64_t i = 0; i < w; ++i) m[i] += std::log(s[i]);
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < w; ++i) y[d * inner + i] = x[d * inner + i] - m[i];
  } else {
    for (int64_t i = 0; i < w; ++i) s[i] = 1.0f / s[i];
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < w; ++i) y[d * inner + i] *= s[i];
  }
}

template <bool kFma, int kVec>
constexpr SoftmaxRowKernels table(const char* name) {
  return {name, softmax_row_f32<kFma, kVec>, softmax_rows_f32<kFma>, softmax_cols_f32<kFma>};
}

}  // namespace
}  // namespace ember::cpu::softmax_detail
