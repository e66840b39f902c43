// Scalar functors for the elementwise ops, one struct per op, named as in
// kernels/base/ops.def.h. They take and return the compute type (float for half
// types), so one loop template serves every dtype. The CUDA file uses the same names.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/vec_math.h"

namespace ember::functors {

template <class T> inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

struct neg { template <class T> T operator()(T x) const { return static_cast<T>(-x); } };
struct abs {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return static_cast<T>(x < 0 ? -x : x);
  }
};
// relu keeps NaN (as PyTorch's clamp_min does) and maps -0 to 0.
struct relu { template <class T> T operator()(T x) const { return x > T(0) ? x : (is_nan(x) ? x : T(0)); } };
// float32 exp and sigmoid use the vectorizable exp_fast (within 2 ulp).
struct exp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return cpu::exp_fast(x);
    else return std::exp(x);
  }
};
struct log { template <class T> T operator()(T x) const { return std::log(x); } };
struct sqrt { template <class T> T operator()(T x) const { return std::sqrt(x); } };
struct rsqrt { template <class T> T operator()(T x) const { return T(1) / std::sqrt(x); } };
struct sin { template <class T> T operator()(T x) const { return std::sin(x); } };
struct cos { template <class T> T operator()(T x) const { return std::cos(x); } };
struct tanh { template <class T> T operator()(T x) const { return std::tanh(x); } };
struct sigmoid { template <class T> T operator()(T x) const { return T(1) / (T(1) + exp{}(-x)); } };
// The exact (erf) form, PyTorch's default approximate='none'.
struct gelu {
  template <class T> T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
};

struct add { template <class T> T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct sub { template <class T> T operator()(T a, T b) const { return static_cast<T>(a - b); } };
struct mul { template <class T> T operator()(T a, T b) const { return static_cast<T>(a * b); } };
struct div { template <class T> T operator()(T a, T b) const { return static_cast<T>(a / b); } };

// Integer powers by squaring; a negative exponent gives 1/b^|e| truncated toward
// zero (only 1 and -1 survive), which is what PyTorch computes for tensors.
struct pow {
  template <class T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == T(-1)) return (b % 2 == 0) ? 1 : T(-1);
        return 0;
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
  template <class T> T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
  }
};
struct minimum {
  template <class T> T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
  }
};
struct eq { template <class T> bool operator()(T a, T b) const { return a == b; } };
struct ne { template <class T> bool operator()(T a, T b) const { return a != b; } };
struct lt { template <class T> bool operator()(T a, T b) const { return a < b; } };
struct le { template <class T> bool operator()(T a, T b) const { return a <= b; } };
struct gt { template <class T> bool operator()(T a, T b) const { return a > b; } };
struct ge { template <class T> bool operator()(T a, T b) const { return a >= b; } };

}  // namespace ember::functors
