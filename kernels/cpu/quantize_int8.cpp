// Quantize/dequantize loops (see quantize_int8.h). Rounding uses the float "magic
// number" 1.5 * 2^23: adding it leaves no bits below the units, so the sum is
// rounded half-to-even by the FPU's default mode, and subtracting it gives
// round(v) as a float. Unlike std::nearbyint it vectorizes on baseline x86-64, and
// it is exact for |v| < 2^22, which the clamp before it guarantees.
#include "kernels/cpu/quantize_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

template <class Q>
void quantize_rows(const float* x, int64_t rows, int64_t cols, int64_t x_rs, float inv_scale, int32_t zp,
                   int32_t qmin, int32_t qmax, Q* out, int64_t out_rs, int64_t padded_cols, int32_t pad) {
  // Clamp in the float domain first, so the rounding stays exact and NaN (which
  // fails both comparisons) lands on the low end instead of an undefined conversion.
  // (qmin, qmax and zp are 8-bit values, so these differences are small and exact.)
  const float lo = float(qmin - zp) - 1.0f, hi = float(qmax - zp) + 1.0f;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_rs;
    Q* o = out + r * out_rs;
    for (int64_t j = 0; j < cols; ++j) {
      float v = xr[j] * inv_scale;
      v = v >= lo ? v : lo;
      v = v <= hi ? v : hi;
      int32_t q = int32_t(round_half_even(v)) + zp;
      q = q < qmin ? qmin : q;
      q = q > qmax ? qmax : q;
      o[j] = Q(q);
    }
    for (int64_t j = cols; j < padded_cols; ++j) o[j] = Q(pad);
  }
}

}  // namespace

MinMax min_max(const float* x, int64_t n) {
  MinMax r;
  if (n <= 0) return r;
  float mn = x[0], mx = x[0], poison = 0;
  // x * 0 is 0 for finite x and NaN for inf or NaN, so one sum tells whether all are finite.
#pragma omp parallel for schedule(static) reduction(min : mn) reduction(max : mx) reduction(+ : poison) \
    if (n >= 4 * kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
    poison += x[i] * 0.0f;
  }
  r.min = mn;
  r.max = mx;
  r.finite = poison == 0.0f;
  return r;
}

void quantize(const float* x, int64_t rows, int64_t cols, int64_t x_rs, float inv_scale, int32_t zero_point,
              int32_t qmin, int32_t qmax, DType out_dt, void* out, int64_t out_rs, int64_t padded_cols, int32_t pad) {
  switch (out_dt) {
    case DType::Int8:
      return quantize_rows(x, rows, cols, x_rs, inv_scale, zero_point, qmin, qmax, static_cast<int8_t*>(out), out_rs,
                           padded_cols, pad);
    case DType::UInt8:
      return quantize_rows(x, rows, cols, x_rs, inv_scale, zero_point, qmin, qmax, static_cast<uint8_t*>(out), out_rs,
                           padded_cols, pad);
    default:
      return;  // the front-end admits only the three above
  }
}

void dequantize(const void* q, DType q_dt, int64_t n, float scale, int32_t zero_point, float* out) {
  auto run = [&](const auto* p) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
    for (int64_t i = 0; i < n; ++i) out[i] = scale * float(int32_t(p[i]) - zero_point);
  };
  switch (q_dt) {
    case DType::Int8: return run(static_cast<const int8_t*>(q));
    case DType::UInt8: return run(static_cast<const uint8_t*>(q));
    default: return;
  }
}

}  // namespace ember::cpu
