// Scalar functors for the elementwise ops, one struct per row of ops.def.h, shared
// by the CPU kernels (kernels/cpu/elementwise.cpp) and the CUDA kernels
// (kernels/cuda/elementwise.cu): one definition, so the two backends cannot drift.
// They take and return the compute type (float for the half types), so one loop
// template serves every dtype. Under nvcc they are __host__ __device__; the math
// they call is CUDA's on the GPU and the C library's on the CPU, except float exp,
// tanh, erf, sigmoid and gelu, which use the branch-free functions of vec_math.h
// and vec_erf.h (the vector kernels of kernels/cpu/vmath.h run the same code), so floating results may differ between the devices by an ulp or two,
// never in meaning.
#pragma once

#include <cmath>
#include <type_traits>

#include "kernels/base/host_device.h"
#include "kernels/base/vec_erf.h"
#include "kernels/base/vec_math.h"

namespace ember::functors {

// The math the functors use, for float and double only (integer inputs of the
// floating ops are promoted by the front-end before a kernel sees them).
namespace math {
#if defined(__CUDA_ARCH__)
#define EMBER_MATH1(name, fname)                                          \
  template <class T> EMBER_HOST_DEVICE T name(T x) {                      \
    if constexpr (std::is_same_v<T, float>) return ::fname(x);            \
    else return ::name(x);                                                \
  }
#define EMBER_MATH2(name, fname)                                          \
  template <class T> EMBER_HOST_DEVICE T name(T x, T y) {                 \
    if constexpr (std::is_same_v<T, float>) return ::fname(x, y);         \
    else return ::name(x, y);                                             \
  }
#else
#define EMBER_MATH1(name, fname) \
  template <class T> EMBER_HOST_DEVICE T name(T x) { return std::name(x); }
#define EMBER_MATH2(name, fname) \
  template <class T> EMBER_HOST_DEVICE T name(T x, T y) { return std::name(x, y); }
#endif
EMBER_MATH1(log, logf)
EMBER_MATH1(log1p, log1pf)
EMBER_MATH1(sqrt, sqrtf)
EMBER_MATH1(sin, sinf)
EMBER_MATH1(cos, cosf)
EMBER_MATH1(fabs, fabsf)
EMBER_MATH2(pow, powf)
#undef EMBER_MATH1
#undef EMBER_MATH2

// exp, tanh, erf: the vectorizable versions (vec_math.h, vec_erf.h) for float on
// the CPU.
#if defined(__CUDA_ARCH__)
#define EMBER_MATH_FAST1(name, fname, fast)                               \
  template <class T> EMBER_HOST_DEVICE T name(T x) {                      \
    if constexpr (std::is_same_v<T, float>) return ::fname(x);            \
    else return ::name(x);                                                \
  }
#else
#define EMBER_MATH_FAST1(name, fname, fast)                               \
  template <class T> EMBER_HOST_DEVICE T name(T x) {                      \
    if constexpr (std::is_same_v<T, float>) return fast(x);               \
    else return std::name(x);                                             \
  }
#endif
EMBER_MATH_FAST1(exp, expf, exp_fast)
EMBER_MATH_FAST1(tanh, tanhf, tanh_fast)
EMBER_MATH_FAST1(erf, erff, erf_fast)
#undef EMBER_MATH_FAST1

// True where the float CPU path uses the vectorizable sigmoid and gelu.
template <class T> inline constexpr bool kFastFloat =
#if defined(__CUDA_ARCH__)
    false;
#else
    std::is_same_v<T, float>;
#endif
}  // namespace math

template <class T> EMBER_HOST_DEVICE bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// ---- unary (kind `same`: every dtype but bool; kind `floating`: float and double) ----
struct neg { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return static_cast<T>(-x); } };
struct abs {
  template <class T> EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::fabs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return static_cast<T>(x < 0 ? -x : x);
  }
};
// relu keeps NaN (as PyTorch's clamp_min does) and maps -0 to 0.
struct relu {
  template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : (is_nan(x) ? x : T(0)); }
};
struct exp { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::exp(x); } };
struct log { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::log(x); } };
struct sqrt { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::sqrt(x); } };
struct rsqrt { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / math::sqrt(x); } };
struct sin { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::sin(x); } };
struct cos { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::cos(x); } };
struct tanh { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::tanh(x); } };
struct sigmoid {
  template <class T> EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (math::kFastFloat<T>) return sigmoid_fast(x);
    else return T(1) / (T(1) + math::exp(-x));
  }
};
// The exact (erf) form, PyTorch's default approximate='none'. gelu_fast computes
// the same function, with erfc for negative x (no cancellation in its left tail).
struct gelu {
  template <class T> EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (math::kFastFloat<T>) return gelu_fast(x);
    else return T(0.5) * x * (T(1) + math::erf(x * T(0.70710678118654752440)));
  }
};
// PyTorch's defaults (beta 1, threshold 20): log(1 + e^x), and x itself above 20,
// where log1p(e^x) equals x to double precision.
struct softplus {
  template <class T> EMBER_HOST_DEVICE T operator()(T x) const {
    return x > T(20) ? x : math::log1p(math::exp(x));
  }
};
// The Gauss error function (erf_fast for float and libm's erf for double on the CPU,
// CUDA's erff/erf on the GPU).
struct erf { template <class T> EMBER_HOST_DEVICE T operator()(T x) const { return math::erf(x); } };

// ---- binary. On bool, add/mul/maximum/minimum act as or/and/or/and through the
// integer promotion and the cast back. ----
struct add { template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct sub { template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a - b); } };
struct mul { template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a * b); } };
struct div { template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const { return static_cast<T>(a / b); } };

// Integer powers by squaring; a negative exponent (signed types only) gives 1/a^|b|
// truncated toward zero (only 1 and -1 survive), which is what PyTorch computes.
struct pow {
  template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return math::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == T(-1)) return (b % 2 == 0) ? 1 : T(-1);
          return 0;
        }
      }
      T result = 1, base = a;
      for (auto e = b; e > 0; e /= 2) {
        if (e & 1) result = static_cast<T>(result * base);
        base = static_cast<T>(base * base);
      }
      return result;
    }
  }
};
// maximum/minimum propagate NaN, as PyTorch's do.
struct maximum {
  template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
  }
};
struct minimum {
  template <class T> EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
  }
};
struct eq { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a == b; } };
struct ne { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a != b; } };
struct lt { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a < b; } };
struct le { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a <= b; } };
struct gt { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a > b; } };
struct ge { template <class T> EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a >= b; } };

}  // namespace ember::functors
