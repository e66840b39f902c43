// CUDA elementwise kernels. Each family (unary, binary, where, copy) has two kernels:
//  * contiguous: every operand is dense in the same order and 16-byte aligned (or a
//    broadcast scalar, stride 0 everywhere). Each thread moves whole Packs: 16 bytes
//    of the widest operand per access, two Packs in flight per loop trip, and the
//    few leftover elements (fewer than one Pack) go one per thread at the end;
//  * strided: any layout. Thread i finds its element's offset in every operand from
//    the linear index i (one divide per dimension, in 32 bits when the whole loop
//    has fewer than 2^31 elements), so the output - usually contiguous - is still
//    written in order and coalesced.
// Both loop grid-stride over a grid of a few waves (launch.cuh). Half types load to
// float, compute, and round to nearest even on store.
#include "kernels/cuda/elementwise.h"

#include <cuda/std/limits>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/base/philox.h"
#include "kernels/base/functors.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

// Packs each thread loads before it stores any: two for the pure data movers (copy),
// one for kernels that compute, where the functor's live values for two Packs (16
// bools, or two inlined double exps) would spill registers. Either way 16 bytes per
// thread are in flight, and a full SM runs 2048 threads.
constexpr int kCopyUnroll = 2;

// ---------------------------------------------------------------------------------
// Layout checks (host)

// Whether operand `o` is dense row-major for elements of `esize` bytes.
bool dense(const StridedLoop& L, int o, int64_t esize) {
  int64_t expected = esize;
  for (int d = L.ndim - 1; d >= 0; --d) {
    if (L.sizes[d] == 1) continue;
    if (L.strides[o][d] != expected) return false;
    expected *= L.sizes[d];
  }
  return true;
}

// Whether operand `o` is one value broadcast everywhere (stride 0 in every dim).
bool broadcast_scalar(const StridedLoop& L, int o) {
  for (int d = 0; d < L.ndim; ++d)
    if (L.sizes[d] != 1 && L.strides[o][d] != 0) return false;
  return true;
}

bool aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// How operand `o` can join the contiguous kernel: as dense Packs of `pack_bytes`
// (dense and aligned), as a broadcast scalar (when `allow_scalar`), or not at all.
enum class Role { packed, scalar, none };
Role role_of(const StridedLoop& L, int o, int64_t esize, int64_t pack_bytes, bool allow_scalar) {
  if (L.by_value >> o & 1u) return allow_scalar ? Role::scalar : Role::none;  // a number, no memory
  if (dense(L, o, esize) && aligned(L.data[o], pack_bytes)) return Role::packed;
  if (allow_scalar && broadcast_scalar(L, o)) return Role::scalar;
  return Role::none;
}

// The number a by-value operand carries (strided.h), or T{} for one in device memory,
// which the kernel reads itself. The contiguous kernels take both: a null pointer
// means "use the value".
template <class T>
T value_of(const StridedLoop& L, int o) {
  T v{};
  if (L.by_value >> o & 1u) std::memcpy(&v, L.values[o], sizeof(T));
  return v;
}

// Grid for a contiguous kernel over n elements in Packs of V, U Packs per thread.
unsigned grid_contiguous(int64_t n, int V, int U = 1) {
  const int64_t packs = n / V, tail = n - packs * V;
  return grid_for(std::max((packs + U - 1) / U, tail));
}

// ---------------------------------------------------------------------------------
// Device loops

// Grid-stride loop over `npacks` Packs, U per thread per trip: all the loads
// of a full trip are issued before the first store, so several are in flight at
// once (only the grid's last, partial trip goes one Pack at a time).
// load(j) returns the inputs of Pack j, store(j, inputs) computes and writes it.
template <int U = 1, class Load, class Store>
__device__ __forceinline__ void for_each_pack(int64_t npacks, Load load, Store store) {
  using In = decltype(load(int64_t{}));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x * U;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * U + threadIdx.x; base < npacks;
       base += step) {
    if (base + static_cast<int64_t>(U - 1) * blockDim.x < npacks) {
      In x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = load(base + static_cast<int64_t>(u) * blockDim.x);
#pragma unroll
      for (int u = 0; u < U; ++u) store(base + static_cast<int64_t>(u) * blockDim.x, x[u]);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = base + static_cast<int64_t>(u) * blockDim.x;
        if (j < npacks) store(j, load(j));
      }
    }
  }
}

// The elements [first, n) left after the Packs: fewer than one Pack, one per thread.
template <class Body>
__device__ __forceinline__ void for_each_tail(int64_t first, int64_t n, Body body) {
  const int64_t i = first + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) body(i);
}

template <class T, int V>
__device__ __forceinline__ Pack<T, V> splat(T v) {
  Pack<T, V> p;
#pragma unroll
  for (int k = 0; k < V; ++k) p.v[k] = v;
  return p;
}

// A Pack of operand data: loaded from p[j], or the scalar p[0] repeated.
template <class T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p, bool scalar, T s, int64_t j) {
  return scalar ? splat<T, V>(s) : reinterpret_cast<const Pack<T, V>*>(p)[j];
}

// The strided kernels' geometry: StridedLoop with the dims reversed (innermost
// first), so the unrolled offset loop indexes the kernel parameter with constants.
template <int N>
struct StridedArgs {
  int ndim = 0;
  bool index32 = false;  // numel < 2^31: divide in 32 bits (several times cheaper)
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};  // bytes
  char* data[N] = {};
  // By-value operands (strided.h): their strides are 0 and their element is read
  // from here, in the kernel's parameter space (the kernels take StridedArgs as a
  // __grid_constant__, whose address may be taken).
  unsigned by_value = 0;
  alignas(8) unsigned char values[N][8] = {};
};

template <int N>
StridedArgs<N> strided_args(const StridedLoop& L) {
  StridedArgs<N> a;
  a.ndim = L.ndim;
  a.index32 = L.numel <= INT32_MAX;
  for (int k = 0; k < L.ndim; ++k) {
    const int d = L.ndim - 1 - k;
    a.sizes[k] = L.sizes[d];
    for (int o = 0; o < N; ++o) a.strides[o][k] = L.strides[o][d];
  }
  for (int o = 0; o < N; ++o) {
    a.data[o] = L.data[o];
    std::memcpy(a.values[o], L.values[o], 8);
  }
  a.by_value = L.by_value;
  return a;
}

// Addresses of element i (row-major linear index) in every operand. The outermost
// dim takes what is left of i without a divide, so one-dim loops divide nothing.
template <int N, class I>
__device__ __forceinline__ void locate_as(const StridedArgs<N>& a, I r, char* (&p)[N]) {
#pragma unroll
  for (int k = 0; k < kMaxDims; ++k) {
    if (k >= a.ndim) break;
    I idx = r;
    if (k < a.ndim - 1) {
      const I size = static_cast<I>(a.sizes[k]);
      const I q = r / size;
      idx = r - q * size;
      r = q;
    }
#pragma unroll
    for (int o = 0; o < N; ++o) p[o] += static_cast<int64_t>(idx) * a.strides[o][k];
  }
}

template <int N>
__device__ __forceinline__ void locate(const StridedArgs<N>& a, int64_t i, char* (&p)[N]) {
#pragma unroll
  for (int o = 0; o < N; ++o)
    p[o] = (a.by_value >> o & 1u) ? const_cast<char*>(reinterpret_cast<const char*>(a.values[o])) : a.data[o];
  if (a.index32) locate_as<N, uint32_t>(a, static_cast<uint32_t>(i), p);
  else locate_as<N, uint64_t>(a, static_cast<uint64_t>(i), p);
}

// Grid-stride loop over the n elements of a strided loop; body(p) gets the N addresses.
template <int N, class Body>
__device__ __forceinline__ void for_each_strided(const StridedArgs<N>& a, int64_t n, Body body) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    char* p[N];
    locate(a, i, p);
    body(p);
  }
}

// ---------------------------------------------------------------------------------
// unary

template <class T, class F>
__global__ void __launch_bounds__(kBlockThreads)
    unary_contiguous(T* out, const T* in, int64_t n, F f) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  for_each_pack(
      n / V, [&](int64_t j) { return reinterpret_cast<const P*>(in)[j]; },
      [&](int64_t j, const P& x) {
        P y;
#pragma unroll
        for (int k = 0; k < V; ++k) y.v[k] = from_acc<T>(f(to_acc(x.v[k])));
        reinterpret_cast<P*>(out)[j] = y;
      });
  for_each_tail(n / V * V, n, [&](int64_t i) { out[i] = from_acc<T>(f(to_acc(in[i]))); });
}

template <class T, class F>
__global__ void __launch_bounds__(kBlockThreads)
    unary_strided(const __grid_constant__ StridedArgs<2> a, int64_t n, F f) {
  for_each_strided(a, n, [&](char* (&p)[2]) {
    *reinterpret_cast<T*>(p[0]) = from_acc<T>(f(to_acc(*reinterpret_cast<const T*>(p[1]))));
  });
}

template <class T, class F>
void launch_unary(const StridedLoop& L, cudaStream_t stream, F f) {
  constexpr int V = 16 / sizeof(T);
  const int64_t n = L.numel;
  if (role_of(L, 0, sizeof(T), 16, false) == Role::packed && role_of(L, 1, sizeof(T), 16, false) == Role::packed) {
    unary_contiguous<T><<<grid_contiguous(n, V), kBlockThreads, 0, stream>>>(
        reinterpret_cast<T*>(L.data[0]), reinterpret_cast<const T*>(L.data[1]), n, f);
  } else {
    unary_strided<T><<<grid_for(n), kBlockThreads, 0, stream>>>(strided_args<2>(L), n, f);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// binary

// The stored result type: bool for the comparisons, T otherwise.
template <class T, class F>
using binary_out_t = std::conditional_t<std::is_same_v<decltype(F{}(acc_t<T>{}, acc_t<T>{})), bool>, bool, T>;

template <class T, class F>
__global__ void __launch_bounds__(kBlockThreads)
    binary_contiguous(binary_out_t<T, F>* out, const T* a, const T* b,
                      int64_t n, bool a_scalar, bool b_scalar, T a_value, T b_value, F f) {
  using Out = binary_out_t<T, F>;
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  struct In { P a, b; };
  const T a0 = a_scalar ? (a ? a[0] : a_value) : T{}, b0 = b_scalar ? (b ? b[0] : b_value) : T{};
  for_each_pack(
      n / V,
      [&](int64_t j) { return In{load_pack<T, V>(a, a_scalar, a0, j), load_pack<T, V>(b, b_scalar, b0, j)}; },
      [&](int64_t j, const In& x) {
        Pack<Out, V> y;
#pragma unroll
        for (int k = 0; k < V; ++k) y.v[k] = from_acc<Out>(f(to_acc(x.a.v[k]), to_acc(x.b.v[k])));
        reinterpret_cast<Pack<Out, V>*>(out)[j] = y;
      });
  for_each_tail(n / V * V, n, [&](int64_t i) {
    out[i] = from_acc<Out>(f(to_acc(a_scalar ? a0 : a[i]), to_acc(b_scalar ? b0 : b[i])));
  });
}

template <class T, class F>
__global__ void __launch_bounds__(kBlockThreads)
    binary_strided(const __grid_constant__ StridedArgs<3> a, int64_t n, F f) {
  using Out = binary_out_t<T, F>;
  for_each_strided(a, n, [&](char* (&p)[3]) {
    *reinterpret_cast<Out*>(p[0]) =
        from_acc<Out>(f(to_acc(*reinterpret_cast<const T*>(p[1])), to_acc(*reinterpret_cast<const T*>(p[2]))));
  });
}

template <class T, class F>
void launch_binary(const StridedLoop& L, cudaStream_t stream, F f) {
  using Out = binary_out_t<T, F>;
  constexpr int V = 16 / sizeof(T);
  const int64_t n = L.numel;
  const Role ro = role_of(L, 0, sizeof(Out), V * sizeof(Out), false);
  const Role ra = role_of(L, 1, sizeof(T), 16, true), rb = role_of(L, 2, sizeof(T), 16, true);
  if (ro == Role::packed && ra != Role::none && rb != Role::none) {
    binary_contiguous<T><<<grid_contiguous(n, V), kBlockThreads, 0, stream>>>(
        reinterpret_cast<Out*>(L.data[0]), reinterpret_cast<const T*>(L.data[1]),
        reinterpret_cast<const T*>(L.data[2]), n, ra == Role::scalar, rb == Role::scalar, value_of<T>(L, 1),
        value_of<T>(L, 2), f);
  } else {
    binary_strided<T><<<grid_for(n), kBlockThreads, 0, stream>>>(strided_args<3>(L), n, f);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// where

template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    where_contiguous(T* out, const bool* cond, const T* a,
                     const T* b, int64_t n, bool c_scalar, bool a_scalar, bool b_scalar, bool c_value,
                     T a_value, T b_value) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  using C = Pack<bool, V>;
  struct In { C c; P a, b; };
  const bool c0 = c_scalar ? (cond ? cond[0] : c_value) : false;
  const T a0 = a_scalar ? (a ? a[0] : a_value) : T{}, b0 = b_scalar ? (b ? b[0] : b_value) : T{};
  for_each_pack(
      n / V,
      [&](int64_t j) {
        return In{load_pack<bool, V>(cond, c_scalar, c0, j), load_pack<T, V>(a, a_scalar, a0, j),
                  load_pack<T, V>(b, b_scalar, b0, j)};
      },
      [&](int64_t j, const In& x) {
        P y;
#pragma unroll
        for (int k = 0; k < V; ++k) y.v[k] = x.c.v[k] ? x.a.v[k] : x.b.v[k];
        reinterpret_cast<P*>(out)[j] = y;
      });
  for_each_tail(n / V * V, n, [&](int64_t i) {
    out[i] = (c_scalar ? c0 : cond[i]) ? (a_scalar ? a0 : a[i]) : (b_scalar ? b0 : b[i]);
  });
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads) where_strided(const __grid_constant__ StridedArgs<4> a, int64_t n) {
  for_each_strided(a, n, [&](char* (&p)[4]) {
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(c ? p[2] : p[3]);
  });
}

// ---------------------------------------------------------------------------------
// copy and conversion

// The CPU's half conversions (half.h) keep a NaN's payload; the hardware ones
// make every NaN the canonical one. Hardware for numbers (identical: both round to
// nearest even, subnormals and overflow included), half.h's code for NaN, so a
// conversion is bit-identical to cpu::copy.
template <class H> __device__ __forceinline__ H half_from_float(float f) {
  if (f != f) return H(f);  // half.h's float_to_*_bits, NaN branch
  return from_acc<H>(f);
}
template <class H> __device__ __forceinline__ float half_to_float(H h) {
  if constexpr (std::is_same_v<H, Half>) {
    if ((h.bits & 0x7fffu) > 0x7c00u) return half_bits_to_float(h.bits);  // NaN: keep the payload
    return to_acc(h);
  } else {
    return bfloat16_bits_to_float(h.bits);  // a shift: exact for NaN too
  }
}

template <class T> using cu_limits = ::cuda::std::numeric_limits<T>;

// Mirrors cpu convert<D, S>: bool is "nonzero" both ways, half types go through
// float, float -> integer saturates with NaN -> 0 (defined, unlike a C++ cast).
template <class D, class S>
__device__ __forceinline__ D convert(S x) {
  if constexpr (std::is_same_v<D, S>) {
    return x;  // a copy keeps the bits (a signalling NaN too), as the CPU's memcpy does
  } else if constexpr (is_half_v<S>) {
    const float f = half_to_float(x);
    if constexpr (std::is_same_v<D, bool>) return f != 0.0f;
    else if constexpr (is_half_v<D>) return half_from_float<D>(f);
    else return convert<D, float>(f);
  } else if constexpr (std::is_same_v<D, bool>) {
    return x != S(0);
  } else if constexpr (is_half_v<D>) {
    return half_from_float<D>(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    if (x != x) return 0;
    const double v = static_cast<double>(x);
    constexpr double lo = static_cast<double>(cu_limits<D>::lowest());
    constexpr double hi = static_cast<double>(cu_limits<D>::max());
    if (v <= lo) return cu_limits<D>::lowest();
    if (v >= hi) return cu_limits<D>::max();
    return static_cast<D>(x);
  } else {
    return static_cast<D>(x);
  }
}

template <class D, class S>
__global__ void __launch_bounds__(kBlockThreads)
    copy_contiguous(D* __restrict__ out, const S* __restrict__ in, int64_t n) {
  constexpr int V = 16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
  using PS = Pack<S, V>;
  using PD = Pack<D, V>;
  for_each_pack<kCopyUnroll>(
      n / V, [&](int64_t j) { return reinterpret_cast<const PS*>(in)[j]; },
      [&](int64_t j, const PS& x) {
        PD y;
#pragma unroll
        for (int k = 0; k < V; ++k) y.v[k] = convert<D>(x.v[k]);
        reinterpret_cast<PD*>(out)[j] = y;
      });
  for_each_tail(n / V * V, n, [&](int64_t i) { out[i] = convert<D>(in[i]); });
}

template <class D, class S>
__global__ void __launch_bounds__(kBlockThreads) copy_strided(const __grid_constant__ StridedArgs<2> a, int64_t n) {
  for_each_strided(a, n, [&](char* (&p)[2]) {
    *reinterpret_cast<D*>(p[0]) = convert<D>(*reinterpret_cast<const S*>(p[1]));
  });
}

template <class D, class S>
void launch_copy(const StridedLoop& L, cudaStream_t stream) {
  constexpr int V = 16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
  const int64_t n = L.numel;
  if (role_of(L, 0, sizeof(D), V * sizeof(D), false) == Role::packed &&
      role_of(L, 1, sizeof(S), V * sizeof(S), false) == Role::packed) {
    copy_contiguous<D, S><<<grid_contiguous(n, V, kCopyUnroll), kBlockThreads, 0, stream>>>(
        reinterpret_cast<D*>(L.data[0]), reinterpret_cast<const S*>(L.data[1]), n);
  } else {
    copy_strided<D, S><<<grid_for(n), kBlockThreads, 0, stream>>>(strided_args<2>(L), n);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// fills

// p[0, head) and p[head + packs * V, n) one element per thread, the middle in Packs
// (the host picks `head` so p + head is 16-byte aligned).
template <class T>
__global__ void __launch_bounds__(kBlockThreads) fill_kernel(T* __restrict__ p, int64_t n, int64_t head, T v) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  const int64_t packs = (n - head) / V;
  P* body = reinterpret_cast<P*>(p + head);
  const P pv = splat<T, V>(v);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t j = t; j < packs; j += step) body[j] = pv;
  if (t < head) p[t] = v;
  const int64_t tail = head + packs * V + t;
  if (tail < n) p[tail] = v;
}

// Random fills: element i computes exactly what cpu::fill_uniform / fill_normal
// compute for it. The double arithmetic uses __dmul_rn/__dadd_rn, which the compiler
// never fuses into an FMA: a fused multiply-add rounds once where the CPU rounds
// twice, and the bits would differ.
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    uniform_kernel(T* __restrict__ p, int64_t n, uint64_t seed, uint64_t offset, double low, double high) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    double u;
    if constexpr (std::is_same_v<T, double>) {
      const Philox4x32 r = philox(seed, (offset + 2 * static_cast<uint64_t>(i)) / 4, 0);
      const int w = static_cast<int>(i % 2) * 2;
      u = uint_to_unit_double(w ? r.v[2] : r.v[0], w ? r.v[3] : r.v[1]);
    } else {
      const Philox4x32 r = philox(seed, (offset + static_cast<uint64_t>(i)) / 4, 0);
      const uint32_t k = static_cast<uint32_t>((offset + static_cast<uint64_t>(i)) % 4);
      const uint32_t word = k == 0 ? r.v[0] : k == 1 ? r.v[1] : k == 2 ? r.v[2] : r.v[3];
      u = uint_to_unit_float(word);
    }
    const double x = __dadd_rn(low, __dmul_rn(high - low, u));
    T out;
    if constexpr (is_half_v<T>) out = half_from_float<T>(static_cast<float>(x));
    else out = static_cast<T>(x);
    // Rounding to a narrow type can land on `high`; [low, high) must hold.
    if (static_cast<double>(to_acc(out)) >= high) {
      if constexpr (is_half_v<T>) out = half_from_float<T>(static_cast<float>(low));
      else out = static_cast<T>(low);
    }
    p[i] = out;
  }
}

// Box-Muller as on the CPU: counter pair/2 (subsequence 1) gives u1, u2; even pairs
// take radius * cos(angle), odd ones radius * sin(angle).
template <class T>
__global__ void __launch_bounds__(kBlockThreads)
    normal_kernel(T* __restrict__ p, int64_t n, uint64_t seed, uint64_t offset, double mean, double stddev) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const uint64_t pair = offset / 2 + static_cast<uint64_t>(i);
    const Philox4x32 r = philox(seed, pair / 2, 1);
    const double u1 = 1.0 - uint_to_unit_double(r.v[0], r.v[1]);  // (0, 1]: log is finite
    const double u2 = uint_to_unit_double(r.v[2], r.v[3]);
    const double radius = ::sqrt(-2.0 * ::log(u1));
    const double angle = 6.283185307179586476925 * u2;
    const double z = (pair % 2 == 0) ? radius * ::cos(angle) : radius * ::sin(angle);
    const double x = __dadd_rn(mean, __dmul_rn(stddev, z));
    if constexpr (is_half_v<T>) p[i] = half_from_float<T>(static_cast<float>(x));
    else p[i] = static_cast<T>(x);
  }
}

[[noreturn]] void unsupported(const char* what, const char* op, DType dt) {
  throw DTypeError(std::string("cuda::") + what + ": " + op + " is not implemented for dtype " + dtype_name(dt));
}

}  // namespace

void unary(UnaryOp op, DType dt, const StridedLoop& loop, cudaStream_t stream) {
  if (loop.numel <= 0) return;
  dispatch(dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      unsupported("unary", name_of(op), dt);  // the front-end rejects bool for every unary op
    } else {
      // Compiled for the dtypes the op's row allows (ops.def.h): `same` ops for every
      // dtype, `floating` ops for the floating ones (the front-end promotes the rest).
      switch (op) {
#define EMBER_X(Name, name, kind, ...)                                       \
  case UnaryOp::name:                                                        \
    if constexpr (UnaryKind::kind == UnaryKind::same || is_floating_v<T>)    \
      return launch_unary<T>(loop, stream, functors::name{});                \
    break;
        EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
      }
      unsupported("unary", name_of(op), dt);
    }
  });
}

void binary(BinaryOp op, DType dt, const StridedLoop& loop, cudaStream_t stream) {
  if (loop.numel <= 0) return;
  dispatch(dt, [&]<class T>() {
    if constexpr (!is_floating_v<T>) {
      // Integer division never reaches a kernel (div is true division: the
      // front-end promotes integers to float32), so it is not compiled for them.
      if (op == BinaryOp::div) unsupported("binary", "div", dt);
    }
    switch (op) {
#define EMBER_X(Name, name, ...)                                              \
  case BinaryOp::name:                                                        \
    if constexpr (is_floating_v<T> || BinaryOp::name != BinaryOp::div)        \
      launch_binary<T>(loop, stream, functors::name{});                       \
    return;
      EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
    }
  });
}

void where(DType dt, const StridedLoop& loop, cudaStream_t stream) {
  if (loop.numel <= 0) return;
  dispatch(dt, [&]<class T>() {
    constexpr int V = 16 / sizeof(T);
    const int64_t n = loop.numel;
    const Role ro = role_of(loop, 0, sizeof(T), 16, false);
    const Role rc = role_of(loop, 1, 1, V, true);
    const Role ra = role_of(loop, 2, sizeof(T), 16, true), rb = role_of(loop, 3, sizeof(T), 16, true);
    if (ro == Role::packed && rc != Role::none && ra != Role::none && rb != Role::none) {
      where_contiguous<T><<<grid_contiguous(n, V), kBlockThreads, 0, stream>>>(
          reinterpret_cast<T*>(loop.data[0]), reinterpret_cast<const bool*>(loop.data[1]),
          reinterpret_cast<const T*>(loop.data[2]), reinterpret_cast<const T*>(loop.data[3]), n,
          rc == Role::scalar, ra == Role::scalar, rb == Role::scalar, value_of<bool>(loop, 1), value_of<T>(loop, 2),
          value_of<T>(loop, 3));
    } else {
      where_strided<T><<<grid_for(n), kBlockThreads, 0, stream>>>(strided_args<4>(loop), n);
    }
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void copy(DType dst, DType src, const StridedLoop& loop, cudaStream_t stream) {
  if (loop.numel <= 0) return;
  dispatch(dst, [&]<class D>() { dispatch(src, [&]<class S>() { launch_copy<D, S>(loop, stream); }); });
}

void fill(DType dt, void* data, int64_t numel, double fvalue, int64_t ivalue, cudaStream_t stream) {
  if (numel <= 0) return;
  dispatch(dt, [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) v = fvalue != 0;  // any nonzero value is true
    else if constexpr (is_floating_v<T>) v = static_cast<T>(static_cast<acc_t<T>>(fvalue));
    else v = static_cast<T>(ivalue);
    constexpr int V = 16 / sizeof(T);
    // Elements before the first 16-byte boundary (data is element-aligned).
    const int64_t to_boundary = (16 - static_cast<int64_t>(reinterpret_cast<uintptr_t>(data) % 16)) % 16;
    const int64_t head = std::min<int64_t>(numel, to_boundary / static_cast<int64_t>(sizeof(T)));
    const int64_t packs = (numel - head) / V;
    const int64_t singles = std::max<int64_t>(head, numel - head - packs * V);
    fill_kernel<T><<<grid_for(std::max(packs, singles)), kBlockThreads, 0, stream>>>(static_cast<T*>(data), numel,
                                                                                    head, v);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

int random_words_per_element(DType dt) { return dt == DType::Float64 ? 2 : 1; }

void fill_uniform(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset, double low, double high,
                  cudaStream_t stream) {
  if (!is_floating(dt)) unsupported("fill_uniform", "uniform", dt);
  dispatch_floating(dt, "fill_uniform", "cuda", [&]<class T>() {
    launch_1d(numel, stream, uniform_kernel<T>, static_cast<T*>(data), numel, seed, offset, low, high);
  });
}

void fill_normal(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset, double mean, double stddev,
                 cudaStream_t stream) {
  if (!is_floating(dt)) unsupported("fill_normal", "normal", dt);
  dispatch_floating(dt, "fill_normal", "cuda", [&]<class T>() {
    launch_1d(numel, stream, normal_kernel<T>, static_cast<T*>(data), numel, seed, offset, mean, stddev);
  });
}

}  // namespace ember::cuda
