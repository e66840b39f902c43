// The CPU GEMM driver: BLIS-style cache blocking around the packed-panel kernels of
// gemm_kernel_*.cpp, which it picks at run time. Loops run NC (columns of B, sized
// for L3) > KC (depth, sized so an A micro-panel fits L1) > MC (rows of A, sized
// for L2); OpenMP threads split the rows (or columns) of C, sharing one packed copy
// of each B block when B is large.
#include "kernels/cpu/gemm.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/scratch.h"

#include <omp.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"

namespace ember::cpu {
namespace gemm_detail {
namespace {

// Below this many multiply-adds a matrix is too small to thread on its own: a batch
// of them goes over the team by matrices (gemm_batched), and the few-rows path takes
// products of up to 4x this much per row. (Measured with the team already awake, two
// threads lost up to 56^3 and won from 64^3 on; kTeamWork below is the threshold
// that held up in a training step.)
constexpr double kSerialWork = 60.0 * 60 * 60;

// A packed product is split over a team only from this many multiply-adds (about
// 160^3). Timed alone on the 2 shared cores (OMP_WAIT_POLICY=passive, best of 200),
// two threads gained nothing below it: 100x120x192, the seed network's fc1, 27.5 us
// on one thread and 27.7 on two; 128^3 21.1 and 24.5; 160^3 38.5 and 41.4; 192^3 66.0
// and 55.7. Inside a training step the split also cost its consumers: the half of a
// weight gradient written on the other core made the Adam step that reads it 2x
// slower (70 against 32 us), and with the seed network's GEMMs on one thread a
// batch-100 step took 1027-1057 us against 1068-1116 (active wait policy; passive
// 1181-1200 against 1261-1299).
constexpr double kTeamWork = 4.0e6;

int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A team whose threads do not run together turns every barrier into a wait for a
// scheduler time slice: libgomp's threads spin and then sleep rather than yield.
// On the 2-core development VM with one core busy elsewhere, a region holding 20 us
// of work took 12 ms (its second thread started late), and a 1024^3 product ran at
// 110 GFLOP/s with both threads sharing one core, where the calling thread alone
// ran at 230 (OpenBLAS's yielding threads degrade to about one core's speed). So
// each threaded product checks how late its last thread started and, when large
// enough to pay for two CPU-clock reads per thread, what share of its wall time
// each thread actually ran; when the team clearly did not run together, products
// run on the calling thread alone for a while (doubling while the trouble lasts),
// then a team is tried again.
class TeamHealth {
 public:
  bool threads_ok() const {
    return !enabled_.load(std::memory_order_relaxed) ||
           clock_ns() >= serial_until_.load(std::memory_order_relaxed);
  }
  void enable(bool on) {
    enabled_.store(on, std::memory_order_relaxed);
    serial_until_.store(0, std::memory_order_relaxed);
    pause_ns_.store(kMinPauseNs, std::memory_order_relaxed);
  }

  // late_ns: last thread's start after the region began; ran_ns / wall_ns: summed
  // CPU time and wall time of the threads' work, or 0 when not measured.
  void record(int64_t late_ns, int64_t region_ns, int64_t ran_ns, int64_t wall_ns) {
    const bool late = late_ns > kLateNs && 2 * late_ns > region_ns;
    const bool starved = wall_ns > kLateNs && 4 * ran_ns < 3 * wall_ns;
    if (late || starved) {
      const int64_t pause = pause_ns_.load(std::memory_order_relaxed);
      serial_until_.store(clock_ns() + pause, std::memory_order_relaxed);
      pause_ns_.store(std::min(2 * pause, kMaxPauseNs), std::memory_order_relaxed);
    } else {
      pause_ns_.store(kMinPauseNs, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr int64_t kLateNs = 1'000'000;        // healthy teams start in microseconds
  static constexpr int64_t kMinPauseNs = 100'000'000;  // each retry costs one slow product
  static constexpr int64_t kMaxPauseNs = 1'600'000'000;
  std::atomic<bool> enabled_{true};
  std::atomic<int64_t> serial_until_{0};
  std::atomic<int64_t> pause_ns_{kMinPauseNs};
};

TeamHealth team_health;

int64_t thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Up to this many rows of A go through GemmKernel::rows instead of packing B. On the
// Zen 5 development machine (AVX-512, 1 thread, n = 256, k = 784, B the transposed
// weight of a Linear), median us by rows, packed -> few-rows: m = 2: 33 -> 14,
// m = 4: 34 -> 14, m = 8: 42 -> 27, m = 14: 51 -> 54 (packing wins from there).
constexpr int64_t kFewRows = 8;

// A few-rows product (GemmKernel::rows) of this many multiply-adds is split over a
// team by columns of B. Measured on 2 threads (n = 256, k = 784, medians): one row
// (200K) 10.6 us alone against 11.0 split, so it stays on its thread; 3 rows 27 ->
// 21 us and 8 rows 36 -> 29 us split.
constexpr double kRowTeamWork = 512.0 * 1024;

// A product of this many multiply-adds takes a hundred microseconds or more on a
// team, enough that reading each thread's CPU clock (a system call) costs <1%.
constexpr double kMeasureCpuWork = 32.0 * 1024 * 1024;

// Runs body(tid) on a team of nt threads and reports to team_health how the team
// ran. If the runtime grants fewer threads, thread 0 runs alone(). Either may
// throw; an exception must not leave the region, so the first one is rethrown
// after it.
template <class Body, class Alone>
void run_team(int nt, bool measure_cpu, Body&& body, Alone&& alone) {
  struct Times {
    int64_t start = 0, wall = 0, ran = 0;
  };
  std::vector<Times> times(static_cast<size_t>(nt));
  std::exception_ptr error;
  bool full = true;
  const int64_t t0 = clock_ns();
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num();
    const bool team = omp_get_num_threads() == nt;
    if (!team && tid == 0) full = false;
    const int64_t c0 = team && measure_cpu ? thread_cpu_ns() : 0;
    const int64_t w0 = clock_ns();
    try {
      if (team)
        body(tid);
      else if (tid == 0)
        alone();
    } catch (...) {
#pragma omp critical(ember_gemm_team_error)
      if (!error) error = std::current_exception();
    }
    if (team) {
      Times& mine = times[size_t(tid)];
      mine.start = w0;
      mine.wall = clock_ns() - w0;
      if (measure_cpu) mine.ran = thread_cpu_ns() - c0;
    }
  }
  const int64_t region = clock_ns() - t0;
  if (error) std::rethrow_exception(error);
  if (!full) return;
  int64_t last_start = t0, ran = 0, wall = 0;
  for (const Times& t : times) {
    last_start = std::max(last_start, t.start);
    ran += t.ran;
    wall += t.wall;
  }
  team_health.record(last_start - t0, region, ran, measure_cpu ? wall : 0);
}

// The kernel set of the active instruction set (see isa.h).
const GemmKernelSet& kernels() {
  static const PerIsa<GemmKernelSet> tables(
      gemm_kernels_generic(), gemm_kernels_avx2(),
      gemm_kernels_avx512(), nullptr);
  return tables.pick();
}

template <class T>
const GemmKernel<T>& kernel_for() {
  if constexpr (sizeof(T) == 4) return kernels().f32;
  else return kernels().f64;
}

int64_t cdiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

// Each calling thread's workspace. Its team's buffers are carved out of it before
// the parallel region starts, so nothing inside the region allocates or throws.
thread_local Scratch workspace;

struct Blocking {
  int64_t mc, kc, nc;
};

long cache_bytes(int name, long fallback) {
  const long v = sysconf(name);
  return v > 0 ? v : fallback;
}

// KC keeps an A micro-panel (MR x KC) in half of L1, next to the B panels streaming
// past it; MC keeps a packed A block in half of L2; NC bounds the shared B block
// (KC x NC, a few MiB) so that it stays in L3. KC is a multiple of 16 packed
// elements so packing runs whole transposes; it is counted in k (kpair values of k
// per packed element). The bfloat16 kernel's sliver may fill all of L1: its B panel
// rows are half as many per k, and a deeper block means fewer passes of
// read-modify-write over C (a 1024^3 product in one block instead of two: bfloat16
// over float32 went from 1.86-1.90 to 1.94-2.00 times on one thread, same runs).
template <class K>
Blocking blocking_for(const K& kern) {
  using P = typename K::packed_type;
  static const long l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
  static const long l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
  Blocking b;
  int64_t kcp = (kern.kpair == 2 ? l1 : l1 / 2) / (kern.mr * int64_t(sizeof(P)));
  kcp = kcp < 128 ? 128 : (kcp > 512 ? 512 : kcp & ~int64_t(15));
  b.kc = kcp * kern.kpair;
  b.mc = (l2 / 2) / (kcp * int64_t(sizeof(P))) / kern.mr * kern.mr;
  if (b.mc < kern.mr) b.mc = kern.mr;
  b.nc = (4096 / kern.nr) * kern.nr;
  return b;
}

// Packed elements of a panel row of depth kc.
template <class K>
int64_t packed_depth(const K& kern, int64_t kc) {
  return cdiv(kc, kern.kpair);
}

// C = beta * C, the whole product when k == 0 or alpha == 0. beta == 0 writes zeros
// without reading C, which may hold NaN.
template <class T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t c_rs, int64_t c_cs) {
  if (beta == T(1)) return;
  for (int64_t i = 0; i < m; ++i) {
    T* ci = c + i * c_rs;
    if (beta == T(0)) {
      for (int64_t j = 0; j < n; ++j) ci[j * c_cs] = T(0);
    } else {
      for (int64_t j = 0; j < n; ++j) ci[j * c_cs] *= beta;
    }
  }
}

// One matrix's bfloat16 C for the bfloat16 kernel's macro_rounded (see Bf16Out).
struct Rounded {
  BFloat16* out;
  int64_t out_rs;
  const float* bias;
  bool relu;
};

struct Problem {
  int64_t m, n, k;
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
  const Rounded* rounded = nullptr;  // bfloat16 C (bfloat16 kernel only); c then holds partial sums
};

// Splits nt threads into a tm x tn grid over C's micro-tiles, minimizing the
// largest share; ties favor splitting rows, so each thread packs its own A and
// only B is shared.
std::pair<int, int> thread_grid(int nt, int64_t m, int64_t n, int64_t mr, int64_t nr) {
  const int64_t tiles_m = cdiv(m, mr), tiles_n = cdiv(n, nr);
  int best_tm = nt;
  int64_t best_cost = -1;
  for (int tm = nt; tm >= 1; --tm) {
    if (nt % tm) continue;
    const int tn = nt / tm;
    const int64_t cost = cdiv(tiles_m, tm) * cdiv(tiles_n, tn);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_tm = tm;
    }
  }
  return {best_tm, nt / best_tm};
}

// How a product is split: an nt = tm x tn grid of threads over C, whether B is
// packed once and shared, and the packed buffer sizes, in elements.
struct Plan {
  int nt = 1, tm = 1, tn = 1;
  bool shared_b = false;
  int64_t shared_elems = 0;  // one shared B block; two are kept
  int64_t slice_elems = 0;   // each thread's A block and private B panels, page-rounded
  int64_t a_elems = 0;
};

template <class K>
Plan make_plan(const K& kern, const Blocking& bl, const Problem& p, int nt) {
  using P = typename K::packed_type;
  Plan pl;
  pl.nt = nt;
  if (nt > 1) {
    const auto [tm, tn] = thread_grid(nt, p.m, p.n, kern.mr, kern.nr);
    pl.tm = tm;
    pl.tn = tn;
  }
  // Sharing B costs a barrier per block and moves every packed line between cores.
  // That pays only when B is big; a small B is cheaper packed by every thread for
  // itself, and with columns split among threads nothing is packed twice anyway.
  static const long l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
  pl.shared_b = pl.tm > 1 && double(packed_depth(kern, p.k)) * double(cdiv(p.n, pl.tn)) *
                                  double(sizeof(P)) > double(l2 / 4);
  const int64_t kcp = packed_depth(kern, std::min(bl.kc, p.k));
  const int64_t panels = cdiv(std::min(bl.nc, p.n), kern.nr);  // per NC block
  // B panels are read with aligned vector loads, so every buffer starts on a cache
  // line; page-sized slices keep threads off each other's lines.
  const int64_t line = 64 / int64_t(sizeof(P)), page = 4096 / int64_t(sizeof(P));
  pl.a_elems = cdiv(bl.mc * kcp, line) * line;
  int64_t slice = pl.a_elems;
  if (pl.shared_b)
    pl.shared_elems = cdiv(panels * kern.nr * kcp, line) * line;
  else
    slice += (cdiv(panels, pl.tn) + 1) * kern.nr * kcp;
  pl.slice_elems = cdiv(slice, page) * page;
  return pl;
}

// One thread's share of the product. Thread tid owns rows [m0, m1) and, in every
// NC block, the B panels [p0, p1) of its column group. With a shared B, all threads
// pack slices of each B block into `shared`, which holds two blocks used in turn:
// the one barrier after packing also proves that nobody still reads the block
// packed two rounds earlier. Otherwise each thread packs its own panels.
template <class K, class In = typename K::in_type, class P = typename K::packed_type,
          class Out = typename K::out_type>
void run_share(const K& kern, const Blocking& bl, const Problem& p, const Plan& pl, int tid,
               Out alpha, const In* a, const In* b, Out beta, Out* c, P* shared, P* slice) {
  const int64_t mr = kern.mr, nr = kern.nr;
  const int nt = pl.nt, im = tid / pl.tn, in = tid % pl.tn;
  const int64_t tiles_m = cdiv(p.m, mr);
  const int64_t m0 = tiles_m * im / pl.tm * mr;
  const int64_t m1 = std::min(p.m, tiles_m * (im + 1) / pl.tm * mr);
  P* abuf = slice;
  P* bpriv = slice + pl.a_elems;
  // Equal row blocks rather than full ones and a sliver: a last block of a few rows
  // would repack A and re-stream all of B for little work.
  const int64_t my_tiles = cdiv(m1 - m0, mr);
  const int64_t mc_even = m1 > m0 ? cdiv(my_tiles, cdiv(my_tiles * mr, bl.mc)) * mr : bl.mc;

  int round = 0;
  for (int64_t jc = 0; jc < p.n; jc += bl.nc) {
    const int64_t nc = std::min(bl.nc, p.n - jc);
    const int64_t panels = cdiv(nc, nr);
    const int64_t p0 = panels * in / pl.tn, p1 = panels * (in + 1) / pl.tn;
    const int64_t j0 = p0 * nr, j1 = std::min(nc, p1 * nr);
    for (int64_t pc = 0; pc < p.k; pc += bl.kc, ++round) {
      const int64_t kc = std::min(bl.kc, p.k - pc);
      const int64_t kcp = packed_depth(kern, kc);
      const P* bp;  // the packed B panels of columns [j0, j1)
      if (pl.shared_b) {
        P* bs = shared + (round & 1) * pl.shared_elems;
        const int64_t q0 = panels * tid / nt, q1 = panels * (tid + 1) / nt;
        if (q1 > q0)
          kern.pack_b(kc, std::min(nc, q1 * nr) - q0 * nr, b + pc * p.b_rs + (jc + q0 * nr) * p.b_cs,
                      p.b_rs, p.b_cs, bs + q0 * nr * kcp);
#pragma omp barrier
        bp = bs + j0 * kcp;
      } else {
        if (j1 <= j0) continue;
        kern.pack_b(kc, j1 - j0, b + pc * p.b_rs + (jc + j0) * p.b_cs, p.b_rs, p.b_cs, bpriv);
        bp = bpriv;
      }
      if (j1 <= j0) continue;
      const Out beta_here = pc == 0 ? beta : Out(1);
      for (int64_t ic = m0; ic < m1; ic += mc_even) {
        const int64_t mc = std::min(mc_even, m1 - ic);
        kern.pack_a(mc, kc, a + ic * p.a_rs + pc * p.a_cs, p.a_rs, p.a_cs, abuf);
        if constexpr (std::is_same_v<K, GemmKernelBf16>) {
          if (p.rounded && pc + kc >= p.k) {  // the last depth block stores bfloat16 C
            const Rounded& r = *p.rounded;
            kern.macro_rounded(mc, j1 - j0, kc, abuf, bp, alpha, beta_here,
                               beta_here != 0 ? c + ic * p.c_rs + jc + j0 : nullptr, p.c_rs,
                               r.out + ic * r.out_rs + jc + j0, r.out_rs,
                               r.bias ? r.bias + jc + j0 : nullptr, r.relu);
            continue;
          }
        }
        kern.macro(mc, j1 - j0, kc, abuf, bp, alpha, beta_here,
                   c + ic * p.c_rs + (jc + j0) * p.c_cs, p.c_rs, p.c_cs);
      }
    }
  }
}

template <class K, class In = typename K::in_type, class P = typename K::packed_type,
          class Out = typename K::out_type>
void run_serial(const K& kern, const Blocking& bl, const Problem& p, Out alpha, const In* a,
                const In* b, Out beta, Out* c) {
  const Plan pl = make_plan(kern, bl, p, 1);
  P* ws = static_cast<P*>(workspace.get(sizeof(P) * size_t(pl.slice_elems)));
  run_share(kern, bl, p, pl, 0, alpha, a, b, beta, c, static_cast<P*>(nullptr), ws);
}

// Each calling thread's float32 partial sums for a bfloat16 C deeper than one block.
thread_local Scratch partial_sums;

// Scratch up to this size stays with its thread for the next call (a 2048 x 2048
// float32 C); a larger buffer is freed when its product is done, so that one huge
// product does not pin its m * n floats for the rest of the thread's life.
constexpr size_t kKeepScratchBytes = size_t(16) << 20;
struct ReleaseLarge {
  Scratch& scratch;
  size_t bytes;
  ~ReleaseLarge() {
    if (bytes > kKeepScratchBytes) scratch.release();
  }
};

// A bfloat16 C with no product to add (k == 0 or alpha == 0): each row is the bias
// (or 0), through ReLU, rounded.
void store_rounded_bias(int64_t m, int64_t n, const Rounded& r) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = r.bias ? r.bias[j] : 0.f;
      r.out[i * r.out_rs + j] = BFloat16(r.relu && !(v > 0.f) && v == v ? 0.f : v);
    }
}

// One product through kernel `kern` (float, double or bfloat16). With `rounded`
// (bfloat16 kernel, beta 0), C is bfloat16 and `c` is ignored: float32 partial sums
// go to a buffer of this thread when k spans more than one depth block.
template <class K, class In = typename K::in_type, class P = typename K::packed_type,
          class Out = typename K::out_type>
void gemm_impl(const K& kern, int64_t m, int64_t n, int64_t k, Out alpha, const In* a, int64_t a_rs,
               int64_t a_cs, const In* b, int64_t b_rs, int64_t b_cs, Out beta, Out* c, int64_t c_rs,
               int64_t c_cs, const Rounded* rounded = nullptr) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == Out(0)) {
    if (rounded)
      store_rounded_bias(m, n, *rounded);
    else
      scale_c(m, n, beta, c, c_rs, c_cs);
    return;
  }
  // The kernels store whole vectors along C's rows. A column-major C is the
  // row-major C^T = B^T A^T, so swap the operands instead of scattering stores.
  if (!rounded && c_cs != 1 && c_rs == 1) {
    std::swap(m, n);
    std::swap(a, b);
    std::swap(a_rs, b_cs);
    std::swap(a_cs, b_rs);
    std::swap(c_rs, c_cs);
  }
  // A few rows of A (a batch-1 or small-batch Linear): passes over B in its own
  // layout beat packing it (see kFewRows). From kRowTeamWork multiply-adds B's
  // columns are split over the team.
  if (kern.rows && !rounded && m <= kFewRows && c_cs == 1 && (b_cs == 1 || (b_rs == 1 && a_cs == 1)) &&
      double(n) * double(k) < 4 * kSerialWork) {
    int nt = 1;
    if (!omp_in_parallel() && double(m) * double(n) * double(k) >= kRowTeamWork && team_health.threads_ok())
      nt = int(std::min<int64_t>(get_num_threads(), n / 64));
    if (nt <= 1) {
      kern.rows(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs);
      return;
    }
    // Column ranges start on multiples of 64, a multiple of every kernel set's
    // column block (4 vectors), so each range is cut into the same blocks, single
    // vectors and single columns as the whole row: the bits do not depend on the
    // number of threads.
    auto cols = [&](int tid) { return tid == nt ? n : (n * tid / nt) & ~int64_t(63); };
    run_team(
        nt, false,
        [&](int tid) {
          const int64_t j0 = cols(tid), j1 = cols(tid + 1);
          kern.rows(m, j1 - j0, k, alpha, a, a_rs, a_cs, b + j0 * b_cs, b_rs, b_cs, beta, c + j0, c_rs);
        },
        [&] { kern.rows(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs); });
    return;
  }
  const Blocking bl = blocking_for(kern);
  const size_t sums_bytes = rounded && k > bl.kc ? sizeof(Out) * size_t(m * n) : 0;
  const ReleaseLarge release_sums{partial_sums, sums_bytes};
  if (rounded) {
    beta = Out(0);
    c = sums_bytes ? static_cast<Out*>(partial_sums.get(sums_bytes)) : nullptr;
    c_rs = n;
    c_cs = 1;
  }
  const Problem p{m, n, k, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, rounded};

  int nt = 1;
  if (!omp_in_parallel() && double(m) * double(n) * double(k) >= kTeamWork &&
      team_health.threads_ok()) {
    nt = get_num_threads();
    const int64_t tiles = cdiv(m, kern.mr) * cdiv(n, kern.nr);
    if (tiles < nt) nt = int(tiles);
  }
  if (nt <= 1) {
    run_serial(kern, bl, p, alpha, a, b, beta, c);
    return;
  }
  const Plan pl = make_plan(kern, bl, p, nt);
  P* ws = static_cast<P*>(
      workspace.get(sizeof(P) * size_t(2 * pl.shared_elems + nt * pl.slice_elems)));
  P* slices = ws + 2 * pl.shared_elems;
  run_team(
      nt, double(m) * double(n) * double(k) >= kMeasureCpuWork,
      [&](int tid) {
        run_share(kern, bl, p, pl, tid, alpha, a, b, beta, c, ws, slices + tid * pl.slice_elems);
      },
      // The caller's workspace may grow here; no other thread is using it.
      [&] { run_serial(kern, bl, p, alpha, a, b, beta, c); });
}

// `batch` products through gemm_impl; with `rounded`, matrix i of the bfloat16 C
// starts out_bs values after matrix i - 1 and `c` is unused.
template <class K, class In = typename K::in_type, class Out = typename K::out_type>
void gemm_batched_impl(const K& kern, int64_t batch, int64_t m, int64_t n, int64_t k, Out alpha,
                       const In* a, int64_t a_bs, int64_t a_rs, int64_t a_cs, const In* b,
                       int64_t b_bs, int64_t b_rs, int64_t b_cs, Out beta, Out* c, int64_t c_bs,
                       int64_t c_rs, int64_t c_cs, const Rounded* rounded = nullptr, int64_t out_bs = 0) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const auto one = [&](int64_t i) {
    if (rounded) {
      Rounded r = *rounded;
      r.out += i * out_bs;
      gemm_impl(kern, m, n, k, alpha, a + i * a_bs, a_rs, a_cs, b + i * b_bs, b_rs, b_cs, beta, c, c_rs, c_cs, &r);
    } else {
      gemm_impl(kern, m, n, k, alpha, a + i * a_bs, a_rs, a_cs, b + i * b_bs, b_rs, b_cs, beta, c + i * c_bs, c_rs,
                c_cs);
    }
  };
  const int nt = omp_in_parallel() ? 1 : get_num_threads();
  const double work = double(m) * double(n) * double(std::max<int64_t>(k, 1));
  // Whole matrices per thread need no barriers and no shared packing, so they win
  // whenever the batch divides evenly enough: measured on 2 threads, 16 x 64^3 ran
  // 1.5x and 16 x 256^3 1.05x faster by batch, 3 x 128^3 1.15x slower. Matrices too
  // small to thread on their own always go by batch. Inside the loop each gemm
  // sees omp_in_parallel() and stays on its thread.
  const bool by_batch =
      nt > 1 && batch > 1 && team_health.threads_ok() &&
      (work < kSerialWork ? work * double(batch) >= kSerialWork
                          : batch % nt == 0 || batch >= 4 * int64_t(nt));
  if (by_batch) {
    auto items = [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) one(i);
    };
    run_team(
        nt, work * double(batch) >= kMeasureCpuWork,
        [&](int tid) { items(batch * tid / nt, batch * (tid + 1) / nt); },
        [&] { items(0, batch); });
    return;
  }
  for (int64_t i = 0; i < batch; ++i) one(i);
}

// The vdpbf16ps kernel when the avx512_bf16 level is active, else null.
const GemmKernelBf16* bf16_kernel() {
  static const GemmKernelBf16* native = gemm_kernel_bf16_avx512();
  return active_isa() >= Isa::avx512_bf16 ? native : nullptr;
}

// The bfloat16 product on CPUs without vdpbf16ps: A and B are widened (exactly) into
// a row-major float32 copy in this thread's buffer, then the float32 GEMM runs.
// The copy costs m*k + k*n conversions, small next to m*n*k multiply-adds.
void gemm_bf16_widened(int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a,
                       int64_t a_rs, int64_t a_cs, const BFloat16* b, int64_t b_rs, int64_t b_cs,
                       float beta, float* c, int64_t c_rs, int64_t c_cs) {
  if (m <= 0 || n <= 0) return;
  const int64_t kk = std::max<int64_t>(k, 0);
  thread_local Scratch widened;
  float* wa = static_cast<float*>(widened.get(sizeof(float) * size_t(m * kk + kk * n + 1)));
  float* wb = wa + m * kk;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < kk; ++p) wa[i * kk + p] = float(a[i * a_rs + p * a_cs]);
  for (int64_t p = 0; p < kk; ++p)
    for (int64_t j = 0; j < n; ++j) wb[p * n + j] = float(b[p * b_rs + j * b_cs]);
  gemm_impl(kernel_for<float>(), m, n, k, alpha, wa, kk, 1, wb, n, 1, beta, c, c_rs, c_cs);
}

}  // namespace

void set_gemm_thread_backoff(bool enabled) { team_health.enable(enabled); }

}  // namespace gemm_detail

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_rs,
          int64_t a_cs, const float* b, int64_t b_rs, int64_t b_cs, float beta, float* c,
          int64_t c_rs, int64_t c_cs) {
  gemm_detail::gemm_impl(gemm_detail::kernel_for<float>(), m, n, k, alpha, a, a_rs, a_cs, b, b_rs,
                         b_cs, beta, c, c_rs, c_cs);
}

void gemm(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t a_rs,
          int64_t a_cs, const double* b, int64_t b_rs, int64_t b_cs, double beta, double* c,
          int64_t c_rs, int64_t c_cs) {
  gemm_detail::gemm_impl(gemm_detail::kernel_for<double>(), m, n, k, alpha, a, a_rs, a_cs, b, b_rs,
                         b_cs, beta, c, c_rs, c_cs);
}

void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t a_bs, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_bs,
                  int64_t b_rs, int64_t b_cs, float beta, float* c, int64_t c_bs, int64_t c_rs,
                  int64_t c_cs) {
  gemm_detail::gemm_batched_impl(gemm_detail::kernel_for<float>(), batch, m, n, k, alpha, a, a_bs,
                                 a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs);
}

void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t a_bs, int64_t a_rs, int64_t a_cs, const double* b, int64_t b_bs,
                  int64_t b_rs, int64_t b_cs, double beta, double* c, int64_t c_bs, int64_t c_rs,
                  int64_t c_cs) {
  gemm_detail::gemm_batched_impl(gemm_detail::kernel_for<double>(), batch, m, n, k, alpha, a, a_bs,
                                 a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs);
}

void gemm_bf16(int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t a_rs,
               int64_t a_cs, const BFloat16* b, int64_t b_rs, int64_t b_cs, float beta, float* c,
               int64_t c_rs, int64_t c_cs) {
  if (const gemm_detail::GemmKernelBf16* kern = gemm_detail::bf16_kernel())
    gemm_detail::gemm_impl(*kern, m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
  else
    gemm_detail::gemm_bf16_widened(m, n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs, c_cs);
}

void gemm_bf16_batched(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                       const BFloat16* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const BFloat16* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, float beta,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  if (const gemm_detail::GemmKernelBf16* kern = gemm_detail::bf16_kernel()) {
    gemm_detail::gemm_batched_impl(*kern, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs,
                                   b_cs, beta, c, c_bs, c_rs, c_cs);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm_detail::gemm_bf16_widened(m, n, k, alpha, a + i * a_bs, a_rs, a_cs, b + i * b_bs, b_rs,
                                   b_cs, beta, c + i * c_bs, c_rs, c_cs);
}

void gemm_bf16_rounded(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                       const BFloat16* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const BFloat16* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, const Bf16Out& out) {
  const gemm_detail::Rounded r{out.c, out.c_rs, out.bias, out.relu};
  if (const gemm_detail::GemmKernelBf16* kern = gemm_detail::bf16_kernel()) {
    gemm_detail::gemm_batched_impl(*kern, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, 0.f,
                                   static_cast<float*>(nullptr), 0, n, 1, &r, out.c_bs);
    return;
  }
  // Without vdpbf16ps: the widened float32 product, then one rounding pass.
  if (m <= 0 || n <= 0) return;
  thread_local Scratch sums_buf;
  const gemm_detail::ReleaseLarge release_sums{sums_buf, sizeof(float) * size_t(m * n)};
  float* sums = static_cast<float*>(sums_buf.get(release_sums.bytes));
  for (int64_t i = 0; i < batch; ++i) {
    gemm_detail::gemm_bf16_widened(m, n, k, alpha, a + i * a_bs, a_rs, a_cs, b + i * b_bs, b_rs, b_cs, 0.f, sums,
                                   n, 1);
    for (int64_t row = 0; row < m; ++row)
      for (int64_t j = 0; j < n; ++j) {
        float v = sums[row * n + j];
        if (out.bias) v += out.bias[j];  // no + 0.f without one: a -0 sum stays -0
        if (out.relu && !(v > 0.f) && v == v) v = 0.f;
        out.c[i * out.c_bs + row * out.c_rs + j] = BFloat16(v);
      }
  }
}

const char* gemm_bf16_kernel_name() {
  const gemm_detail::GemmKernelBf16* kern = gemm_detail::bf16_kernel();
  return kern ? kern->name : "widen";
}

const char* gemm_kernel_name() { return gemm_detail::kernels().f32.name; }

}  // namespace ember::cpu
