// CUDA reductions. Every op is a small State (a running sum; a count with shifted
// sums for the variance; or the best value and its position) with
// add(value, position) and merge(other), so one pair of kernels serves them all:
//  * rows: a group of threads (one warp, or a whole block for long reductions)
//    per output; its threads stride over the reduced positions, so when the
//    innermost reduced dim is contiguous a warp reads 32 neighbours at once; the
//    group then merges its States with warp shuffles (and shared memory across warps);
//  * columns: one thread per output, looping over the reduced positions; when the
//    innermost kept dim is contiguous, neighbouring threads read neighbouring
//    elements, so every load of the warp is one coalesced line.
// When there are too few outputs to fill the GPU, the reduced range is split: each
// split writes its State to a scratch buffer and a third kernel merges the splits
// of each output in order. No float atomics, so the bits never depend on timing.
// With EMBER_CUDA_REDUCE=vector (vector_reductions(); opt-in until a GPU run checks
// it, see reduce.h), the schedules below aim at the copy floor, where the default
// ones reached 0.16-0.71 of it on an H200.
// Speed is loads in flight: where the reduced range is one contiguous run (rows) or
// neighbouring outputs are neighbouring elements (columns), threads read 16-byte
// vectors (columns: packs of up to 4 outputs), several before adding any, and a
// split reduction launches one full wave of equal pieces at the kernel's occupancy.
// Scalar loads serve the aligned vectors' head and tail and every other layout.
// So the order of the additions, and the last bits of a sum, follow the geometry,
// the GPU (its SM count and the kernel's occupancy) and the input's address modulo
// 16 bytes; the same tensor on the same GPU gives the same bits every run.
#include "kernels/cuda/reduce.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

// ---------------------------------------------------------------------------------
// Geometry as the kernels read it: ReduceGeometry with the dims reversed (innermost
// first), so unrolled loops index the kernel parameter with constants.
struct Geometry {
  int out_ndim = 0, red_ndim = 0;
  bool red32 = false;  // red_numel < 2^31: reduced positions decompose in 32 bits
  int64_t out_sizes[kMaxDims] = {}, out_in[kMaxDims] = {}, out_out[kMaxDims] = {};
  int64_t red_sizes[kMaxDims] = {}, red_in[kMaxDims] = {};
  int64_t out_numel = 1, red_numel = 1;
};

Geometry reversed(const ReduceGeometry& g) {
  Geometry r;
  r.out_ndim = g.out_ndim;
  for (int k = 0; k < g.out_ndim; ++k) {
    const int d = g.out_ndim - 1 - k;
    r.out_sizes[k] = g.out_sizes[d];
    r.out_in[k] = g.out_strides_in[d];
    r.out_out[k] = g.out_strides_out[d];
  }
  r.red_ndim = g.red_ndim;
  for (int k = 0; k < g.red_ndim; ++k) {
    const int d = g.red_ndim - 1 - k;
    r.red_sizes[k] = g.red_sizes[d];
    r.red_in[k] = g.red_strides[d];
  }
  if (r.red_ndim == 0) {  // no reduced dim: each output reduces its one element
    r.red_ndim = 1;
    r.red_sizes[0] = 1;
    r.red_in[0] = 0;
  }
  r.out_numel = g.out_numel;
  r.red_numel = g.red_numel;
  r.red32 = g.red_numel <= INT32_MAX;
  return r;
}

// Input and output offsets (in elements) of output o. The outermost kept dim takes
// what is left of o without a divide.
__device__ __forceinline__ void output_offsets(const Geometry& g, int64_t o, int64_t& in_off, int64_t& out_off) {
  in_off = 0;
  out_off = 0;
#pragma unroll
  for (int k = 0; k < kMaxDims; ++k) {
    if (k >= g.out_ndim) break;
    int64_t idx = o;
    if (k < g.out_ndim - 1) {
      const int64_t q = o / g.out_sizes[k];
      idx = o - q * g.out_sizes[k];
      o = q;
    }
    in_off += idx * g.out_in[k];
    out_off += idx * g.out_out[k];
  }
}

// Input offset of reduced position r (row-major over the reduced dims), counting
// the reduced dims from `first` (innermost-first numbering).
template <class I>
__device__ __forceinline__ int64_t reduced_offset_as(const Geometry& g, I r, int first) {
  int64_t off = 0;
#pragma unroll
  for (int k = 0; k < kMaxDims; ++k) {
    if (k >= g.red_ndim) break;
    if (k < first) continue;
    I idx = r;
    if (k < g.red_ndim - 1) {
      const I size = static_cast<I>(g.red_sizes[k]);
      const I q = r / size;
      idx = r - q * size;
      r = q;
    }
    off += static_cast<int64_t>(idx) * g.red_in[k];
  }
  return off;
}
__device__ __forceinline__ int64_t reduced_offset(const Geometry& g, int64_t r, int first = 0) {
  if (g.red_ndim - first == 1) return r * g.red_in[first];  // the common case: no divide
  return g.red32 ? reduced_offset_as<uint32_t>(g, static_cast<uint32_t>(r), first)
                 : reduced_offset_as<uint64_t>(g, static_cast<uint64_t>(r), first);
}

// ---------------------------------------------------------------------------------
// States

// Warp shuffle of any arithmetic value (narrow integers and bool travel as int).
template <class V>
__device__ __forceinline__ V shfl_xor(V v, int lane_mask) {
  if constexpr (std::is_same_v<V, float> || std::is_same_v<V, double> || std::is_same_v<V, int> ||
                std::is_same_v<V, long> || std::is_same_v<V, long long>)
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
  else
    return static_cast<V>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), lane_mask));
}

template <class A>
__device__ __forceinline__ bool nan_of(A x) {
  if constexpr (std::is_floating_point_v<A>) return x != x;
  else return false;
}

template <class A>
struct SumState {
  A sum = 0;
  __device__ void add(A x, int64_t) { sum += x; }
  __device__ void merge(const SumState& o) { sum += o.sum; }
  __device__ SumState shuffled(int m) const { return {shfl_xor(sum, m)}; }
};

// Variance state in "shifted data" form: sums of d = x - shift and of d^2, with the
// shift the first value the thread saw, so no divide per element and no cancellation
// beyond the data's own spread. merge converts both sides to (mean, M2) and uses
// Chan et al.'s formula; the result is kept as shift = mean, s1 = 0, s2 = M2.
template <class A>
struct VarState {
  int64_t n = 0;
  A shift = 0, s1 = 0, s2 = 0;
  __device__ void add(A x, int64_t) {
    if (n == 0) shift = x;
    ++n;
    const A d = x - shift;
    s1 += d;
    s2 += d * d;
  }
  __device__ A mean() const { return shift + s1 / static_cast<A>(n); }
  // Clamped at 0 by a comparison, not max(): CUDA's max() is fmax, which would turn a
  // NaN (a NaN or inf input) into 0 where the CPU and PyTorch give NaN.
  __device__ A m2() const {
    const A v = s2 - s1 * s1 / static_cast<A>(n);
    return v < A(0) ? A(0) : v;
  }
  __device__ void merge(const VarState& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const int64_t total = n + o.n;
    const A ma = mean(), mb = o.mean(), d = mb - ma;
    const A wb = static_cast<A>(o.n) / static_cast<A>(total);
    const A merged_m2 = m2() + o.m2() + d * d * static_cast<A>(n) * wb;
    shift = ma + d * wb;
    s1 = 0;
    s2 = merged_m2;
    n = total;
  }
  __device__ VarState shuffled(int m) const {
    return {shfl_xor(n, m), shfl_xor(shift, m), shfl_xor(s1, m), shfl_xor(s2, m)};
  }
};

// The extreme value and its position (pos -1: nothing seen yet). A candidate wins
// if it is NaN and the best is not, or is strictly better, or ties at an earlier
// position: that order does not depend on the visiting order, so any merge tree
// gives the CPU's answer (the first NaN if any, else the first extreme).
template <class A, bool Max>
struct ExtremeState {
  A best{};
  int64_t pos = -1;
  __device__ bool beaten_by(A x, int64_t p) const {
    if (p < 0) return false;
    if (pos < 0) return true;
    const bool xn = nan_of(x), bn = nan_of(best);
    if (bn) return xn && p < pos;
    if (xn) return true;
    if (Max ? x > best : x < best) return true;
    return x == best && p < pos;
  }
  __device__ void add(A x, int64_t p) {
    if (beaten_by(x, p)) {
      best = x;
      pos = p;
    }
  }
  __device__ void merge(const ExtremeState& o) { add(o.best, o.pos); }
  __device__ ExtremeState shuffled(int m) const { return {shfl_xor(best, m), shfl_xor(pos, m)}; }
};

// Sums and variances of every floating dtype accumulate in double, as the CPU's do
// (kernels/cpu/reduce_runs.h): a thread may add a whole reduced range in one chain
// (no split when there are many outputs), and a float chain of 1e5 terms would lose
// about 1e-3 of the result. The reductions stay memory-bound in double.
template <class T> using sum_t = std::conditional_t<is_floating_v<T>, double, int64_t>;

// Adds N values of one output, at positions pos, pos + 1, ..., to its State. The
// half types' sums first add their N (at most 8) values in float, pairwise, and the
// State adds that in double: the error is at most 3 * 2^-24 of the values'
// magnitude (the CPU's float lanes add 16 halves before going to double), and one
// float-to-double conversion per 8 values instead of per value keeps a 16-bit
// input within the SM's conversion throughput at full memory speed. (bfloat16
// values near FLT_MAX can overflow that float, as they can the CPU's lanes.)
// Everything else adds per value, in the State's own type.
template <class T, int N, class State>
__device__ __forceinline__ void add_run(State& st, const T (&x)[N], int64_t pos) {
  if constexpr (is_half_v<T> && std::is_same_v<State, SumState<double>>) {
    static_assert(N <= 8 && (N & (N - 1)) == 0, "a pairwise run is a power of two, at most 8 long");
    float f[N];
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = to_acc(x[e]);
#pragma unroll
    for (int w = N / 2; w > 0; w /= 2)
#pragma unroll
      for (int e = 0; e < w; ++e) f[e] += f[e + w];
    st.sum += static_cast<double>(f[0]);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) st.add(to_acc(x[e]), pos + e);
  }
}

// Where the finished States go: `out`/`indices` as the op says, or, when the
// reduced range is split, partial[split * out_numel + o].
template <class State>
struct Sink {
  void* out;
  int64_t* indices;
  State* partial;
  ReduceOp op;
  int64_t correction;
};

template <class T, class A>
__device__ void finish(const SumState<A>& s, const Sink<SumState<A>>& k, int64_t count, int64_t off) {
  if constexpr (is_floating_v<T>) {
    A v = s.sum;
    if (k.op == ReduceOp::mean) v = count ? s.sum / static_cast<A>(count) : A(NAN);
    // double -> acc_t -> T, the CPU's two roundings
    static_cast<T*>(k.out)[off] = from_acc<T>(static_cast<acc_t<T>>(v));
  } else {
    static_cast<int64_t*>(k.out)[off] = s.sum;  // integral sums are int64
  }
}
template <class T, class A>
__device__ void finish(const VarState<A>& s, const Sink<VarState<A>>& k, int64_t count, int64_t off) {
  const int64_t dof = count - k.correction;
  const A m2 = s.n ? s.m2() : A(0);
  static_cast<T*>(k.out)[off] = from_acc<T>(static_cast<acc_t<T>>(dof > 0 ? m2 / static_cast<A>(dof) : A(NAN)));
}
template <class T, class A, bool Max>
__device__ void finish(const ExtremeState<A, Max>& s, const Sink<ExtremeState<A, Max>>& k, int64_t, int64_t off) {
  if (k.op == ReduceOp::amax || k.op == ReduceOp::amin) static_cast<T*>(k.out)[off] = from_acc<T>(s.best);
  if (k.indices) k.indices[off] = s.pos;
}

template <class T, class State>
__device__ __forceinline__ void deliver(const State& s, const Sink<State>& k, const Geometry& g, int64_t o,
                                        int64_t split) {
  if (k.partial) {
    k.partial[split * g.out_numel + o] = s;
  } else {
    int64_t in_off, out_off;
    output_offsets(g, o, in_off, out_off);
    finish<T>(s, k, g.red_numel, out_off);
  }
}

// Reduced positions [r0, r1) of split s out of `splits`.
__device__ __forceinline__ void split_range(int64_t red_numel, int64_t splits, int64_t s, int64_t& r0, int64_t& r1) {
  const int64_t chunk = (red_numel + splits - 1) / splits;
  r0 = min(red_numel, s * chunk);
  r1 = min(red_numel, r0 + chunk);
}

// ---------------------------------------------------------------------------------
// Kernels

template <class State>
__device__ __forceinline__ State warp_merge(State s) {
#pragma unroll
  for (int m = kWarp / 2; m > 0; m /= 2) s.merge(s.shuffled(m));
  return s;
}

// Vectors (or packs) a thread loads before it adds any of them: 4 x 16 bytes, so
// that a few blocks per SM keep the ~30 KB per SM in flight that 4 TB/s needs at
// DRAM latency, with room to spare.
constexpr int kUnroll = 4;

// Adds p[0, n) (positions pos0 + j) to the States of a group of G threads, thread
// t taking its share: the elements before the first 16-byte boundary and after the
// last one singly, the aligned middle as 16-byte vectors, kUnroll at a time (the
// last batch predicated, so that it too is one round trip). Every element is added
// exactly once whatever p's alignment (all singly when p is not even aligned to T).
template <class T, class State>
__device__ __forceinline__ void add_contiguous(State& st, const T* __restrict__ p, int64_t n, int64_t pos0, int t,
                                               int G) {
  using V = Vec16<T>;
  constexpr int kV = V::kCount;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  const int64_t head =
      addr % sizeof(T) ? n : min(n, static_cast<int64_t>((16 - addr % 16) % 16 / sizeof(T)));
  const int64_t nv = (n - head) / kV;  // whole vectors after the head
  for (int64_t j = t; j < head; j += G) st.add(to_acc(p[j]), pos0 + j);
  const V* vp = reinterpret_cast<const V*>(p + head);
  const int64_t vpos = pos0 + head;  // position of vector i's first element: vpos + i * kV
  // Vectors i, i + G, ..., i + (kUnroll - 1) G, those below nv when kAll is false.
  auto batch = [&]<bool kAll>(int64_t i) {
    V v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (kAll || i + u * G < nv) v[u] = vp[i + u * G];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (kAll || i + u * G < nv) add_run<T>(st, v[u].v, vpos + (i + u * G) * kV);
  };
  int64_t i = t;
  for (; i + (kUnroll - 1) * G < nv; i += kUnroll * G) batch.template operator()<true>(i);
  if (i < nv) batch.template operator()<false>(i);
  for (int64_t j = head + nv * kV + t; j < n; j += G) st.add(to_acc(p[j]), pos0 + j);
}

// Groups of `group_warps` warps (1, or the whole block) take (output, split) items
// in a grid-stride loop; the loop bounds are the same for every thread of a group,
// so the shuffles and barriers below are reached by all of them.
// kVectors: the vector schedules (a template argument, not a run-time flag, so that
// the default instance compiles to the code run 1 passed: the unused vector path
// would otherwise raise its registers from about 40 to up to 113, with spills).
template <class T, class State, bool kVectors>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_rows(const __grid_constant__ Geometry g, const T* __restrict__ in, Sink<State> sink, State init,
                int group_warps, int64_t splits) {
  constexpr int kWarps = kBlockThreads / kWarp;
  __shared__ alignas(State) unsigned char shared_bytes[kWarps * sizeof(State)];
  State* shared = reinterpret_cast<State*>(shared_bytes);
  const int G = group_warps * kWarp;
  const int t = threadIdx.x % G, warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t per_block = blockDim.x / G;
  const int64_t items = g.out_numel * splits;
  for (int64_t item = blockIdx.x * per_block + threadIdx.x / G; item < items; item += gridDim.x * per_block) {
    const int64_t o = item / splits, s = item % splits;
    int64_t in_off, out_off, r0, r1;
    output_offsets(g, o, in_off, out_off);
    split_range(g.red_numel, splits, s, r0, r1);
    const T* base = in + in_off;
    State st = init;
    if (kVectors && g.red_ndim == 1 && g.red_in[0] == 1)  // one contiguous run (the front-end coalesces dims)
      add_contiguous<T>(st, base + r0, r1 - r0, r0, t, G);
    else
      for (int64_t r = r0 + t; r < r1; r += G) st.add(to_acc(base[reduced_offset(g, r)]), r);
    st = warp_merge(st);
    if (group_warps > 1) {  // merge the block's warps: one State per warp through shared memory
      if (lane == 0) shared[warp] = st;
      __syncthreads();
      if (warp == 0) st = warp_merge(lane < group_warps ? shared[lane] : init);
      __syncthreads();  // `shared` is written again by the next item
    }
    if (t == 0) deliver<T>(st, sink, g, o, s);
  }
}

// One thread per output (grid x, grid-stride), one split per grid y. Positions are
// walked a row of the innermost reduced dim at a time, so the divides that locate
// a row are paid once per row.
template <class T, class State>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_columns(const __grid_constant__ Geometry g, const T* __restrict__ in, Sink<State> sink, State init) {
  const int64_t splits = gridDim.y, s = blockIdx.y;
  const int64_t size0 = g.red_sizes[0], stride0 = g.red_in[0];
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < g.out_numel;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t in_off, out_off, r0, r1;
    output_offsets(g, o, in_off, out_off);
    split_range(g.red_numel, splits, s, r0, r1);
    State st = init;
    for (int64_t r = r0; r < r1;) {
      const int64_t row = r / size0, j0 = r - row * size0;
      const int64_t end = min(r1, r - j0 + size0);
      const T* p = in + in_off + (g.red_ndim > 1 ? reduced_offset(g, row, 1) : 0);
      for (int64_t j = j0; r < end; ++j, ++r) st.add(to_acc(p[j * stride0]), r);
    }
    deliver<T>(st, sink, g, o, s);
  }
}

// reduce_columns with C neighbouring outputs per thread (o = C q ... C q + C - 1),
// read as one Pack of C elements per reduced position, kUnroll positions loaded
// before any is added. The launcher has checked that every Pack is aligned and
// holds C outputs of one innermost kept row: the pointer, out_sizes[0], the outer
// kept strides and every reduced stride are multiples of C, and out_in[0] == 1.
template <class T, class State, int C>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_columns_vec(const __grid_constant__ Geometry g, const T* __restrict__ in, Sink<State> sink, State init) {
  using P = Pack<T, C>;
  const int64_t splits = gridDim.y, s = blockIdx.y;
  const int64_t size0 = g.red_sizes[0], stride0 = g.red_in[0];
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < g.out_numel / C;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t in_off, out_off, r0, r1;
    output_offsets(g, q * C, in_off, out_off);
    split_range(g.red_numel, splits, s, r0, r1);
    State st[C];
#pragma unroll
    for (int c = 0; c < C; ++c) st[c] = init;
    for (int64_t r = r0; r < r1;) {
      const int64_t row = r / size0, j0 = r - row * size0;
      const int64_t end = min(r1, r - j0 + size0);
      const T* p = in + in_off + (g.red_ndim > 1 ? reduced_offset(g, row, 1) : 0) + j0 * stride0;
      for (; r + kUnroll <= end; r += kUnroll, p += kUnroll * stride0) {
        P x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = *reinterpret_cast<const P*>(p + u * stride0);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          T run[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) run[u] = x[u].v[c];
          add_run<T>(st[c], run, r);
        }
      }
      if (r < end) {  // the last 1 to kUnroll - 1 positions of the run, loaded together too
        const int64_t left = end - r;
        P x[kUnroll - 1];
#pragma unroll
        for (int u = 0; u < kUnroll - 1; ++u)
          if (u < left) x[u] = *reinterpret_cast<const P*>(p + u * stride0);
#pragma unroll
        for (int u = 0; u < kUnroll - 1; ++u)
#pragma unroll
          for (int c = 0; c < C; ++c)
            if (u < left) st[c].add(to_acc(x[u].v[c]), r + u);
        r = end;
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) deliver<T>(st[c], sink, g, q * C + c, s);
  }
}

// Merges p[s * stride] for s = s0, s0 + step, ... < s1 into st in that order,
// loading kBatch of them before merging any (one L2 round trip per batch, not per
// split; the last batch predicated).
template <class State>
__device__ __forceinline__ void merge_in_order(State& st, const State* p, int64_t stride, int64_t s0, int64_t s1,
                                               int64_t step) {
  constexpr int kBatch = 8;
  for (int64_t s = s0; s < s1; s += kBatch * step) {
    State b[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k)
      if (s + k * step < s1) b[k] = p[(s + k * step) * stride];
#pragma unroll
    for (int k = 0; k < kBatch; ++k)
      if (s + k * step < s1) st.merge(b[k]);
  }
}

// Merges each output's splits: one warp per output, lane l taking splits l, l+32, ...
// in order, then the warp's shuffle tree; a fixed order, so fixed rounding. For few
// outputs (a full reduction), where a warp's loads are neighbouring splits.
template <class T, class State, bool kBatched>
__global__ void __launch_bounds__(kBlockThreads)
    merge_splits(const __grid_constant__ Geometry g, Sink<State> sink, State init, int64_t splits) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  Sink<State> final_sink = sink;
  final_sink.partial = nullptr;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; o < g.out_numel;
       o += warps) {  // o is the same for every lane of a warp
    State st = init;
    if (kBatched) {
      merge_in_order(st, sink.partial + o, g.out_numel, lane, splits, kWarp);
    } else {
      for (int64_t s = lane; s < splits; s += kWarp) st.merge(sink.partial[s * g.out_numel + o]);
    }
    st = warp_merge(st);
    if (lane == 0) deliver<T>(st, final_sink, g, o, 0);
  }
}

// The same for many outputs, where neighbouring outputs are neighbouring partials:
// a block takes 32 outputs (one per lane), its 8 warps a contiguous eighth of the
// splits each, merged in order; lane l of warp 0 then merges the 8 warps' States of
// output l in warp order. A fixed order again, and every load of a warp is one line.
template <class T, class State>
__global__ void __launch_bounds__(kBlockThreads)
    merge_splits_wide(const __grid_constant__ Geometry g, Sink<State> sink, State init, int64_t splits) {
  constexpr int kWarps = kBlockThreads / kWarp;
  __shared__ alignas(State) unsigned char shared_bytes[kBlockThreads * sizeof(State)];
  State* shared = reinterpret_cast<State*>(shared_bytes);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t chunk = (splits + kWarps - 1) / kWarps;
  const int64_t s0 = min(splits, warp * chunk), s1 = min(splits, s0 + chunk);
  Sink<State> final_sink = sink;
  final_sink.partial = nullptr;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kWarp; first < g.out_numel;
       first += static_cast<int64_t>(gridDim.x) * kWarp) {  // the same for the whole block
    const int64_t o = first + lane;
    State st = init;
    if (o < g.out_numel) merge_in_order(st, sink.partial + o, g.out_numel, s0, s1, 1);
    shared[threadIdx.x] = st;
    __syncthreads();
    if (warp == 0 && o < g.out_numel) {
#pragma unroll
      for (int w = 1; w < kWarps; ++w) st.merge(shared[w * kWarp + lane]);
      deliver<T>(st, final_sink, g, o, 0);
    }
    __syncthreads();  // `shared` is written again by the next outputs
  }
}

// ---------------------------------------------------------------------------------
// Host: pick a schedule and a split count

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// More splits than this only lengthen the merge (and grid y is at most 65535).
constexpr int64_t kMaxSplits = 1024;

// Blocks of `Kernel` resident on one SM at once (its registers and shared memory
// permitting), looked up once per kernel: a split reduction launches that many per
// SM, one full wave of equal pieces, since a partial second wave would run with too
// few loads in flight.
template <auto Kernel>
int64_t resident_blocks() {
  static const int blocks = [] {
    int b = 0;
    EMBER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, Kernel, kBlockThreads, 0));
    return std::max(1, b);
  }();
  return static_cast<int64_t>(properties().multiProcessorCount) * blocks;
}

// Outputs per thread of reduce_columns_vec, or 1 where its alignment conditions do
// not hold (then reduce_columns runs).
template <class T>
int column_pack(const Geometry& g, const T* in) {
  constexpr int C = static_cast<int>(std::min<size_t>(4, 16 / sizeof(T)));
  if (g.out_ndim == 0 || g.out_in[0] != 1 || g.out_sizes[0] % C != 0) return 1;
  if (reinterpret_cast<uintptr_t>(in) % (C * sizeof(T)) != 0) return 1;
  for (int k = 1; k < g.out_ndim; ++k)
    if (g.out_in[k] % C != 0) return 1;
  for (int k = 0; k < g.red_ndim; ++k)
    if (g.red_in[k] % C != 0) return 1;
  return C;
}

// Merges the splits' partials into the outputs: warp per output, or with the vector
// schedules block per 32 outputs once that makes 32 blocks or more.
template <class T, class State>
void merge(const Geometry& g, Sink<State> sink, State init, int64_t splits, bool vectors, cudaStream_t stream) {
  if (vectors && g.out_numel >= 32 * kWarp) {
    merge_splits_wide<T><<<grid_for(ceil_div(g.out_numel, kWarp), 1), kBlockThreads, 0, stream>>>(g, sink, init,
                                                                                                   splits);
  } else {
    const unsigned blocks = grid_for(g.out_numel * kWarp);
    if (vectors) merge_splits<T, State, true><<<blocks, kBlockThreads, 0, stream>>>(g, sink, init, splits);
    else merge_splits<T, State, false><<<blocks, kBlockThreads, 0, stream>>>(g, sink, init, splits);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

template <class T, class State>
void run(const ReduceGeometry& rg, const T* in, Sink<State> sink, State init, cudaStream_t stream) {
  const Geometry g = reversed(rg);
  const bool vectors = vector_reductions();
  // The default schedules aim a split at threads that fill every SM once (2048
  // resident threads each); the vector ones at one wave of the kernel's occupancy.
  const int64_t target = static_cast<int64_t>(properties().multiProcessorCount) * 2048;
  const bool red_contig = g.red_in[0] == 1 && g.red_sizes[0] > 1;
  const bool out_contig = g.out_ndim > 0 && g.out_in[0] == 1;
  // Short reductions, and contiguous outputs over strided reductions, go to columns.
  const bool columns =
      g.red_numel < 32 || (!red_contig && out_contig && g.out_numel >= kWarp);
  int64_t splits = 1;
  if (columns) {
    constexpr int C = static_cast<int>(std::min<size_t>(4, 16 / sizeof(T)));
    const bool vec = vectors && column_pack(g, in) == C;
    const int64_t blocks_x = ceil_div(vec ? g.out_numel / C : g.out_numel, kBlockThreads);
    if (vectors) {
      // One full wave of blocks: too few outputs to give every resident thread its
      // own column split the reduced range.
      const int64_t wave = vec ? resident_blocks<reduce_columns_vec<T, State, C>>()
                               : resident_blocks<reduce_columns<T, State>>();
      if (blocks_x < wave && g.red_numel >= 128)
        splits = std::clamp<int64_t>(wave / blocks_x, 1, std::min<int64_t>(g.red_numel / 64, kMaxSplits));
    } else if (blocks_x * kBlockThreads < target && g.red_numel >= 128) {
      splits = std::clamp<int64_t>(ceil_div(target, blocks_x * kBlockThreads), 1,
                                   std::min<int64_t>(g.red_numel / 64, kMaxSplits));
    }
    std::optional<ScratchBuffer> scratch;  // back to the cache after the launches are queued
    if (splits > 1) {
      scratch.emplace(splits * g.out_numel * sizeof(State), current_device_index(), stream);
      sink.partial = scratch->as<State>();
    }
    if (vec) {
      const dim3 grid(splits > 1 ? static_cast<unsigned>(blocks_x) : grid_for(g.out_numel / C),
                      static_cast<unsigned>(splits));
      reduce_columns_vec<T, State, C><<<grid, kBlockThreads, 0, stream>>>(g, in, sink, init);
    } else {
      const dim3 grid(splits > 1 ? static_cast<unsigned>(blocks_x) : grid_for(g.out_numel),
                      static_cast<unsigned>(splits));
      reduce_columns<T><<<grid, kBlockThreads, 0, stream>>>(g, in, sink, init);
    }
    EMBER_CUDA_CHECK_LAUNCH();
    if (splits > 1) merge<T>(g, sink, init, splits, vectors, stream);
    return;
  }
  const int group_warps = g.red_numel >= 2048 ? kBlockThreads / kWarp : 1;
  const int64_t group = group_warps * kWarp;
  if (vectors) {
    // Groups resident at once; fewer outputs than that split into one full wave of items.
    const int64_t slots = resident_blocks<reduce_rows<T, State, true>>() * (kBlockThreads / group);
    if (g.out_numel < slots && g.red_numel >= 8192)
      splits = std::clamp<int64_t>(slots / g.out_numel, 1, std::min<int64_t>(g.red_numel / 4096, kMaxSplits));
  } else if (g.out_numel * group < target && g.red_numel >= 8192) {
    splits = std::clamp<int64_t>(ceil_div(target, g.out_numel * group), 1,
                                 std::min<int64_t>(g.red_numel / 4096, kMaxSplits));
  }
  std::optional<ScratchBuffer> scratch;
  if (splits > 1) {
    scratch.emplace(splits * g.out_numel * sizeof(State), current_device_index(), stream);
    sink.partial = scratch->as<State>();
  }
  const unsigned blocks = grid_for(g.out_numel * splits * group);
  if (vectors)
    reduce_rows<T, State, true><<<blocks, kBlockThreads, 0, stream>>>(g, in, sink, init, group_warps, splits);
  else
    reduce_rows<T, State, false><<<blocks, kBlockThreads, 0, stream>>>(g, in, sink, init, group_warps, splits);
  EMBER_CUDA_CHECK_LAUNCH();
  if (splits > 1) merge<T>(g, sink, init, splits, vectors, stream);
}

}  // namespace

bool vector_reductions() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_CUDA_REDUCE");
    return v && std::string(v) == "vector";
  }();
  return on;
}

void reduce(ReduceOp op, DType dt, const ReduceGeometry& g, const void* in, void* out, int64_t* indices,
            int64_t correction, cudaStream_t stream) {
  if (g.out_numel <= 0) return;
  dispatch(dt, [&]<class T>() {
    const T* src = static_cast<const T*>(in);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean: {
        if constexpr (!is_floating_v<T>) {
          if (op == ReduceOp::mean)
            throw DTypeError(std::string("cuda::reduce: mean needs a floating dtype, got ") + dtype_name(dt));
        }
        using S = SumState<sum_t<T>>;
        return run<T>(g, src, Sink<S>{out, indices, nullptr, op, correction}, S{}, stream);
      }
      case ReduceOp::var: {
        if constexpr (is_floating_v<T>) {
          using S = VarState<double>;
          return run<T>(g, src, Sink<S>{out, indices, nullptr, op, correction}, S{}, stream);
        } else {
          throw DTypeError(std::string("cuda::reduce: var needs a floating dtype, got ") + dtype_name(dt));
        }
      }
      case ReduceOp::amax:
      case ReduceOp::argmax: {
        using S = ExtremeState<acc_t<T>, true>;
        return run<T>(g, src, Sink<S>{out, indices, nullptr, op, correction}, S{}, stream);
      }
      case ReduceOp::amin:
      case ReduceOp::argmin: {
        using S = ExtremeState<acc_t<T>, false>;
        return run<T>(g, src, Sink<S>{out, indices, nullptr, op, correction}, S{}, stream);
      }
    }
  });
}

}  // namespace ember::cuda
