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
#include "kernels/cuda/reduce.h"

#include <algorithm>
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

// Groups of `group_warps` warps (1, or the whole block) take (output, split) items
// in a grid-stride loop; the loop bounds are the same for every thread of a group,
// so the shuffles and barriers below are reached by all of them.
template <class T, class State>
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

// Merges each output's splits: one warp per output, lane l taking splits l, l+32, ...
// in order, then the warp's shuffle tree; a fixed order, so fixed rounding.
template <class T, class State>
__global__ void __launch_bounds__(kBlockThreads)
    merge_splits(const __grid_constant__ Geometry g, Sink<State> sink, State init, int64_t splits) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  Sink<State> final_sink = sink;
  final_sink.partial = nullptr;
  for (int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; o < g.out_numel;
       o += warps) {  // o is the same for every lane of a warp
    State st = init;
    for (int64_t s = lane; s < splits; s += kWarp) st.merge(sink.partial[s * g.out_numel + o]);
    st = warp_merge(st);
    if (lane == 0) deliver<T>(st, final_sink, g, o, 0);
  }
}

// ---------------------------------------------------------------------------------
// Host: pick a schedule and a split count

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// More splits than this only lengthen the merge (and grid y is at most 65535).
constexpr int64_t kMaxSplits = 1024;

template <class T, class State>
void run(const ReduceGeometry& rg, const T* in, Sink<State> sink, State init, cudaStream_t stream) {
  const Geometry g = reversed(rg);
  // Threads that fill every SM once (2048 resident threads each): the aim of a split.
  const int64_t target = static_cast<int64_t>(properties().multiProcessorCount) * 2048;
  const bool red_contig = g.red_in[0] == 1 && g.red_sizes[0] > 1;
  const bool out_contig = g.out_ndim > 0 && g.out_in[0] == 1;
  // Short reductions, and contiguous outputs over strided reductions, go to columns.
  const bool columns =
      g.red_numel < 32 || (!red_contig && out_contig && g.out_numel >= kWarp);
  int64_t splits = 1;
  if (columns) {
    const int64_t blocks_x = ceil_div(g.out_numel, kBlockThreads);
    if (blocks_x * kBlockThreads < target && g.red_numel >= 128)
      splits = std::clamp<int64_t>(ceil_div(target, blocks_x * kBlockThreads), 1,
                                   std::min<int64_t>(g.red_numel / 64, kMaxSplits));
    std::optional<ScratchBuffer> scratch;  // back to the cache after the launches are queued
    if (splits > 1) {
      scratch.emplace(splits * g.out_numel * sizeof(State), current_device_index(), stream);
      sink.partial = scratch->as<State>();
    }
    const dim3 grid(splits > 1 ? static_cast<unsigned>(blocks_x) : grid_for(g.out_numel),
                    static_cast<unsigned>(splits));
    reduce_columns<T><<<grid, kBlockThreads, 0, stream>>>(g, in, sink, init);
    EMBER_CUDA_CHECK_LAUNCH();
    if (splits > 1) {
      merge_splits<T><<<grid_for(g.out_numel * kWarp), kBlockThreads, 0, stream>>>(g, sink, init, splits);
      EMBER_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  const int group_warps = g.red_numel >= 2048 ? kBlockThreads / kWarp : 1;
  const int64_t group = group_warps * kWarp;
  if (g.out_numel * group < target && g.red_numel >= 8192)
    splits = std::clamp<int64_t>(ceil_div(target, g.out_numel * group), 1,
                                 std::min<int64_t>(g.red_numel / 4096, kMaxSplits));
  std::optional<ScratchBuffer> scratch;
  if (splits > 1) {
    scratch.emplace(splits * g.out_numel * sizeof(State), current_device_index(), stream);
    sink.partial = scratch->as<State>();
  }
  reduce_rows<T><<<grid_for(g.out_numel * splits * group), kBlockThreads, 0, stream>>>(g, in, sink, init,
                                                                                       group_warps, splits);
  EMBER_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    merge_splits<T><<<grid_for(g.out_numel * kWarp), kBlockThreads, 0, stream>>>(g, sink, init, splits);
    EMBER_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

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
