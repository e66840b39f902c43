// The quantize and min/max loops, written once and included by each
// quantize_int8_<isa>.cpp inside its instruction-set region: the baseline has only
// 16-byte vectors and no float min/max blend worth the name. Everything sits in an
// anonymous namespace (see isa.h).
#pragma once

namespace ember::cpu::quantize_detail {
namespace {

inline float round_half_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

// Divide false: v = x * inv_scale (Ember's scheme; with int32 x, the
// requantization of integer sums); true: v = x / scale, ONNX's QuantizeLinear,
// which a multiply by 1 / scale can move across a rounding tie.
template <bool Divide, class X, class Q>
__attribute__((always_inline)) inline void quantize_row(const X* x, int64_t cols, float s, int32_t zp,
                                                        int32_t qmin, int32_t qmax, Q* o) {
  // Clamp in the float domain first, so the rounding stays exact and NaN (which
  // fails both comparisons) lands on the low end instead of an undefined conversion.
  // (qmin, qmax and zp are 8-bit values, so these differences are small and exact.)
  const float lo = float(qmin - zp) - 1.0f, hi = float(qmax - zp) + 1.0f;
  for (int64_t j = 0; j < cols; ++j) {
    float v = Divide ? float(x[j]) / s : float(x[j]) * s;
    v = v >= lo ? v : lo;
    v = v <= hi ? v : hi;
    int32_t q = int32_t(round_half_even(v)) + zp;
    q = q < qmin ? qmin : q;
    q = q > qmax ? qmax : q;
    o[j] = Q(q);
  }
}

void quantize_row_u8(const float* x, int64_t cols, float inv_scale, int32_t zp, int32_t qmin, int32_t qmax,
                     uint8_t* o) {
  quantize_row<false>(x, cols, inv_scale, zp, qmin, qmax, o);
}

void quantize_row_s8(const float* x, int64_t cols, float inv_scale, int32_t zp, int32_t qmin, int32_t qmax,
                     int8_t* o) {
  quantize_row<false>(x, cols, inv_scale, zp, qmin, qmax, o);
}

void divide_row_u8(const float* x, int64_t cols, float scale, int32_t zp, int32_t qmin, int32_t qmax, uint8_t* o) {
  quantize_row<true>(x, cols, scale, zp, qmin, qmax, o);
}

void divide_row_s8(const float* x, int64_t cols, float scale, int32_t zp, int32_t qmin, int32_t qmax, int8_t* o) {
  quantize_row<true>(x, cols, scale, zp, qmin, qmax, o);
}

void requantize_row_u8(const int32_t* acc, int64_t cols, float multiplier, int32_t zp, int32_t qmin, int32_t qmax,
                       uint8_t* o) {
  quantize_row<false>(acc, cols, multiplier, zp, qmin, qmax, o);
}

void requantize_row_s8(const int32_t* acc, int64_t cols, float multiplier, int32_t zp, int32_t qmin, int32_t qmax,
                       int8_t* o) {
  quantize_row<false>(acc, cols, multiplier, zp, qmin, qmax, o);
}

// One thread's min/max over x[0, n), 16 lanes at a time in a GCC/Clang vector type
// (lowered to whatever width the clone has). x * 0 is 0 for finite x and NaN for inf
// or NaN, so one sum per lane tells whether all values are finite.
MinMax min_max_serial(const float* x, int64_t n) {
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
}  // namespace ember::cpu::quantize_detail
