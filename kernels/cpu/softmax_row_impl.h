// The float32 softmax row, written once and included by each softmax_row_<isa>.cpp
// inside its instruction-set region. Everything sits in an anonymous namespace (see
// isa.h).
#pragma once

namespace ember::cpu::softmax_detail {
namespace {

// One float32 row. Max and sum run in 16 independent lanes so the loops vectorize
// (a single running sum would be a dependency chain the compiler must keep in
// order), for the vector width of the includer's instruction set. kFma: the
// includer's set has fused multiply-add (exp_fast, vec_math.h).
template <bool kFma>
void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  constexpr int L = 16;
  float lane[L];
  for (int l = 0; l < L; ++l) lane[l] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
  float m = -std::numeric_limits<float>::infinity();
  for (int l = 0; l < L; ++l) m = lane[l] > m ? lane[l] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  if (m == -std::numeric_limits<float>::infinity()) m = 0;  // an all -inf row: exp gives 0s, 0/0 gives NaN as in PyTorch
  for (int l = 0; l < L; ++l) lane[l] = 0;
  for (i = 0; i + L <= n; i += L)
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

}  // namespace
}  // namespace ember::cpu::softmax_detail
