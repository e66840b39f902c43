// CPU reductions. Three schedules:
//  * row: the innermost reduced dim has stride 1; each output reads runs of
//    contiguous memory (the run loops are reduce_runs.h);
//  * column: the innermost kept dim has stride 1 and every reduced dim is strided;
//    a block of adjacent outputs accumulates whole rows at a time, so memory is
//    read in order instead of one column at a time (reduce_columns.h: sums,
//    var's moments, extremes with positions);
//  * split: few outputs but a long reduction; threads take slices of the
//    outermost reduced dim and the partial results are combined.
// Floating sums accumulate in double; integer sums in int64; var keeps (count,
// mean, M2) per block and merges them pairwise, so it reads its input once. Where
// a reduction is cut into slices depends on the shape only, never on the thread
// count, and partials are combined in slice order: results have the same bits on
// any number of threads.
#include "kernels/cpu/reduce.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/cpu/reduce_columns.h"
#include "kernels/cpu/reduce_runs.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/team_loop.h"

namespace ember::cpu {
namespace {

// Long reductions with few outputs are cut into this many slices.
constexpr int64_t kSlices = 16;
// Columns a thread merges the slices of at a time (run_columns).
constexpr int64_t kMergeCols = 512;
// The row schedule hands threads up to this many consecutive outputs at a time.
constexpr int64_t kRowChunk = 256;

constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

using namespace reduce_detail;

// The state one output accumulates; `pos` is the linear reduced index of a value.
template <class T>
struct Acc {
  ReduceOp op;
  sum_acc_t<T> sum = 0;
  Moments moments{};                       // var
  Extreme<acc_t<T>> best{acc_t<T>{}, -1};  // max/min and their positions

  void run(const T* p, int64_t stride, int64_t n, int64_t pos0) {
    switch (op) {
      case ReduceOp::var:
        moments.merge(run_moments(p, stride, n));
        return;
      case ReduceOp::sum:
      case ReduceOp::mean:
        if (stride == 1) sum += sum_contiguous(p, n);
        else for (int64_t j = 0; j < n; ++j) sum += static_cast<sum_acc_t<T>>(static_cast<acc_t<T>>(p[j * stride]));
        return;
      case ReduceOp::amax: case ReduceOp::argmax:
        if (n > 0) run_extreme<true>(p, stride, n, pos0, best);
        return;
      case ReduceOp::amin: case ReduceOp::argmin:
        if (n > 0) run_extreme<false>(p, stride, n, pos0, best);
        return;
    }
  }
  // Merge a partial result from a later slice of the reduced range.
  void merge(const Acc& o) {
    sum += o.sum;
    moments.merge(o.moments);
    if (o.best.pos < 0) return;
    const bool wins = op == ReduceOp::amax || op == ReduceOp::argmax ? beats<true>(o.best.value, best.value)
                                                                     : beats<false>(o.best.value, best.value);
    if (best.pos < 0 || wins) best = o.best;
  }
};

template <class T>
struct Reducer {
  const ReduceGeometry& g;
  const T* in;
  ReduceOp op;

  // Visits the reduced sub-space whose outermost reduced index is in [b0, e0),
  // as runs along the innermost reduced dim.
  void walk(const T* base, int64_t b0, int64_t e0, Acc<T>& acc) const {
    const int rn = g.red_ndim;
    if (rn == 0) {
      acc.run(base, 1, 1, 0);
      return;
    }
    const int64_t inner = g.red_sizes[rn - 1], inner_stride = g.red_strides[rn - 1];
    if (rn == 1) {
      acc.run(base + b0 * inner_stride, inner_stride, e0 - b0, b0);
      return;
    }
    int64_t idx[kMaxDims] = {};
    idx[0] = b0;
    while (idx[0] < e0) {
      int64_t off = 0, pos = 0;
      for (int d = 0; d < rn - 1; ++d) {
        off += idx[d] * g.red_strides[d];
        pos = pos * g.red_sizes[d] + idx[d];
      }
      acc.run(base + off, inner_stride, inner, pos * inner);
      for (int d = rn - 2; d >= 0; --d) {
        if (++idx[d] < g.red_sizes[d] || d == 0) break;
        idx[d] = 0;
      }
    }
  }

  // Output o's offsets in the input and the output (and its index per kept dim,
  // when idx is given).
  void offsets(int64_t o, int64_t& in_off, int64_t& out_off, int64_t* idx = nullptr) const {
    in_off = 0;
    out_off = 0;
    for (int d = g.out_ndim - 1; d >= 0; --d) {
      const int64_t i = o % g.out_sizes[d];
      o /= g.out_sizes[d];
      in_off += i * g.out_strides_in[d];
      out_off += i * g.out_strides_out[d];
      if (idx) idx[d] = i;
    }
  }

  // One output, optionally with its reduced range cut into kSlices slices that
  // threads share (whether and where it is cut depends on the shape only).
  Acc<T> reduce_one(const T* base, bool split) const {
    Acc<T> acc{op};
    if (g.red_numel == 0) return acc;  // nothing to visit (and base may be null)
    const int64_t d0 = g.red_ndim ? g.red_sizes[0] : 1;
    if (!split || d0 < 2 || g.red_numel < kParallelGrain) {
      walk(base, 0, d0, acc);
      return acc;
    }
    const int64_t ns = std::min<int64_t>(d0, kSlices);
    std::vector<Acc<T>> parts(ns, Acc<T>{op});
    auto slice = [&](int64_t i) { walk(base, d0 * i / ns, d0 * (i + 1) / ns, parts[i]); };
    team_loop(ns, true, slice);
    for (const auto& p : parts) acc.merge(p);
    return acc;
  }
};

template <class T>
void store(const Acc<T>& acc, ReduceOp op, int64_t count, int64_t correction, void* out,
           int64_t* indices, int64_t out_off) {
  switch (op) {
    case ReduceOp::sum:
      if constexpr (is_floating_v<T>) static_cast<T*>(out)[out_off] = static_cast<T>(static_cast<acc_t<T>>(acc.sum));
      else static_cast<int64_t*>(out)[out_off] = acc.sum;
      return;
    case ReduceOp::mean:
      if constexpr (is_floating_v<T>)
        static_cast<T*>(out)[out_off] = static_cast<T>(static_cast<acc_t<T>>(
            count ? static_cast<double>(acc.sum) / static_cast<double>(count) : std::nan("")));
      return;
    case ReduceOp::var:
      if constexpr (is_floating_v<T>) {
        const int64_t dof = count - correction;
        const double v = dof > 0 ? acc.moments.m2 / static_cast<double>(dof) : std::nan("");
        static_cast<T*>(out)[out_off] = static_cast<T>(static_cast<acc_t<T>>(v));
      }
      return;
    case ReduceOp::amax: case ReduceOp::amin:
      static_cast<T*>(out)[out_off] = static_cast<T>(acc.best.value);
      if (indices) indices[out_off] = acc.best.pos;
      return;
    case ReduceOp::argmax: case ReduceOp::argmin:
      indices[out_off] = acc.best.pos;
      return;
  }
}

// This thread's memory for column states (one Scratch for every dtype and state: a
// thread holds one block's state, or the calling thread all slices' states, at a time).
Scratch& column_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Column schedule (reduce_columns.h): adjacent outputs are adjacent in memory,
// reduced dims are not. Each job is a block of up to kColumnBlock outputs of one
// outer row, whose State visits the reduced positions in order. With fewer blocks
// than kSlices (say, dim 0 of [N, 1024]) and work worth a team, each block's reduced
// range is cut into min(kSlices, positions) slices instead, each with its own State,
// merged in slice order: where the cuts fall depends on the shape only, so the bits
// do not depend on the threads.
template <class T, class State>
void run_columns(ReduceOp op, const ReduceGeometry& g, const T* in, void* out, int64_t* indices,
                 int64_t correction) {
  constexpr int64_t B = kColumnBlock;
  const int64_t inner = g.out_sizes[g.out_ndim - 1];
  const int64_t blocks_per_row = (inner + B - 1) / B;
  const int64_t outer = g.out_numel / inner;
  ReduceGeometry og = g;  // kept dims without the innermost, to locate each outer row
  og.out_ndim = g.out_ndim - 1;
  Reducer<T> outer_offsets{og, in, op};
  const int64_t jobs = outer * blocks_per_row;
  const int64_t work = g.out_numel * g.red_numel;
  const bool want_max = op == ReduceOp::amax || op == ReduceOp::argmax;  // for the extremes
  // An empty reduction reads nothing, and its input may have no memory at all:
  // offsetting a null pointer is undefined, so it is not offset.
  const auto at = [&](int64_t off) { return g.red_numel == 0 ? in : in + off; };
  // Job j's block: where it starts in the input and the output, and its width.
  const auto locate = [&](int64_t job, int64_t& in_off, int64_t& out_off) {
    const int64_t c0 = (job % blocks_per_row) * B;
    outer_offsets.offsets(job / blocks_per_row, in_off, out_off);
    in_off += c0;
    out_off += c0;
    return std::min(B, inner - c0);
  };
  const auto finish = [&](const State& s, int64_t out_off, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      Acc<T> a{op};
      s.fill(j, a);
      store<T>(a, op, g.red_numel, correction, out, indices, out_off + j);
    }
  };
  // The thread team's loops go through team_loop (team_loop.h: one OpenMP region for
  // every instantiation).
  if (jobs >= kSlices || work < kParallelGrain) {
    auto block = [&](int64_t job) {
      int64_t in_off, out_off;
      const int64_t n = locate(job, in_off, out_off);
      State s(n, static_cast<char*>(column_scratch().get(State::bytes(n))), want_max);
      s.add(g, at(in_off), 0, g.red_numel);
      finish(s, out_off, 0, n);
    };
    team_loop(jobs, work >= kParallelGrain, block);
    return;
  }
  const int64_t ns = std::min<int64_t>(kSlices, g.red_numel);
  for (int64_t job = 0; job < jobs; ++job) {
    int64_t in_off, out_off;
    const int64_t n = locate(job, in_off, out_off);
    char* mem = static_cast<char*>(column_scratch().get(static_cast<size_t>(ns) * State::bytes(n)));
    State parts[kSlices];
    // Each slice's state is zeroed by the thread that fills it.
    auto slice = [&](int64_t i) {
      parts[i] = State(n, mem + i * State::bytes(n), want_max);
      parts[i].add(g, at(in_off), g.red_numel * i / ns, g.red_numel * (i + 1) / ns);
    };
    team_loop(ns, true, slice);
    // The slices merge into the first and the outputs are stored by ranges of
    // kMergeCols columns, in parallel: each range takes slices 1, 2, ... in order, on
    // its own copy of the first slice's state (its count), so the bits are those of
    // merging whole states one after another. On one thread, merging 16 slices of
    // bfloat16 var over dim 0 of [4096, 4096] took a fifth of the reduction's time.
    const int64_t ranges = (n + kMergeCols - 1) / kMergeCols;
    auto merge = [&](int64_t c) {
      const int64_t j0 = c * kMergeCols, j1 = std::min(n, j0 + kMergeCols);
      State s = parts[0];
      for (int64_t i = 1; i < ns; ++i) s.merge(parts[i], j0, j1);
      finish(s, out_off, j0, j1);
    };
    team_loop(ranges, ranges > 1, merge);
  }
}

// Takes the column schedule where it applies: the innermost kept dim contiguous in
// the input and the output, at least 16 wide, and no reduced dim contiguous. Sums,
// means and the extremes of every dtype, var of the floating ones.
template <class T>
bool try_column(ReduceOp op, const ReduceGeometry& g, const T* in, void* out, int64_t* indices,
                int64_t correction) {
  if (g.out_ndim == 0 || g.red_ndim == 0 || g.out_strides_in[g.out_ndim - 1] != 1) return false;
  if (g.out_strides_out[g.out_ndim - 1] != 1) return false;
  for (int d = 0; d < g.red_ndim; ++d)
    if (g.red_strides[d] == 1) return false;
  if (g.out_sizes[g.out_ndim - 1] < 16) return false;
  switch (op) {
    case ReduceOp::sum: case ReduceOp::mean:
      run_columns<T, ColumnSums<T>>(op, g, in, out, indices, correction);
      return true;
    case ReduceOp::var:
      if constexpr (is_floating_v<T>) {
        run_columns<T, ColumnMoments<T>>(op, g, in, out, indices, correction);
        return true;
      }
      return false;
    case ReduceOp::amax: case ReduceOp::argmax: case ReduceOp::amin: case ReduceOp::argmin:
      run_columns<T, ColumnExtremes<T>>(op, g, in, out, indices, correction);
      return true;
  }
  return false;
}

// The row schedule's loop: body(in_off, out_off) for every output, on the team
// when the work is worth it. Threads take chunks of consecutive outputs; a chunk's
// first output's offsets cost a division per kept dim, the rest an odometer step.
// Each output is computed alone, so the chunks change no bits.
template <class Body>
void for_outputs(const ReduceGeometry& g, const Body& body) {
  const Reducer<char> r{g, nullptr, ReduceOp::sum};  // offsets() only
  const int64_t work = g.out_numel * std::max<int64_t>(g.red_numel, 1);
  const int64_t chunk = std::clamp<int64_t>(g.out_numel / (8 * int64_t(get_num_threads())), 1, kRowChunk);
  auto outputs = [&](int64_t c) {
    int64_t in_off, out_off, idx[kMaxDims];
    const int64_t o0 = c * chunk, o1 = std::min(g.out_numel, o0 + chunk);
    r.offsets(o0, in_off, out_off, idx);
    for (int64_t o = o0; o < o1; ++o) {
      body(in_off, out_off);
      for (int d = g.out_ndim - 1; d >= 0; --d) {  // the next output's offsets
        in_off += g.out_strides_in[d];
        out_off += g.out_strides_out[d];
        if (++idx[d] < g.out_sizes[d]) break;
        in_off -= g.out_sizes[d] * g.out_strides_in[d];
        out_off -= g.out_sizes[d] * g.out_strides_out[d];
        idx[d] = 0;
      }
    }
  };
  team_loop(cdiv(g.out_numel, chunk), work >= kParallelGrain, outputs);
}

}  // namespace

void reduce(ReduceOp op, DType dt, const ReduceGeometry& g, const void* in, void* out,
            int64_t* indices, int64_t correction) {
  dispatch(dt, [&]<class T>() {
    const T* src = static_cast<const T*>(in);
    if (g.out_numel == 0) return;
    if (try_column<T>(op, g, src, out, indices, correction)) return;
    Reducer<T> r{g, src, op};
    // An empty reduction (sum over a size-0 dim) reads nothing, and its input may have
    // no memory at all: offsetting a null pointer is undefined, so it is not offset.
    const auto at = [&](int64_t off) { return g.red_numel == 0 ? src : src + off; };
    if (g.out_numel < kSlices && g.red_numel >= kParallelGrain) {  // few long outputs: each cut into slices
      for (int64_t o = 0; o < g.out_numel; ++o) {
        int64_t in_off, out_off;
        r.offsets(o, in_off, out_off);
        store<T>(r.reduce_one(at(in_off), true), op, g.red_numel, correction, out, indices, out_off);
      }
      return;
    }
    // The sum or mean of float32 rows, one contiguous run each (a global average
    // pool's 14x14 planes, a sum over the last dim): one sum_contiguous and one
    // store per output, the bits of the general loop below without its per-output
    // state (Acc, walk, store's switch), which cost a 196-value row about as much
    // as its sum.
    if constexpr (std::is_same_v<T, float>) {
      if ((op == ReduceOp::sum || op == ReduceOp::mean) && g.red_ndim == 1 && g.red_strides[0] == 1 &&
          g.red_numel > 0) {
        const int64_t n = g.red_numel;
        float* y = static_cast<float*>(out);
        return for_outputs(g, [&](int64_t in_off, int64_t out_off) {
          const double s = sum_contiguous(src + in_off, n);
          y[out_off] = static_cast<float>(op == ReduceOp::mean ? s / static_cast<double>(n) : s);
        });
      }
    }
    for_outputs(g, [&](int64_t in_off, int64_t out_off) {
      store<T>(r.reduce_one(at(in_off), false), op, g.red_numel, correction, out, indices, out_off);
    });
  });
}

}  // namespace ember::cpu
