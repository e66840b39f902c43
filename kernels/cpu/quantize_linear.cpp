// QuantizeLinear and requantization (see quantize_linear.h). Each run of elements
// that share a parameter is one tight loop with the parameter in registers
// (QuantizeLinear's is quantize_int8's division loop, compiled per instruction
// set; requantization's is vectorized here on the baseline set): the rounding is the
// add-and-subtract of 1.5 * 2^23 (ties to even in the default rounding mode, exact
// once the value is clamped to the small code range), not a libm call per element.
#include "kernels/cpu/quantize_linear.h"

#include <algorithm>
#include <type_traits>

#include "kernels/base/parallel.h"
#include "kernels/cpu/quantize_int8.h"

namespace ember::cpu {

namespace {

inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

// out[i] = saturate(round(value(i)) + zp) over one run sharing zp. Clamping in float
// first keeps the conversion to int defined for any value (NaN fails both
// comparisons and becomes the low end).
template <class Q, class V>
inline void code_run(int64_t begin, int64_t end, int32_t zp, Q* __restrict out, V value) {
  constexpr int32_t qmin = std::is_signed_v<Q> ? -128 : 0, qmax = std::is_signed_v<Q> ? 127 : 255;
  const float lo = float(qmin - zp), hi = float(qmax - zp);
  for (int64_t i = begin; i < end; ++i) {
    float v = value(i);
    v = v >= lo ? v : lo;
    v = v <= hi ? v : hi;
    int32_t q = int32_t(round_half_even(v)) + zp;  // the caller keeps zp in the code range
    q = q < qmin ? qmin : q;
    q = q > qmax ? qmax : q;
    out[i] = Q(q);
  }
}

// Splits [0, n) into chunks for the thread team and each chunk into runs of one
// parameter; run(begin, end, p) does one run.
template <class Run>
void for_each_run(int64_t n, ParamLayout params, Run run) {
  constexpr int64_t kChunk = 1 << 16;
  parallel_rows((n + kChunk - 1) / kChunk, n >= kParallelGrain, [&](int64_t c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    if (params.count == 1) return run(begin, end, int64_t(0));
    for (int64_t i = begin; i < end;) {
      const int64_t stop = std::min(end, (i / params.inner + 1) * params.inner);
      run(i, stop, params.of(i));
      i = stop;
    }
  });
}

template <class Q>
void quantize_typed(const float* __restrict x, int64_t n, const float* scale, const int32_t* zero_point,
                    ParamLayout params, Q* out) {
  constexpr int32_t qmin = std::is_signed_v<Q> ? -128 : 0, qmax = std::is_signed_v<Q> ? 127 : 255;
  constexpr DType dt = std::is_signed_v<Q> ? DType::Int8 : DType::UInt8;
  // The division is the cost: the run goes to quantize_int8's loop for this CPU's
  // vector width (AVX-512 where it has it).
  for_each_run(n, params, [&](int64_t begin, int64_t end, int64_t p) {
    quantize_divide(x + begin, end - begin, scale[p], zero_point[p], qmin, qmax, dt, out + begin);
  });
}

template <class Q>
void requantize_typed(const int32_t* __restrict acc, int64_t n, const float* multiplier, const int32_t* zero_point,
                      ParamLayout params, Q* out) {
  for_each_run(n, params, [&](int64_t begin, int64_t end, int64_t p) {
    const float m = multiplier[p];
    code_run(begin, end, zero_point[p], out, [=](int64_t i) { return float(acc[i]) * m; });
  });
}

}  // namespace

void quantize_linear(const float* x, int64_t n, const float* scale, const int32_t* zero_point, ParamLayout params,
                     DType out_dt, void* out) {
  if (out_dt == DType::Int8) quantize_typed(x, n, scale, zero_point, params, static_cast<int8_t*>(out));
  else quantize_typed(x, n, scale, zero_point, params, static_cast<uint8_t*>(out));
}

void requantize(const int32_t* acc, int64_t n, const float* multiplier, const int32_t* zero_point,
                ParamLayout params, DType out_dt, void* out) {
  if (out_dt == DType::Int8) requantize_typed(acc, n, multiplier, zero_point, params, static_cast<int8_t*>(out));
  else requantize_typed(acc, n, multiplier, zero_point, params, static_cast<uint8_t*>(out));
}

}  // namespace ember::cpu
