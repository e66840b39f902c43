// Adam's per-element update (PyTorch 1.13's single-tensor formula, in the compute
// type of the element), for optim.cpp and the per-instruction-set range loops of
// adam_<isa>.cpp. Each includer compiles it for its own target, so it lives in an
// anonymous namespace (isa.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/base/scalar.h"
#include "kernels/cpu/adam_kernels.h"

// No fused multiply-adds: every product and sum rounds on its own, as in PyTorch's
// update and in the baseline build, so the bits do not depend on whether the
// instruction set has FMA (the avx2 and avx512 targets do, and GCC and clang
// would otherwise contract b1 * m + (1 - b1) * g).
#if defined(__clang__)
#define EMBER_ADAM_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define EMBER_ADAM_NO_CONTRACT
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace ember::cpu::adam_detail {
namespace {

// One element's update. Inlined into two loops: with constant flags and __restrict
// arrays for float32 (adam_range), where it vectorizes, and with the flags read per
// element for the other dtypes, which stay scalar and small.
template <class T>
[[gnu::always_inline]] inline void adam_one(int64_t i, T* p, const T* g, T* m, T* v, T* vmax,
                                            const AdamScalars<acc_t<T>>& c, bool decoupled, bool amsgrad) {
  EMBER_ADAM_NO_CONTRACT
  using A = acc_t<T>;
  A pi = static_cast<A>(p[i]), gi = static_cast<A>(g[i]);
  if (decoupled) pi *= c.decay;
  else gi += c.wd * pi;
  const A mi = c.b1 * static_cast<A>(m[i]) + c.one_minus_b1 * gi;
  const A vi = c.b2 * static_cast<A>(v[i]) + c.one_minus_b2 * gi * gi;
  m[i] = static_cast<T>(mi);
  v[i] = static_cast<T>(vi);
  A vs = vi;
  if (amsgrad) {
    const A old = static_cast<A>(vmax[i]);
    vs = old < vi ? vi : old;  // std::max(old, vi): old when vi is NaN
    vmax[i] = static_cast<T>(vs);
  }
  const A denom = std::sqrt(vs) / c.sqrt_bc2 + c.eps;
  p[i] = static_cast<T>(pi - c.step_size * mi / denom);
}

// float32 elements [lo, hi). The flags are template parameters and the arrays
// __restrict, so the loop has no branch and the compiler vectorizes it (divps,
// sqrtps; the project's -fno-math-errno lets std::sqrt be one): the scalar loop
// spent 3.2 ns an element in its two divisions and square root, about 100 us per
// step of the seed network's 33k parameters. Vector division and square root round
// as the scalar ones do, so the bits are the same at every width.
template <bool kDecoupled, bool kAmsgrad>
void adam_range(int64_t lo, int64_t hi, float* __restrict p, const float* __restrict g, float* __restrict m,
                float* __restrict v, float* __restrict vmax, const AdamScalars<float>& c) {
  EMBER_ADAM_NO_CONTRACT
  for (int64_t i = lo; i < hi; ++i) adam_one(i, p, g, m, v, vmax, c, kDecoupled, kAmsgrad);
}

// The table entries of one instruction set.
[[maybe_unused]] constexpr AdamKernels adam_table(const char* name) {
  return {name, {{adam_range<false, false>, adam_range<false, true>}, {adam_range<true, false>, adam_range<true, true>}}};
}

}  // namespace
}  // namespace ember::cpu::adam_detail

#if !defined(__clang__)
#pragma GCC pop_options
#endif
#undef EMBER_ADAM_NO_CONTRACT
