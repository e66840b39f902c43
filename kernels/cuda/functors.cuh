// Device functors for the elementwise ops: one struct per op, with the same name and
// the same semantics as kernels/cpu/functors.h (integer pow by squaring, NaN-keeping
// relu/maximum/minimum, the erf form of gelu, wrapping narrow integers). They take
// and return the compute type (float for the half types), so one kernel template
// serves every dtype. Floating-point results may differ from the CPU's by an ulp or
// two (CUDA's libm and the CPU's are different code), never in meaning.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace ember::cuda::functors {

template <class T> __device__ __forceinline__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// One spelling per math function for float and double: CUDA's float overloads
// (expf, ...) and double ones (exp, ...). Only float and double reach these.
#define EMBER_CUDA_MATH1(name, fname)                                          \
  template <class T> __device__ __forceinline__ T name##_of(T x) {             \
    static_assert(std::is_floating_point_v<T>, #name " needs a floating type"); \
    if constexpr (std::is_same_v<T, float>) return ::fname(x);                  \
    else return ::name(x);                                                      \
  }
EMBER_CUDA_MATH1(exp, expf)
EMBER_CUDA_MATH1(log, logf)
EMBER_CUDA_MATH1(sqrt, sqrtf)
EMBER_CUDA_MATH1(sin, sinf)
EMBER_CUDA_MATH1(cos, cosf)
EMBER_CUDA_MATH1(tanh, tanhf)
EMBER_CUDA_MATH1(erf, erff)
EMBER_CUDA_MATH1(fabs, fabsf)
#undef EMBER_CUDA_MATH1

// Unary ops. neg/abs/relu take every non-bool dtype; the others take only floating
// compute types (the front-end promotes integer inputs to float32 first).
struct neg { template <class T> __device__ T operator()(T x) const { return static_cast<T>(-x); } };
struct abs {
  template <class T> __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return fabs_of(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return static_cast<T>(x < 0 ? -x : x);
  }
};
// relu keeps NaN (as PyTorch's clamp_min does) and maps -0 to 0.
struct relu {
  template <class T> __device__ T operator()(T x) const { return x > T(0) ? x : (is_nan(x) ? x : T(0)); }
};
struct exp { template <class T> __device__ T operator()(T x) const { return exp_of(x); } };
struct log { template <class T> __device__ T operator()(T x) const { return log_of(x); } };
struct sqrt { template <class T> __device__ T operator()(T x) const { return sqrt_of(x); } };
struct rsqrt { template <class T> __device__ T operator()(T x) const { return T(1) / sqrt_of(x); } };
struct sin { template <class T> __device__ T operator()(T x) const { return sin_of(x); } };
struct cos { template <class T> __device__ T operator()(T x) const { return cos_of(x); } };
struct tanh { template <class T> __device__ T operator()(T x) const { return tanh_of(x); } };
struct sigmoid { template <class T> __device__ T operator()(T x) const { return T(1) / (T(1) + exp_of(-x)); } };
// The exact (erf) form, PyTorch's default approximate='none'.
struct gelu {
  template <class T> __device__ T operator()(T x) const {
    return T(0.5) * x * (T(1) + erf_of(x * T(0.70710678118654752440)));
  }
};

// Binary ops. On bool, add/mul/maximum/minimum act as or/and/or/and through the
// integer promotion and the cast back, exactly as on the CPU.
struct add { template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct sub { template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a - b); } };
struct mul { template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a * b); } };
struct div { template <class T> __device__ T operator()(T a, T b) const { return static_cast<T>(a / b); } };

// Integer powers by squaring; a negative exponent gives 1/b^|e| truncated toward
// zero (only 1 and -1 survive), which is what PyTorch computes for tensors.
struct pow {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, float>) {
      return ::powf(a, b);
    } else if constexpr (std::is_same_v<T, double>) {
      return ::pow(a, b);
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
  template <class T> __device__ T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
  }
};
struct minimum {
  template <class T> __device__ T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
  }
};
struct eq { template <class T> __device__ bool operator()(T a, T b) const { return a == b; } };
struct ne { template <class T> __device__ bool operator()(T a, T b) const { return a != b; } };
struct lt { template <class T> __device__ bool operator()(T a, T b) const { return a < b; } };
struct le { template <class T> __device__ bool operator()(T a, T b) const { return a <= b; } };
struct gt { template <class T> __device__ bool operator()(T a, T b) const { return a > b; } };
struct ge { template <class T> __device__ bool operator()(T a, T b) const { return a >= b; } };

}  // namespace ember::cuda::functors
