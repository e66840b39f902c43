// 2-D convolution as a GEMM over the im2col matrix. With K = (c_in/groups)*kh*kw,
// P = h_out*w_out and col[K, P] (col[(ci,ky,kx), p] = the input pixel that tap meets
// at output pixel p, zero in the padding), for each image and group:
//   forward          y[c_out, P]   = W[c_out, K] . col   (+ bias)
//   input gradient   dcol[K, P]    = W^T . gy, each entry added back to its pixel
//   weight gradient  dW[c_out, K] += gy . col^T
//
// Two paths compute these per image. Stride 1 (the FashionMNIST net, and most 3x3
// layers) never builds col: the direct kernels lay the output out on the input's
// grid and read the input in place (conv2d_direct_impl.h, compiled once per
// instruction set in conv2d_direct_<isa>.cpp). Other strides build col and call
// cpu::gemm (conv2d_im2col.cpp). This file owns what both share: the choice of path
// and instruction set, threads, scratch, and the weight gradient's summation order.
//
// The net's products are tiny (6 x 576 x 25, 12 x 64 x 150 per image), so threads
// take whole images, each running the single-threaded kernels (cpu::gemm stays on
// its thread inside a parallel region); the weight gradient is summed per image
// range and the partial sums added at the end. A single image large enough for the
// team has its forward pass's output channels shared out instead.
#include "kernels/cpu/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/base/functors.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/scratch.h"

namespace ember::cpu::conv2d_detail {

TeamRates& conv2d_team_rates() {
  static TeamRates rates;
  return rates;
}

namespace {

// Below this many multiply-adds in the whole call the batch runs on one thread:
// waking the team costs a few microseconds, about one small image's work.
constexpr double kParallelMacs = 200000;

// ---------------------------------------------------------------------------------
// Choosing kernels.

const PerIsa<DirectKernels>& direct_tables() {
  static const PerIsa<DirectKernels> tables(
      direct_kernels_generic(), direct_kernels_avx2(),
      direct_kernels_avx512(), nullptr);
  return tables;
}

bool is_direct(const Conv2dShape& s) { return s.stride_h == 1 && s.stride_w == 1; }

// ReLU over n values in place, the relu op's bits (NaN kept, -0 to +0).
template <class T>
void relu_in_place(T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = functors::relu{}(p[i]);
}

// The path for this shape; the direct kernels of the active instruction set.
template <class T>
const Kernels<T>& kernels_for(const Conv2dShape& s) {
  if (!is_direct(s)) return im2col_kernels<T>();
  const DirectKernels& k = direct_tables().pick();
  if constexpr (sizeof(T) == 4) return k.f32;
  else return k.f64;
}

// ---------------------------------------------------------------------------------
// Threads and scratch.

thread_local Scratch scratch;

// How many threads a batch of n images with `macs` multiply-adds each should use.
int team_size(int64_t n, double macs) {
  if (n < 2 || omp_in_parallel()) return 1;
  if (double(n) * macs < kParallelMacs) return 1;
  return int(std::min<int64_t>(n, get_num_threads()));
}

// How many fixed image ranges the weight gradient of a batch of n is cut into: up
// to kWeightRanges, with at least kRangeImages images each (every range pays for
// zeroing and summing its accumulators, 116 KB of vector sums for the seed net's
// conv2: at 16 images a range, batch 100 made 6 ranges and conv2's bfloat16 weight
// gradient took 100 us on 2 threads, at 50 images 2 ranges and 84 us; float32 149
// and 135), and fewer when the partials would take more than kWeightPartialBytes in
// all. Small batches still use every thread: each range is also split by output
// channels (backward_weight_run).
constexpr int64_t kWeightRanges = 16;
constexpr int64_t kRangeImages = 50;
constexpr int64_t kWeightPartialBytes = 64 << 20;
int64_t weight_ranges(int64_t n, int64_t part_bytes) {
  const int64_t by_memory = 1 + kWeightPartialBytes / std::max<int64_t>(part_bytes, 1);
  return std::clamp<int64_t>(std::min({kWeightRanges, by_memory, n / kRangeImages}), 1, std::max<int64_t>(n, 1));
}

// Runs fn(ctx, lo, hi, slice) over contiguous image ranges covering [0, n) on up to
// nt threads, each with its own `slice_bytes` of scratch, each range sized by its
// thread's rate (team_rates.h; the callers are the forward and the input gradient,
// whose outputs each come from one image). A cpu::gemm workspace that cannot grow
// throws inside the team: the first exception is rethrown here.
// One copy for every caller (the thread team and its error handling are library
// size, so for_ranges below only adapts the callers' lambdas to it).
using RangeFn = void (*)(const void* ctx, int64_t lo, int64_t hi, void* ws);
[[gnu::noinline]] void run_ranges(int64_t n, int nt, size_t slice_bytes, RangeFn fn, const void* ctx) {
  char* ws = static_cast<char*>(scratch.get(slice_bytes * size_t(nt)));
  if (nt <= 1) return fn(ctx, 0, n, ws);
  nt = std::min(nt, TeamRates::kMax);  // teams past 64 threads use 64
  TeamRates& rates = conv2d_team_rates();
  int64_t bounds[TeamRates::kMax + 1];
  rates.split(n, nt, bounds);
  int64_t took[TeamRates::kMax] = {};
  std::exception_ptr error;
  int got = nt;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num();
#pragma omp single nowait
    got = omp_get_num_threads();
    try {
      // A smaller team than asked (the runtime's thread limit): even ranges.
      const int64_t lo = omp_get_num_threads() == nt ? bounds[tid] : n * tid / omp_get_num_threads();
      const int64_t hi = omp_get_num_threads() == nt ? bounds[tid + 1] : n * (tid + 1) / omp_get_num_threads();
      const auto t0 = std::chrono::steady_clock::now();
      fn(ctx, lo, hi, ws + size_t(tid) * slice_bytes);
      took[tid] = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    } catch (...) {
#pragma omp critical(ember_conv2d_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  if (got == nt) {
    int64_t images[TeamRates::kMax];
    for (int t = 0; t < nt; ++t) images[t] = bounds[t + 1] - bounds[t];
    rates.update(nt, images, took);
  }
}

// body(lo, hi, T* slice) over image ranges, slices of slice_elems T each.
template <class T, class Body>
void for_ranges(int64_t n, int nt, int64_t slice_elems, const Body& body) {
  const int64_t slice = round_up(std::max<int64_t>(slice_elems, 1), 64 / int64_t(sizeof(T)));
  run_ranges(n, nt, sizeof(T) * size_t(slice),
             [](const void* ctx, int64_t lo, int64_t hi, void* ws) { (*static_cast<const Body*>(ctx))(lo, hi, static_cast<T*>(ws)); },
             &body);
}

// fn(ctx, item, thread) for items [0, items) on nt threads, items dealt round-robin
// (schedule(static, 1)); the first exception is rethrown after the team.
using ItemFn = void (*)(const void* ctx, int64_t item, int tid);
[[gnu::noinline]] void run_items(int64_t items, int nt, ItemFn fn, const void* ctx) {
  if (nt <= 1) {
    for (int64_t item = 0; item < items; ++item) fn(ctx, item, 0);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int64_t item = 0; item < items; ++item) {
    try {
      fn(ctx, item, omp_get_thread_num());
    } catch (...) {
#pragma omp critical(ember_conv2d_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// One image on several threads: whole images cannot be shared out, so the threads
// split its output channels (one group only), each running the single-threaded
// kernel on its share as a convolution of its own: its rows of the weight, its
// planes of y. Shares are multiples of 4 channels and at least kShareChannels, so
// the kernels' 12-row tiles stay mostly full. Batch 1 of a 64-channel 3x3 layer at
// 14x14 ran on one thread of two before (160 us for two such layers). With a
// packed weight (w_block) a share may start inside a block: its w is that block's
// start and Args::w_lead its first channel's place there.
constexpr int64_t kShareChannels = 16;
template <class T>
bool forward_channel_shares(const Conv2dShape& s, const Conv2dDims& d, const Kernels<T>& k, const T* x, const T* w,
                            int64_t w_block, const T* bias, T* y, bool relu) {
  // The stride-1 kernels only: the im2col path would build the whole image's
  // columns once per share, and its cpu::gemm already uses the team for one image.
  if (s.n != 1 || s.groups != 1 || !is_direct(s) || omp_in_parallel()) return false;
  const double macs = double(s.c_out) * double(d.K) * double(d.P);
  const int parts = int(std::min<int64_t>({get_num_threads(), s.c_out / kShareChannels, TeamRates::kMax}));
  if (parts < 2 || macs < kParallelMacs * parts) return false;
  struct Share {
    Conv2dShape s;
    int64_t c0 = 0;
  };
  std::vector<Share> shares(static_cast<size_t>(parts));
  int64_t slice = 0;
  for (int i = 0; i < parts; ++i) {
    Share& sh = shares[size_t(i)];
    sh.c0 = s.c_out * i / parts / 4 * 4;
    const int64_t c1 = i + 1 == parts ? s.c_out : s.c_out * (i + 1) / parts / 4 * 4;
    sh.s = s;
    sh.s.c_out = c1 - sh.c0;
  }
  // Every share has the first one's geometry but its channel count: size the
  // scratch for the largest.
  std::vector<Conv2dDims> dims;
  std::vector<Direct> grids;
  dims.reserve(size_t(parts));
  grids.reserve(size_t(parts));
  for (const Share& sh : shares) {
    dims.emplace_back(sh.s);
    grids.push_back(Direct(sh.s, dims.back()));
    Args<T> a{&sh.s, &dims.back(), &grids.back(), x, w, bias, nullptr, y};
    a.w_block = w_block;
    slice = std::max(slice, round_up(std::max<int64_t>(k.forward_scratch(a), 1), 64 / int64_t(sizeof(T))));
  }
  T* ws = static_cast<T*>(scratch.get(sizeof(T) * size_t(slice) * size_t(parts)));
  struct Ctx {
    const std::vector<Share>* shares;
    const std::vector<Conv2dDims>* dims;
    const std::vector<Direct>* grids;
    const Kernels<T>* k;
    const T *x, *w, *bias;
    T *y, *ws;
    int64_t K, P, slice, w_block;
    bool relu;
  } ctx{&shares, &dims, &grids, &k, x, w, bias, y, ws, d.K, d.P, slice, w_block, relu};
  run_items(parts, parts, [](const void* c, int64_t i, int) {
    const Ctx& t = *static_cast<const Ctx*>(c);
    const Share& sh = (*t.shares)[size_t(i)];
    // The share's weight: from its first row of the plain layout, or from the
    // start of the packed block that holds its first channel.
    const int64_t lead = t.w_block ? sh.c0 % t.w_block : 0;
    Args<T> a{&sh.s, &(*t.dims)[size_t(i)], &(*t.grids)[size_t(i)], t.x, t.w + (sh.c0 - lead) * t.K,
              t.bias ? t.bias + sh.c0 : nullptr, nullptr, t.y + sh.c0 * t.P};
    a.w_block = t.w_block;
    a.w_lead = lead;
    t.k->forward(a, 0, 1, t.ws + i * t.slice);
    if (t.relu) relu_in_place(t.y + sh.c0 * t.P, sh.s.c_out * t.P);
  }, &ctx);
  return true;
}

// The channel-lane forward (conv2d_lanes_impl.h) computes no padding column but
// needs the weight packed, one pass over it. Given no packed weight (the caller's,
// packed once: conv2d_pack_weight), small batches keep the grid tiles. On
// conv_block.onnx (two 64-channel 3x3 layers at 14x14, 2 threads) the lane tiles,
// packing per call, lost at batch 2 (the model 256-264 us against 229-232), broke
// even at 3 to 5 and won from 6 (596-624 against 622-714) on: batches of at least
// this many output positions take them.
constexpr int64_t kLanePositions = 1024;

// The inverse of pack_lane_weights (conv2d_lanes_impl.h): the packed
// wl[g][co / bw][k][co % bw] back to w[g * cog + co][k], for the GEMM path given
// only the packed weight.
template <class T>
void unpack_lane_weights(const Conv2dDims& d, const T* wl, T* w) {
  const int64_t bw = pack_block(d.cog);
  for (int64_t c0 = 0; c0 < d.G * d.cog; c0 += bw)
    for (int64_t c = 0; c < bw; ++c)
      for (int64_t k = 0; k < d.K; ++k) w[(c0 + c) * d.K + k] = wl[c0 * d.K + k * bw + c];
}

// How many threads share one image's output rows on the lane tiles: up to one per
// row and one per kParallelMacs multiply-adds; below 2 the image is not shared
// this way (forward_impl then tries the grid tiles' channel shares).
template <class T>
int lane_row_parts(const Conv2dShape& s, const Conv2dDims& d) {
  if (s.n != 1 || omp_in_parallel()) return 1;
  const double macs = double(s.c_out) * double(d.K) * double(d.P);
  return int(std::min<double>({double(get_num_threads()), double(s.h_out), macs / kParallelMacs}));
}

// One image on `parts` threads with the lane tiles: the threads split its output
// rows, each padding the input rows its own output rows read into a workspace of
// its own and reading the whole packed weight, which stays in each core's L2.
template <class T>
void forward_lane_rows(const Args<T>& a, const Kernels<T>& k, int parts) {
  const int64_t slice = round_up(std::max<int64_t>(k.forward_scratch(a), 1), 64 / int64_t(sizeof(T)));
  T* ws = static_cast<T*>(scratch.get(sizeof(T) * size_t(slice) * size_t(parts)));
  struct Ctx {
    const Args<T>* a;
    const Kernels<T>* k;
    T* ws;
    int64_t slice, rows;
    int parts;
  } ctx{&a, &k, ws, slice, a.s->h_out, parts};
  run_items(parts, parts, [](const void* c, int64_t i, int) {
    const Ctx& t = *static_cast<const Ctx*>(c);
    Args<T> part = *t.a;
    part.lane_oy0 = t.rows * i / t.parts;
    part.lane_oy1 = t.rows * (i + 1) / t.parts;
    t.k->forward(part, 0, 1, t.ws + i * t.slice);
  }, &ctx);
}

// With relu, each image's output goes through ReLU on the thread that made it, while
// it is still in that core's cache: one pass fewer over memory than the ops apart.
// packed (nullable): the weight as conv2d_pack_weight lays it out; given it, the
// stride-1 kernels read it and not w (the grid tiles through strides,
// Args::w_block). The GEMM of other strides reads w, or packed laid back out once
// per call where w is null (its few-row products, a group of 8 channels or fewer,
// sum in an order that depends on the weight's strides). No ONNX plan makes such a
// call: it packs stride-1 weights only.
template <class T>
void forward_impl(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y, bool relu, const T* packed) {
  const Conv2dDims d(s);
  if (s.n <= 0 || s.c_out <= 0 || d.P <= 0) return;
  const bool direct = is_direct(s);
  if (packed && !direct && !w) {
    thread_local Scratch plain;
    T* wp = static_cast<T*>(plain.get(sizeof(T) * size_t(s.c_out * d.K)));
    unpack_lane_weights(d, packed, wp);
    w = wp;
  }
  if (!direct) packed = nullptr;
  const int64_t w_block = packed ? pack_block(d.cog) : 0;
  if (packed) w = packed;
  const Kernels<T>& k = kernels_for<T>(s);
  const bool lanes = direct && k.lane_fits && k.lane_fits(s, d) && (packed || s.n * d.P >= kLanePositions);
  // One image on a team: its rows on the lane tiles given a packed weight, else its
  // channels on the grid tiles (a 1-D convolution's single row, say), else the one
  // thread below. Packing per call ate the lane tiles' gain on one image (2 threads,
  // 3x3, against the channel shares: 64 channels at 32x32 218-225 us against 211,
  // 128 at 28x28 658-679 against 657-665, 64 at 56x56 607-618 against 629-634).
  const int row_parts = lanes && packed ? lane_row_parts<T>(s, d) : 1;
  if (row_parts < 2 && forward_channel_shares(s, d, k, x, w, w_block, bias, y, relu)) return;
  const Direct v = direct ? Direct(s, d) : Direct();
  Args<T> a{&s, &d, &v, x, w, bias, nullptr, y};
  a.w_block = w_block;
  if (lanes) {
    if (!packed) {
      thread_local Scratch own;
      T* wl = static_cast<T*>(own.get(sizeof(T) * size_t(s.c_out * d.K)));
      k.pack_lanes(d, w, wl);
      packed = wl;
    }
    a.w_lanes = packed;
    a.lane_relu = relu;
    if (row_parts >= 2) return forward_lane_rows(a, k, row_parts);
  }
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<T>(s.n, nt, k.forward_scratch(a), [&](int64_t lo, int64_t hi, T* ws) {
    if (!relu || a.lane_relu) return k.forward(a, lo, hi, ws);
    for (int64_t i = lo; i < hi; ++i) {
      k.forward(a, i, i + 1, ws);
      relu_in_place(y + i * d.y_img, d.y_img);
    }
  });
}

// The fused ReLU + 2x2 max-pool forward. The direct kernels pool each image's
// output from their scratch grid; the im2col path writes one image's output to
// scratch and pools it from there.
template <class T>
void relu_pool_forward_impl(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y, uint8_t* window,
                            bool round_bf16) {
  const Conv2dDims d(s);
  if (s.n <= 0 || s.c_out <= 0 || s.h_out < 2 || s.w_out < 2) return;
  const bool direct = is_direct(s);
  const Direct v = direct ? Direct(s, d) : Direct();
  const Kernels<T>& k = kernels_for<T>(s);
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  if (direct) {
    Args<T> a{&s, &d, &v, x, w, bias, nullptr, y};
    a.relu_pool = true;
    a.window = window;
    a.round_bf16 = round_bf16;
    for_ranges<T>(s.n, nt, k.forward_scratch(a), [&](int64_t lo, int64_t hi, T* ws) { k.forward(a, lo, hi, ws); });
    return;
  }
  const DirectKernels& dk = direct_tables().pick();
  const ReluPool<T>& rp = [&]() -> const ReluPool<T>& {
    if constexpr (sizeof(T) == 4) return dk.relu_pool_f32;
    else return dk.relu_pool_f64;
  }();
  const int64_t pooled = s.c_out * (s.h_out / 2) * (s.w_out / 2);
  const Args<T> whole{&s, &d, &v, x, w, bias, nullptr, y};
  for_ranges<T>(s.n, nt, k.forward_scratch(whole) + d.y_img, [&](int64_t lo, int64_t hi, T* ws) {
    T* conv = ws + k.forward_scratch(whole);
    for (int64_t i = lo; i < hi; ++i) {
      const Args<T> one{&s, &d, &v, x + i * d.x_img, w, bias, nullptr, conv};
      k.forward(one, 0, 1, ws);
      rp.forward_planes(conv, s.c_out, d.P, s.w_out, s.h_out, s.w_out, y + i * pooled,
                        window ? window + i * pooled : nullptr, round_bf16);
    }
  });
}

template <class T>
void relu_pool_backward_impl(const Conv2dShape& s, const T* gy, const uint8_t* window, T* gconv) {
  const int64_t planes = s.n * s.c_out;
  if (planes <= 0 || s.h_out <= 0 || s.w_out <= 0) return;
  const DirectKernels& dk = direct_tables().pick();
  const ReluPool<T>& rp = [&]() -> const ReluPool<T>& {
    if constexpr (sizeof(T) == 4) return dk.relu_pool_f32;
    else return dk.relu_pool_f64;
  }();
  const int64_t pooled = (s.h_out / 2) * (s.w_out / 2);
  // A memory pass: one slice of planes per thread when it is big enough for a team.
  const bool team = planes * s.h_out * s.w_out >= kParallelGrain && !omp_in_parallel();
  const int64_t slices = team ? get_num_threads() : 1;
  parallel_rows(slices, team, [&](int64_t j) {
    const int64_t p0 = planes * j / slices, p1 = planes * (j + 1) / slices;
    rp.backward_planes(gy + p0 * pooled, window + p0 * pooled, p1 - p0, s.h_out, s.w_out,
                       gconv + p0 * s.h_out * s.w_out);
  });
}

// The fused block's backward for the im2col path, whose kernels read a stored
// output gradient: the pooled gradient spread into one first.
template <class T>
std::vector<T> unpooled(const Conv2dShape& s, const T* gy, const uint8_t* window) {
  std::vector<T> g(size_t(s.n * s.c_out * s.h_out * s.w_out));
  relu_pool_backward_impl(s, gy, window, g.data());
  return g;
}

// window (nullable): gy is the fused block's pooled gradient (Args::gy_window).
template <class T>
void backward_input_impl(const Conv2dShape& s, const T* gy, const T* w, T* gx, const uint8_t* window = nullptr) {
  const Conv2dDims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  if (s.c_out <= 0 || d.P <= 0) {
    std::fill(gx, gx + s.n * d.x_img, T(0));
    return;
  }
  const bool direct = is_direct(s);
  if (window && !direct) return backward_input_impl(s, unpooled(s, gy, window).data(), w, gx);
  const Direct v = direct ? Direct(s, d) : Direct();
  const Kernels<T>& k = kernels_for<T>(s);
  Args<T> a{&s, &d, &v, nullptr, w, nullptr, gy, gx};
  a.gy_window = window;
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<T>(s.n, nt, k.backward_input_scratch(a),
                [&](int64_t lo, int64_t hi, T* ws) { k.backward_input(a, lo, hi, ws); });
}

// Runs a weight-gradient kernel table k (Kernels<T>, or DirectBf16Kernels with
// float32 scratch and sums: Acc) over the batch into gw and gb (nullable).
template <class T, class Acc, class K>
void backward_weight_run(const K& k, const Args<T>& a, Acc* gw, Acc* gb) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  const int64_t w_elems = s.c_out * d.K;
  // The batch is cut into ranges fixed by the shape, never by the thread count:
  // each range sums its images into its own partial dW and db, and the partials
  // are added in range order. So the gradient has the same bits on 1 thread or 64,
  // and a seeded training run does not change with --threads. (forward and
  // backward_input need no such care: each of their outputs comes from one image.)
  const int64_t work = round_up(k.backward_weight_scratch(a), 16);
  const int64_t part = round_up(w_elems + s.c_out, 16);
  const int64_t ranges = weight_ranges(s.n, part * int64_t(sizeof(Acc)));
  // With fewer ranges than threads (small batches), each range's weight is split
  // into blocks of channel tiles too. That split may follow the thread count: it
  // decides which thread computes an element, not how the element is summed.
  const int team = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  const int64_t units = k.backward_weight_units(a);
  const int64_t blocks = std::clamp<int64_t>(cdiv(team, ranges), 1, units);
  const int64_t items = ranges * blocks;
  const int nt = int(std::min<int64_t>(team, items));
  // Scratch: each thread's kernel workspace, then the partials of ranges 1..;
  // range 0 sums straight into the outputs.
  Acc* ws = static_cast<Acc*>(scratch.get(sizeof(Acc) * size_t(work * nt + part * (ranges - 1))));
  Acc* partials = ws + work * nt;
  auto run_item = [&](int64_t item, int tid) {
    const int64_t r = item / blocks, b = item % blocks;
    Acc* pw = r == 0 ? gw : partials + (r - 1) * part;
    Acc* pb = !gb ? nullptr : r == 0 ? gb : partials + (r - 1) * part + w_elems;
    k.backward_weight(a, s.n * r / ranges, s.n * (r + 1) / ranges, ws + tid * work, pw, pb, units * b / blocks,
                      units * (b + 1) / blocks);
  };
  run_items(items, nt,
            [](const void* ctx, int64_t item, int tid) { (*static_cast<const decltype(run_item)*>(ctx))(item, tid); },
            &run_item);
  for (int64_t r = 1; r < ranges; ++r) {
    const Acc* pw = partials + (r - 1) * part;
    for (int64_t j = 0; j < w_elems; ++j) gw[j] += pw[j];
    if (gb)
      for (int64_t co = 0; co < s.c_out; ++co) gb[co] += pw[w_elems + co];
  }
}

template <class T>
void backward_weight_impl(const Conv2dShape& s, const T* gy, const T* x, T* gw, T* gb,
                          const uint8_t* window = nullptr) {
  const Conv2dDims d(s);
  const int64_t w_elems = s.c_out * d.K;
  if (s.n <= 0 || d.P <= 0 || s.c_out <= 0) {
    std::fill(gw, gw + std::max<int64_t>(w_elems, 0), T(0));
    if (gb) std::fill(gb, gb + std::max<int64_t>(s.c_out, 0), T(0));
    return;
  }
  const bool direct = is_direct(s);
  if (window && !direct) return backward_weight_impl(s, unpooled(s, gy, window).data(), x, gw, gb);
  const Direct v = direct ? Direct(s, d) : Direct();
  Args<T> a{&s, &d, &v, x, nullptr, nullptr, gy, nullptr};
  a.gy_window = window;
  backward_weight_run<T, T>(kernels_for<T>(s), a, gw, gb);
}

// ---------------------------------------------------------------------------------
// bfloat16 on the stride-1 kernels of conv2d_direct_bf16.cpp: float32 sums, each
// result rounded to bfloat16 once.

const DirectBf16Kernels* bf16_direct_table() {
  return active_isa() >= Isa::avx512_bf16 ? direct_kernels_bf16() : nullptr;
}

const uint16_t* bits(const void* p) { return static_cast<const uint16_t*>(p); }

// The forward (fused with ReLU and pooling when window or relu_pool say so) and the
// input gradient (from the pooled gradient when window is set) on one table.
void bf16_forward(const Conv2dShape& s, const void* x, const void* w, const void* bias, void* y, bool relu_pool,
                  uint8_t* window) {
  const Conv2dDims d(s);
  if (s.n <= 0 || s.c_out <= 0 || d.P <= 0) return;
  const Direct v(s, d);
  const DirectBf16Kernels& k = *bf16_direct_table();
  Args<uint16_t> a{&s, &d, &v, bits(x), bits(w), bits(bias), nullptr, static_cast<uint16_t*>(y)};
  a.relu_pool = relu_pool;
  a.window = window;
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<float>(s.n, nt, k.forward_scratch(a), [&](int64_t lo, int64_t hi, float* ws) { k.forward(a, lo, hi, ws); });
}

void bf16_backward_input(const Conv2dShape& s, const void* gy, const uint8_t* window, const void* w, void* gx) {
  const Conv2dDims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  if (s.c_out <= 0 || d.P <= 0) {
    std::fill(static_cast<BFloat16*>(gx), static_cast<BFloat16*>(gx) + s.n * d.x_img, BFloat16(0.f));
    return;
  }
  const Direct v(s, d);
  const DirectBf16Kernels& k = *bf16_direct_table();
  Args<uint16_t> a{&s, &d, &v, nullptr, bits(w), nullptr, bits(gy), static_cast<uint16_t*>(gx)};
  a.gy_window = window;
  const int nt = team_size(s.n, double(s.c_out) * double(d.K) * double(d.P));
  for_ranges<float>(s.n, nt, k.backward_input_scratch(a),
                    [&](int64_t lo, int64_t hi, float* ws) { k.backward_input(a, lo, hi, ws); });
}

void bf16_backward_weight(const Conv2dShape& s, const void* gy, const uint8_t* window, const void* x, void* gw,
                          void* gb) {
  const Conv2dDims d(s);
  const int64_t w_elems = std::max<int64_t>(s.c_out * d.K, 0);
  std::vector<float> sums(size_t(w_elems + std::max<int64_t>(s.c_out, 0)), 0.f);
  if (s.n > 0 && d.P > 0 && s.c_out > 0) {
    const Direct v(s, d);
    Args<uint16_t> a{&s, &d, &v, bits(x), nullptr, nullptr, bits(gy), nullptr};
    a.gy_window = window;
    backward_weight_run<uint16_t, float>(*bf16_direct_table(), a, sums.data(), gb ? sums.data() + w_elems : nullptr);
  }
  BFloat16* w16 = static_cast<BFloat16*>(gw);
  for (int64_t j = 0; j < w_elems; ++j) w16[j] = BFloat16(sums[size_t(j)]);
  if (gb)
    for (int64_t co = 0; co < s.c_out; ++co) static_cast<BFloat16*>(gb)[co] = BFloat16(sums[size_t(w_elems + co)]);
}

// The two dtypes with kernels; the caller converts the others.
template <class F>
void float_types(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f.template operator()<float>();
  if (dt == DType::Float64) return f.template operator()<double>();
  throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype " +
                            dtype_name(dt));
}

}  // namespace
}  // namespace ember::cpu::conv2d_detail

namespace ember::cpu {

bool conv2d_bf16_direct(const Conv2dShape& s) {
  return conv2d_detail::is_direct(s) && conv2d_detail::bf16_direct_table() != nullptr;
}

namespace {
// bfloat16 convolutions: the direct kernels for the small layers the GEMM does not
// serve, the GEMM (conv2d_bf16.cpp) for the rest.
bool bf16_on_direct(const Conv2dShape& s) { return conv2d_bf16_direct(s) && !conv2d_bf16_native(s); }

void require_bf16_direct(const Conv2dShape& s, const char* op) {
  if (!conv2d_bf16_direct(s))
    throw NotImplementedError(std::string(op) + ": no kernel for device cpu and dtype bfloat16");
}
}  // namespace

void conv2d_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, bool relu, const void* packed) {
  if (relu && dt != DType::Float32 && dt != DType::Float64)
    throw ValueError(std::string("conv2d_forward: relu needs float32 or float64 values, got ") + dtype_name(dt));
  if (packed && dt != DType::Float32)
    throw ValueError(std::string("conv2d_forward: a packed weight needs float32 values, got ") + dtype_name(dt));
  if (dt == DType::BFloat16 && bf16_on_direct(s))
    return conv2d_detail::bf16_forward(s, x, weight, bias, y, false, nullptr);
  if (dt == DType::BFloat16)
    return conv2d_bf16_forward(s, static_cast<const BFloat16*>(x), static_cast<const BFloat16*>(weight),
                               static_cast<const BFloat16*>(bias), static_cast<BFloat16*>(y));
  conv2d_detail::float_types(dt, "conv2d_forward", [&]<class T>() {
    conv2d_detail::forward_impl<T>(s, static_cast<const T*>(x), static_cast<const T*>(weight),
                                   static_cast<const T*>(bias), static_cast<T*>(y), relu,
                                   static_cast<const T*>(packed));
  });
}

bool conv2d_uses_packed_weight(DType dt, const Conv2dShape& s) {
  if (dt != DType::Float32 || !conv2d_detail::is_direct(s) || s.groups <= 0) return false;
  const int64_t c = conv2d_detail::kernels_for<float>(s).lane_channels;
  const int64_t cog = s.c_out / s.groups;
  return c > 0 && cog > 0 && cog % c == 0;
}

void conv2d_pack_weight(DType dt, const Conv2dShape& s, const void* weight, void* packed) {
  if (dt != DType::Float32)
    throw ValueError(std::string("conv2d_pack_weight: needs float32 values, got ") + dtype_name(dt));
  const Conv2dDims d(s);
  conv2d_detail::direct_tables().pick().f32.pack_lanes(d, static_cast<const float*>(weight),
                                                          static_cast<float*>(packed));
}

int64_t conv2d_pack_block(const Conv2dShape& s) { return conv2d_detail::pack_block(Conv2dDims(s).cog); }

void conv2d_relu_pool_forward(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                              const void* bias, void* y, uint8_t* window, bool round_bf16) {
  if (round_bf16 && dt != DType::Float32)
    throw ValueError(std::string("conv2d_relu_pool_forward: round_bf16 needs float32 values, got ") + dtype_name(dt));
  if (dt == DType::BFloat16) {
    require_bf16_direct(s, "conv2d_relu_pool_forward");
    if (s.h_out < 2 || s.w_out < 2) return;
    return conv2d_detail::bf16_forward(s, x, weight, bias, y, true, window);
  }
  conv2d_detail::float_types(dt, "conv2d_relu_pool_forward", [&]<class T>() {
    conv2d_detail::relu_pool_forward_impl<T>(s, static_cast<const T*>(x), static_cast<const T*>(weight),
                                             static_cast<const T*>(bias), static_cast<T*>(y), window, round_bf16);
  });
}

void conv2d_relu_pool_backward(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                               void* grad_conv) {
  conv2d_detail::float_types(dt, "conv2d_relu_pool_backward", [&]<class T>() {
    conv2d_detail::relu_pool_backward_impl<T>(s, static_cast<const T*>(grad_y), window,
                                              static_cast<T*>(grad_conv));
  });
}

void conv2d_relu_pool_backward_input(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                                     const void* weight, void* grad_x) {
  if (dt == DType::BFloat16) {
    require_bf16_direct(s, "conv2d_relu_pool_backward_input");
    return conv2d_detail::bf16_backward_input(s, grad_y, window, weight, grad_x);
  }
  conv2d_detail::float_types(dt, "conv2d_relu_pool_backward_input", [&]<class T>() {
    conv2d_detail::backward_input_impl<T>(s, static_cast<const T*>(grad_y), static_cast<const T*>(weight),
                                          static_cast<T*>(grad_x), window);
  });
}

void conv2d_relu_pool_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const uint8_t* window,
                                      const void* x, void* grad_weight, void* grad_bias) {
  if (dt == DType::BFloat16) {
    require_bf16_direct(s, "conv2d_relu_pool_backward_weight");
    return conv2d_detail::bf16_backward_weight(s, grad_y, window, x, grad_weight, grad_bias);
  }
  conv2d_detail::float_types(dt, "conv2d_relu_pool_backward_weight", [&]<class T>() {
    conv2d_detail::backward_weight_impl<T>(s, static_cast<const T*>(grad_y), static_cast<const T*>(x),
                                           static_cast<T*>(grad_weight), static_cast<T*>(grad_bias), window);
  });
}

void conv2d_backward_input(DType dt, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x) {
  if (dt == DType::BFloat16 && bf16_on_direct(s))
    return conv2d_detail::bf16_backward_input(s, grad_y, nullptr, weight, grad_x);
  if (dt == DType::BFloat16)
    return conv2d_bf16_backward_input(s, static_cast<const BFloat16*>(grad_y), static_cast<const BFloat16*>(weight),
                                      static_cast<BFloat16*>(grad_x));
  conv2d_detail::float_types(dt, "conv2d_backward_input", [&]<class T>() {
    conv2d_detail::backward_input_impl<T>(s, static_cast<const T*>(grad_y),
                                          static_cast<const T*>(weight), static_cast<T*>(grad_x));
  });
}

void conv2d_backward_weight(DType dt, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias) {
  if (dt == DType::BFloat16 && bf16_on_direct(s))
    return conv2d_detail::bf16_backward_weight(s, grad_y, nullptr, x, grad_weight, grad_bias);
  if (dt == DType::BFloat16)
    return conv2d_bf16_backward_weight(s, static_cast<const BFloat16*>(grad_y), static_cast<const BFloat16*>(x),
                                       static_cast<BFloat16*>(grad_weight), static_cast<BFloat16*>(grad_bias));
  conv2d_detail::float_types(dt, "conv2d_backward_weight", [&]<class T>() {
    conv2d_detail::backward_weight_impl<T>(s, static_cast<const T*>(grad_y),
                                           static_cast<const T*>(x), static_cast<T*>(grad_weight),
                                           static_cast<T*>(grad_bias));
  });
}

}  // namespace ember::cpu
