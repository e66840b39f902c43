// Fused SGD and Adam steps (see optim.h). Each element is independent, so a
// grid-stride loop gives every thread a run of elements; when every array is
// 16-byte aligned, each thread moves 16 bytes of each array per load (4 floats, 8
// halves, 2 doubles) and a scalar loop finishes the tail. The hyperparameters are
// turned into compute-type constants once on the host (bias corrections, 1 - beta,
// 1 - lr*wd computed in double and rounded once, as the CPU kernel does) and passed
// by value. The per-element formulas are the CPU's, term for term; results can
// differ from the CPU in the last bit because nvcc fuses a*b + c into one FMA.
#include "kernels/cuda/optim.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

template <class A>
struct SgdConsts {
  A lr, mom, wd, damp;  // damp = 1 - dampening
  bool nesterov, first_step;
};

template <class A>
struct AdamConsts {
  A step_size, sqrt_bc2, b1, b2, one_minus_b1, one_minus_b2, eps, wd, decay;
  bool decoupled;
};

// One element of SGD; buf is null when there is no momentum.
template <class T>
__device__ __forceinline__ void sgd_element(T& p, T g, T* buf, const SgdConsts<acc_t<T>>& k) {
  using A = acc_t<T>;
  A d = to_acc(g) + k.wd * to_acc(p);
  if (buf) {
    const A b = k.first_step ? d : k.mom * to_acc(*buf) + k.damp * d;
    *buf = from_acc<T>(b);
    d = k.nesterov ? d + k.mom * b : b;
  }
  p = from_acc<T>(to_acc(p) - k.lr * d);
}

// One element of Adam; vmax is null unless amsgrad.
template <class T>
__device__ __forceinline__ void adam_element(T& p, T g, T& m, T& v, T* vmax,
                                             const AdamConsts<acc_t<T>>& k) {
  using A = acc_t<T>;
  A pi = to_acc(p), gi = to_acc(g);
  if (k.decoupled) pi *= k.decay;
  else gi += k.wd * pi;
  const A mi = k.b1 * to_acc(m) + k.one_minus_b1 * gi;
  const A vi = k.b2 * to_acc(v) + k.one_minus_b2 * gi * gi;
  m = from_acc<T>(mi);
  v = from_acc<T>(vi);
  A vs = vi;
  if (vmax) {
    const A old = to_acc(*vmax);
    vs = old < vi ? vi : old;  // std::max(old, vi), NaN included
    *vmax = from_acc<T>(vs);
  }
  const A denom = sqrt(vs) / k.sqrt_bc2 + k.eps;
  p = from_acc<T>(pi - k.step_size * mi / denom);
}

// Elements [0, chunks * kCount) in 16-byte vectors when kVector, then the rest
// one at a time. The optional state array is loaded only when present (and, for
// SGD's first step, not at all: it is about to be overwritten).
template <class T, bool kVector>
__global__ void sgd_kernel(int64_t n, T* __restrict__ p, const T* __restrict__ g,
                           T* __restrict__ buf, SgdConsts<acc_t<T>> k) {
  using V = Vec16<T>;
  constexpr int kCount = V::kCount;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t chunks = kVector ? n / kCount : 0;
  for (int64_t c = tid; c < chunks; c += stride) {
    V pv = reinterpret_cast<const V*>(p)[c];
    const V gv = reinterpret_cast<const V*>(g)[c];
    V bv;
    if (buf && !k.first_step) bv = reinterpret_cast<const V*>(buf)[c];
#pragma unroll
    for (int j = 0; j < kCount; ++j) sgd_element(pv.v[j], gv.v[j], buf ? &bv.v[j] : nullptr, k);
    reinterpret_cast<V*>(p)[c] = pv;
    if (buf) reinterpret_cast<V*>(buf)[c] = bv;
  }
  for (int64_t i = chunks * kCount + tid; i < n; i += stride) {
    T pi = p[i];
    sgd_element(pi, g[i], buf ? buf + i : nullptr, k);
    p[i] = pi;
  }
}

template <class T, bool kVector>
__global__ void adam_kernel(int64_t n, T* __restrict__ p, const T* __restrict__ g,
                            T* __restrict__ m, T* __restrict__ v, T* __restrict__ vmax,
                            AdamConsts<acc_t<T>> k) {
  using V = Vec16<T>;
  constexpr int kCount = V::kCount;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t chunks = kVector ? n / kCount : 0;
  for (int64_t c = tid; c < chunks; c += stride) {
    V pv = reinterpret_cast<const V*>(p)[c];
    const V gv = reinterpret_cast<const V*>(g)[c];
    V mv = reinterpret_cast<const V*>(m)[c];
    V vv = reinterpret_cast<const V*>(v)[c];
    V xv;
    if (vmax) xv = reinterpret_cast<const V*>(vmax)[c];
#pragma unroll
    for (int j = 0; j < kCount; ++j)
      adam_element(pv.v[j], gv.v[j], mv.v[j], vv.v[j], vmax ? &xv.v[j] : nullptr, k);
    reinterpret_cast<V*>(p)[c] = pv;
    reinterpret_cast<V*>(m)[c] = mv;
    reinterpret_cast<V*>(v)[c] = vv;
    if (vmax) reinterpret_cast<V*>(vmax)[c] = xv;
  }
  for (int64_t i = chunks * kCount + tid; i < n; i += stride) {
    T pi = p[i], mi = m[i], vi = v[i];
    adam_element(pi, g[i], mi, vi, vmax ? vmax + i : nullptr, k);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
  }
}

// Whether every non-null pointer allows 16-byte vector access.
bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* q : ptrs)
    if (reinterpret_cast<uintptr_t>(q) % 16 != 0) return false;
  return true;
}

// Threads needed: one per vector plus enough for the scalar tail.
template <class T>
int64_t work_items(int64_t n, bool vector) {
  if (!vector) return n;
  constexpr int64_t kCount = Vec16<T>::kCount;
  return std::max(n / kCount, n % kCount);
}

template <class F>
void float_types(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    default:
      throw NotImplementedError(std::string(op) + ": no kernel for device cuda and dtype " +
                                dtype_name(dt));
  }
}

}  // namespace

void sgd_step(DType dt, int64_t n, void* param, const void* grad, void* momentum_buffer,
              const SgdParams& h, cudaStream_t stream) {
  float_types(dt, "sgd_step", [&]<class T>() {
    using A = acc_t<T>;
    const SgdConsts<A> k{static_cast<A>(h.lr), static_cast<A>(h.momentum),
                         static_cast<A>(h.weight_decay), static_cast<A>(1 - h.dampening),
                         h.nesterov, h.first_step};
    T* p = static_cast<T*>(param);
    const T* g = static_cast<const T*>(grad);
    T* buf = static_cast<T*>(momentum_buffer);
    if (aligned16({p, g, buf}))
      launch_1d(work_items<T>(n, true), stream, sgd_kernel<T, true>, n, p, g, buf, k);
    else
      launch_1d(n, stream, sgd_kernel<T, false>, n, p, g, buf, k);
  });
}

void adam_step(DType dt, int64_t n, void* param, const void* grad, void* exp_avg,
               void* exp_avg_sq, void* max_exp_avg_sq, const AdamParams& h,
               cudaStream_t stream) {
  float_types(dt, "adam_step", [&]<class T>() {
    using A = acc_t<T>;
    const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
    const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
    const AdamConsts<A> k{static_cast<A>(h.lr / bc1),
                          static_cast<A>(std::sqrt(bc2)),
                          static_cast<A>(h.beta1),
                          static_cast<A>(h.beta2),
                          static_cast<A>(1 - h.beta1),
                          static_cast<A>(1 - h.beta2),
                          static_cast<A>(h.eps),
                          static_cast<A>(h.weight_decay),
                          static_cast<A>(1 - h.lr * h.weight_decay),
                          h.decoupled};
    T* p = static_cast<T*>(param);
    const T* g = static_cast<const T*>(grad);
    T* m = static_cast<T*>(exp_avg);
    T* v = static_cast<T*>(exp_avg_sq);
    T* vmax = static_cast<T*>(max_exp_avg_sq);
    if (aligned16({p, g, m, v, vmax}))
      launch_1d(work_items<T>(n, true), stream, adam_kernel<T, true>, n, p, g, m, v, vmax, k);
    else
      launch_1d(n, stream, adam_kernel<T, false>, n, p, g, m, v, vmax, k);
  });
}

}  // namespace ember::cuda
