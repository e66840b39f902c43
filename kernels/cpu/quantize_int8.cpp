// Quantize/dequantize loops (see quantize_int8.h). Rounding uses the float "magic
// number" 1.5 * 2^23: adding it leaves no bits below the units, so the sum is
// rounded half-to-even by the FPU's default mode, and subtracting it gives
// round(v) as a float. Unlike std::nearbyint it vectorizes on baseline x86-64, and
// it is exact for |v| < 2^22, which the clamp before it guarantees.
#include "kernels/cpu/quantize_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

// The loops are compiled three times (AVX-512, AVX2, baseline x86-64) and the
// dynamic loader picks one for the running CPU (GCC's target_clones): the baseline
// build has only 16-byte vectors and no float min/max blend worth the name.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EMBER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EMBER_CLONES
#endif

inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

template <class Q>
__attribute__((always_inline)) inline void quantize_row(const float* x, int64_t cols, float inv_scale, int32_t zp,
                                                        int32_t qmin, int32_t qmax, Q* o) {
  // Clamp in the float domain first, so the rounding stays exact and NaN (which
  // fails both comparisons) lands on the low end instead of an undefined conversion.
  // (qmin, qmax and zp are 8-bit values, so these differences are small and exact.)
  const float lo = float(qmin - zp) - 1.0f, hi = float(qmax - zp) + 1.0f;
  for (int64_t j = 0; j < cols; ++j) {
    float v = x[j] * inv_scale;
    v = v >= lo ? v : lo;
    v = v <= hi ? v : hi;
    int32_t q = int32_t(round_half_even(v)) + zp;
    q = q < qmin ? qmin : q;
    q = q > qmax ? qmax : q;
    o[j] = Q(q);
  }
}

EMBER_CLONES void quantize_row_u8(const float* x, int64_t cols, float inv_scale, int32_t zp, int32_t qmin,
                                  int32_t qmax, uint8_t* o) {
  quantize_row(x, cols, inv_scale, zp, qmin, qmax, o);
}

EMBER_CLONES void quantize_row_s8(const float* x, int64_t cols, float inv_scale, int32_t zp, int32_t qmin,
                                  int32_t qmax, int8_t* o) {
  quantize_row(x, cols, inv_scale, zp, qmin, qmax, o);
}

// One thread's min/max over x[0, n), 16 lanes at a time in a GCC/Clang vector type
// (lowered to whatever width the clone has). x * 0 is 0 for finite x and NaN for inf
// or NaN, so one sum per lane tells whether all values are finite.
EMBER_CLONES MinMax min_max_serial(const float* x, int64_t n) {
  using V = float __attribute__((vector_size(64)));
  constexpr int L = 16;
  V mn = V{} + x[0], mx = mn, poison = V{};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    poison += v * 0.0f;
  }
  MinMax r{x[0], x[0], true};
  float p = 0;
  for (int l = 0; l < L; ++l) {
    r.min = mn[l] < r.min ? mn[l] : r.min;
    r.max = mx[l] > r.max ? mx[l] : r.max;
    p += poison[l];
  }
  for (; i < n; ++i) {
    r.min = x[i] < r.min ? x[i] : r.min;
    r.max = x[i] > r.max ? x[i] : r.max;
    p += x[i] * 0.0f;
  }
  r.finite = p == 0.0f;
  return r;
}

}  // namespace

MinMax min_max(const float* x, int64_t n) {
  if (n <= 0) return {};
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks == 1 || omp_in_parallel()) return min_max_serial(x, n);
  std::vector<MinMax> part(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    part[size_t(c)] = min_max_serial(x + c * kChunk, std::min(kChunk, n - c * kChunk));
  MinMax r = part[0];
  for (const MinMax& p : part) {
    r.min = std::min(r.min, p.min);
    r.max = std::max(r.max, p.max);
    r.finite = r.finite && p.finite;
  }
  return r;
}

void quantize(const float* x, int64_t rows, int64_t cols, int64_t x_rs, float inv_scale, int32_t zero_point,
              int32_t qmin, int32_t qmax, DType out_dt, void* out, int64_t out_rs, int64_t padded_cols, int32_t pad) {
  if (out_dt != DType::Int8 && out_dt != DType::UInt8) return;  // the front-ends admit only these two
  const bool u8 = out_dt == DType::UInt8;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelGrain && rows > 1 && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_rs;
    if (u8) {
      uint8_t* o = static_cast<uint8_t*>(out) + r * out_rs;
      quantize_row_u8(xr, cols, inv_scale, zero_point, qmin, qmax, o);
      for (int64_t j = cols; j < padded_cols; ++j) o[j] = uint8_t(pad);
    } else {
      int8_t* o = static_cast<int8_t*>(out) + r * out_rs;
      quantize_row_s8(xr, cols, inv_scale, zero_point, qmin, qmax, o);
      for (int64_t j = cols; j < padded_cols; ++j) o[j] = int8_t(pad);
    }
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
