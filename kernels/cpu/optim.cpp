// Fused SGD and Adam steps (see optim.h). The formulas are PyTorch 1.13's
// single-tensor implementations, evaluated in the compute type of each element.
#include "kernels/cpu/optim.h"

#include <cmath>

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
    const A step_size = static_cast<A>(h.lr / bc1), sqrt_bc2 = static_cast<A>(std::sqrt(bc2));
    const A b1 = static_cast<A>(h.beta1), b2 = static_cast<A>(h.beta2), eps = static_cast<A>(h.eps);
    const A wd = static_cast<A>(h.weight_decay), decay = static_cast<A>(1 - h.lr * h.weight_decay);
    // 1 - beta computed in double and rounded once, as PyTorch passes it as an
    // alpha (rounding beta to float32 first is ~200 ulp off for beta2 = 0.999).
    const A one_minus_b1 = static_cast<A>(1 - h.beta1), one_minus_b2 = static_cast<A>(1 - h.beta2);
    parallel_rows(n, n >= kParallelGrain, [&](int64_t i) {
      A pi = static_cast<A>(p[i]), gi = static_cast<A>(g[i]);
      if (h.decoupled) pi *= decay;
      else gi += wd * pi;
      const A mi = b1 * static_cast<A>(m[i]) + one_minus_b1 * gi;
      const A vi = b2 * static_cast<A>(v[i]) + one_minus_b2 * gi * gi;
      m[i] = static_cast<T>(mi);
      v[i] = static_cast<T>(vi);
      A vs = vi;
      if (vmax) {
        vs = std::max(static_cast<A>(vmax[i]), vi);
        vmax[i] = static_cast<T>(vs);
      }
      const A denom = std::sqrt(vs) / sqrt_bc2 + eps;
      p[i] = static_cast<T>(pi - step_size * mi / denom);
    });
  });
}

}  // namespace ember::cpu
