// Fused SGD and Adam steps (see optim.h). The formulas are PyTorch 1.13's
// single-tensor implementations, evaluated in the compute type of each element.
#include "kernels/cpu/optim.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {

void sgd_step(DType dt, int64_t n, void* param, const void* grad, void* momentum_buffer, const SgdParams& h) {
  dispatch_floating(dt, "sgd_step", "cpu", [&]<class T>() {
    using A = acc_t<T>;
    T* p = static_cast<T*>(param);
    const T* g = static_cast<const T*>(grad);
    T* buf = static_cast<T*>(momentum_buffer);
    const A lr = static_cast<A>(h.lr), mom = static_cast<A>(h.momentum), wd = static_cast<A>(h.weight_decay);
    const A damp = static_cast<A>(1 - h.dampening);
    parallel_rows(n, n >= kParallelGrain, [&](int64_t i) {
      A d = static_cast<A>(g[i]) + wd * static_cast<A>(p[i]);
      if (buf) {
        const A b = h.first_step ? d : mom * static_cast<A>(buf[i]) + damp * d;
        buf[i] = static_cast<T>(b);
        d = h.nesterov ? d + mom * b : b;
      }
      p[i] = static_cast<T>(static_cast<A>(p[i]) - lr * d);
    });
  });
}

namespace {

// Adam's hyperparameters in the compute type A, derived once per step.
template <class A>
struct AdamScalars {
  A step_size, sqrt_bc2, b1, b2, eps, wd, decay, one_minus_b1, one_minus_b2;
};

// One element's update. Inlined into two loops: with constant flags and __restrict
// arrays for float32 (adam_range), where it vectorizes, and with the flags read per
// element for the other dtypes, which stay scalar and small.
template <class T>
[[gnu::always_inline]] inline void adam_one(int64_t i, T* p, const T* g, T* m, T* v, T* vmax,
                                            const AdamScalars<acc_t<T>>& c, bool decoupled, bool amsgrad) {
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
// as the scalar ones do, so the bits are the same.
template <bool kDecoupled, bool kAmsgrad>
void adam_range(int64_t lo, int64_t hi, float* __restrict p, const float* __restrict g, float* __restrict m,
                float* __restrict v, float* __restrict vmax, const AdamScalars<float>& c) {
  for (int64_t i = lo; i < hi; ++i) adam_one(i, p, g, m, v, vmax, c, kDecoupled, kAmsgrad);
}

// Elements per parallel chunk: a team pays off from a few of them.
constexpr int64_t kAdamChunk = 1 << 14;

}  // namespace

void adam_step(DType dt, int64_t n, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
               void* max_exp_avg_sq, const AdamParams& h) {
  dispatch_floating(dt, "adam_step", "cpu", [&]<class T>() {
    using A = acc_t<T>;
    T* p = static_cast<T*>(param);
    const T* g = static_cast<const T*>(grad);
    T* m = static_cast<T*>(exp_avg);
    T* v = static_cast<T*>(exp_avg_sq);
    T* vmax = static_cast<T*>(max_exp_avg_sq);
    const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
    const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
    // 1 - beta computed in double and rounded once, as PyTorch passes it as an
    // alpha (rounding beta to float32 first is ~200 ulp off for beta2 = 0.999).
    const AdamScalars<A> c{static_cast<A>(h.lr / bc1),          static_cast<A>(std::sqrt(bc2)),
                           static_cast<A>(h.beta1),             static_cast<A>(h.beta2),
                           static_cast<A>(h.eps),               static_cast<A>(h.weight_decay),
                           static_cast<A>(1 - h.lr * h.weight_decay), static_cast<A>(1 - h.beta1),
                           static_cast<A>(1 - h.beta2)};
    const bool amsgrad = vmax != nullptr;
    if constexpr (std::is_same_v<T, float>) {
      auto run = [&]<bool kDecoupled, bool kAmsgrad>() {
        const int64_t chunks = (n + kAdamChunk - 1) / kAdamChunk;
        parallel_rows(chunks, n >= kParallelGrain, [&](int64_t k) {
          const int64_t lo = k * kAdamChunk, hi = std::min(n, lo + kAdamChunk);
          adam_range<kDecoupled, kAmsgrad>(lo, hi, p, g, m, v, vmax, c);
        });
      };
      if (h.decoupled) amsgrad ? run.template operator()<true, true>() : run.template operator()<true, false>();
      else amsgrad ? run.template operator()<false, true>() : run.template operator()<false, false>();
    } else {
      parallel_rows(n, n >= kParallelGrain,
                    [&](int64_t i) { adam_one(i, p, g, m, v, vmax, c, h.decoupled, amsgrad); });
    }
  });
}

}  // namespace ember::cpu
