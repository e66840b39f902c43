// QuantizeLinear and requantization (see quantize_linear.h). Scalar loops: they
// serve ONNX models' quantize steps, which read each value once; the division is
// the cost and the compiler vectorizes the per-tensor case.
#include "kernels/cpu/quantize_linear.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/base/parallel.h"

namespace ember::cpu {

namespace {

// The code of v / s + zp: clamped in float first, so the conversion to int is
// defined for any v (NaN fails both comparisons and becomes the low end).
template <class Q>
inline Q code_of(float v, int32_t zp, int32_t qmin, int32_t qmax) {
  const float lo = float(qmin - zp), hi = float(qmax - zp);
  v = v >= lo ? v : lo;
  v = v <= hi ? v : hi;
  return Q(int32_t(std::nearbyint(v)) + zp);  // nearbyint: ties to even in the default rounding mode
}

template <class Q, class F>
void quantize_loop(int64_t n, const int32_t* zp, ParamLayout params, Q* out, F value) {
  constexpr int32_t qmin = std::is_signed_v<Q> ? -128 : 0, qmax = std::is_signed_v<Q> ? 127 : 255;
  constexpr int64_t kChunk = 1 << 16;
  parallel_rows((n + kChunk - 1) / kChunk, n >= kParallelGrain, [&](int64_t c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    if (params.count == 1) {
      for (int64_t i = begin; i < end; ++i) out[i] = code_of<Q>(value(i, 0), zp[0], qmin, qmax);
    } else {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t p = params.of(i);
        out[i] = code_of<Q>(value(i, p), zp[p], qmin, qmax);
      }
    }
  });
}

template <class F>
void dispatch(int64_t n, const int32_t* zp, ParamLayout params, DType out_dt, void* out, F value) {
  if (out_dt == DType::Int8) quantize_loop(n, zp, params, static_cast<int8_t*>(out), value);
  else quantize_loop(n, zp, params, static_cast<uint8_t*>(out), value);
}

}  // namespace

void quantize_linear(const float* x, int64_t n, const float* scale, const int32_t* zero_point, ParamLayout params,
                     DType out_dt, void* out) {
  dispatch(n, zero_point, params, out_dt, out, [&](int64_t i, int64_t p) { return x[i] / scale[p]; });
}

void requantize(const int32_t* acc, int64_t n, const float* multiplier, const int32_t* zero_point,
                ParamLayout params, DType out_dt, void* out) {
  dispatch(n, zero_point, params, out_dt, out, [&](int64_t i, int64_t p) { return float(acc[i]) * multiplier[p]; });
}

}  // namespace ember::cpu
