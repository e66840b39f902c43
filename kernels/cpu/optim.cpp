// Fused SGD and Adam steps (see optim.h). The formulas are PyTorch 1.13's
// single-tensor implementations, evaluated in the compute type of each element.
#include "kernels/cpu/optim.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/adam_impl.h"
#include "kernels/cpu/isa.h"

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

using adam_detail::AdamScalars;

// The float32 range loop of the widest instruction set the active level allows.
const adam_detail::AdamKernels& adam_kernels() {
  using namespace adam_detail;
  static const PerIsa<AdamKernels> tables(adam_kernels_generic(), adam_kernels_avx2(), adam_kernels_avx512(),
                                          nullptr);
  return tables.pick();
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
      const adam_detail::AdamRange range = adam_kernels().range[h.decoupled][amsgrad];
      const int64_t chunks = (n + kAdamChunk - 1) / kAdamChunk;
      parallel_rows(chunks, n >= kParallelGrain, [&](int64_t k) {
        const int64_t lo = k * kAdamChunk, hi = std::min(n, lo + kAdamChunk);
        range(lo, hi, p, g, m, v, vmax, c);
      });
    } else {
      parallel_rows(n, n >= kParallelGrain,
                    [&](int64_t i) { adam_detail::adam_one(i, p, g, m, v, vmax, c, h.decoupled, amsgrad); });
    }
  });
}

}  // namespace ember::cpu
