// The floors: a peak-FMA loop and a copy-bandwidth loop, both on OpenMP threads.
// The FMA loop is written three times, for AVX-512, AVX2 and portable 16-byte
// vectors, each compiled for its instruction set by a target attribute and picked
// at run time, as the GEMM kernels are.
#include "bench/floors.h"
#include "kernels/cpu/isa.h"

#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ember::bench {
namespace {

// Chains per loop: FMA latency (4 cycles) times two FMA pipes needs eight
// independent accumulators to keep both busy; twelve leave slack for the loop.
constexpr int kChains = 12;

// Each loop runs `iters` rounds of kChains FMAs and returns the number of flops
// per round per call site (2 * lanes * kChains); the sum it stores into *sink keeps
// the compiler from deleting the work.
#if defined(__x86_64__)
// One function per vector type, each keeping kChains accumulators in registers.
template <class V, class S, V (*Set1)(S), V (*Fma)(V, V, V)>
__attribute__((target("avx512f"))) inline void fma_chains(int64_t iters, V* out) {
  V acc[kChains];
  const V m = Set1(S(0.9999999)), a = Set1(S(1e-7));
  for (int i = 0; i < kChains; ++i) acc[i] = Set1(S(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = Fma(acc[i], m, a);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = acc[0] + acc[i];
  *out = acc[0];
}

__attribute__((target("avx512f"))) int64_t fma_loop_avx512_f64(int64_t iters, double* sink) {
  __m512d r;
  fma_chains<__m512d, double, _mm512_set1_pd, _mm512_fmadd_pd>(iters, &r);
  alignas(64) double out[8];
  _mm512_store_pd(out, r);
  *sink += out[0] + out[7];
  return 2 * 8 * kChains;
}

__attribute__((target("avx512f"))) int64_t fma_loop_avx512_f32(int64_t iters, double* sink) {
  __m512 r;
  fma_chains<__m512, float, _mm512_set1_ps, _mm512_fmadd_ps>(iters, &r);
  alignas(64) float out[16];
  _mm512_store_ps(out, r);
  *sink += out[0] + out[15];
  return 2 * 16 * kChains;
}

int64_t fma_loop_avx512(int64_t iters, bool f64, double* sink) {
  return f64 ? fma_loop_avx512_f64(iters, sink) : fma_loop_avx512_f32(iters, sink);
}

// vdpbf16ps chains, the bfloat16 GEMM's instruction: each adds 16 lanes x 2 products
// (64 flops). Every pair is (1, 1) times (2^-20, 2^-20), so the sums grow slowly and
// never reach a subnormal or an overflow.
__attribute__((target("avx512f,avx512bf16"))) int64_t dot_bf16_loop(int64_t iters, bool, double* sink) {
  __m512 acc[kChains];
  const __m512i ones = _mm512_set1_epi32(0x3f803f80), tiny = _mm512_set1_epi32(0x35803580);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)ones, (__m512bh)tiny);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, acc[0]);
  *sink += out[0] + out[15];
  return 2 * 32 * kChains;
}

__attribute__((target("avx2,fma"))) int64_t fma_loop_avx2(int64_t iters, bool f64, double* sink) {
  alignas(32) double out_d[4];
  alignas(32) float out_f[8];
  if (f64) {
    __m256d acc[kChains];
    const __m256d m = _mm256_set1_pd(0.9999999), a = _mm256_set1_pd(1e-7);
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_pd(double(i));
    for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
      for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_pd(acc[i], m, a);
    }
    for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_pd(acc[0], acc[i]);
    _mm256_store_pd(out_d, acc[0]);
    *sink += out_d[0] + out_d[3];
    return 2 * 4 * kChains;
  }
  __m256 acc[kChains];
  const __m256 m = _mm256_set1_ps(0.9999999f), a = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  _mm256_store_ps(out_f, acc[0]);
  *sink += out_f[0] + out_f[7];
  return 2 * 8 * kChains;
}
#endif

// Without FMA instructions a multiply and an add make the pair; counting them as
// one FMA keeps the unit comparable with the GEMM's 2*m*n*k.
template <class T>
int64_t fma_loop_generic_t(int64_t iters, double* sink) {
  typedef T V __attribute__((vector_size(16)));
  V acc[kChains];
  const V m = V{} + T(0.9999999), a = V{} + T(1e-7);
  for (int i = 0; i < kChains; ++i) acc[i] = V{} + T(i);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * m + a;
  }
  for (int i = 1; i < kChains; ++i) acc[0] += acc[i];
  *sink += double(acc[0][0]);
  return 2 * int64_t(16 / sizeof(T)) * kChains;
}

int64_t fma_loop_generic(int64_t iters, bool f64, double* sink) {
  return f64 ? fma_loop_generic_t<double>(iters, sink) : fma_loop_generic_t<float>(iters, sink);
}

using FmaLoop = int64_t (*)(int64_t, bool, double*);

struct Isa {
  FmaLoop loop;
  const char* name;
};

Isa pick_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {fma_loop_avx512, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {fma_loop_avx2, "avx2"};
#endif
  return {fma_loop_generic, "generic"};
}

const Isa& isa() {
  static const Isa i = pick_isa();
  return i;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wall time for every thread to run `iters` rounds at once; returns flops done.
// `loop` replaces the FMA loop of the CPU's vector width (the bfloat16 peak's).
double run_fma(int threads, int64_t iters, bool f64, double* seconds, FmaLoop loop = nullptr) {
  if (!loop) loop = isa().loop;
  double sink = 0;
  int64_t flops_per_round = 0;
  const double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    double local = 0;
    const int64_t f = loop(iters, f64, &local);
    if (omp_get_thread_num() == 0) flops_per_round = f;
    sink += local;
  }
  *seconds = now_s() - t0;
  volatile double keep = sink;
  (void)keep;
  return double(flops_per_round) * double(iters) * threads;
}

double measure_fma(int threads, bool f64, FmaLoop loop = nullptr) {
  // Calibrate to about 1 ms a run, then keep the best of 200: a run that shared its
  // core with something else only ever looks slower. Runs shorter than a scheduler
  // time slice, as the suites' best-of-many timings of short calls are: on the 2-core
  // VM under a load average of 8, three 0.2 s runs were all preempted and gave a
  // quarter of the peak, below what the GEMM reached in the same run.
  // The calibration runs on one thread (a run's length does not depend on the team
  // size) and keeps its fastest of several runs: a slow team start or one preempted
  // run would make every timed run too short to measure anything but waking the team.
  double secs = 0, fastest = 0;
  int64_t iters = 1 << 16;
  for (int r = 0; r < 8; ++r) {
    run_fma(1, iters, f64, &secs, loop);
    if (r == 0 || secs < fastest) fastest = secs;
  }
  if (fastest > 0) iters = int64_t(double(iters) * 0.001 / fastest) + 1;
  double best = 0;
  for (int r = 0; r < 200; ++r) {
    const double flops = run_fma(threads, iters, f64, &secs, loop);
    if (secs > 0 && flops / secs > best) best = flops / secs;
  }
  return best * 1e-9;
}

// Two 64 MiB buffers per thread count, each slice first touched by the thread that
// copies it (which places its pages near that thread on NUMA machines), kept for
// the run so that the memory-bound suites can time copies between their cases.
struct CopyBuffers {
  size_t n = 0;
  std::unique_ptr<float[]> src, dst;
};

void slice(size_t n, int t, int nt, size_t* lo, size_t* hi) {
  *lo = n * size_t(t) / size_t(nt);
  *hi = n * size_t(t + 1) / size_t(nt);
}

CopyBuffers& copy_buffers(int threads) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<CopyBuffers>> all;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<CopyBuffers>& b = all[threads];
  if (!b) {
    b = std::make_unique<CopyBuffers>();
    b->n = (size_t(64) << 20) / sizeof(float);
    b->src.reset(new float[b->n]);
    b->dst.reset(new float[b->n]);
    CopyBuffers& c = *b;
#pragma omp parallel num_threads(threads)
    {
      size_t lo, hi;
      slice(c.n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
      for (size_t i = lo; i < hi; ++i) c.src[i] = float(i & 1023);
      std::memset(c.dst.get() + lo, 0, (hi - lo) * sizeof(float));
    }
  }
  return *b;
}

double measure_copy(int threads) {
  double best = 0;
  for (int r = 0; r < 8; ++r) {
    const double t0 = now_s();
    const double bytes = copy_once(threads);
    const double secs = now_s() - t0;
    if (secs > 0 && bytes / secs > best) best = bytes / secs;
  }
  return best * 1e-9;
}

template <class Key>
double cached(std::map<Key, double>& cache, const Key& key, double (*measure)(const Key&)) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const double v = measure(key);
  cache.emplace(key, v);
  return v;
}

}  // namespace

double measured_fma_peak_gflops(int threads, bool float64) {
  static std::map<std::pair<int, bool>, double> cache;
  return cached<std::pair<int, bool>>(cache, {threads < 1 ? 1 : threads, float64},
                                      [](const std::pair<int, bool>& k) {
                                        return measure_fma(k.first, k.second);
                                      });
}

double measured_bf16_peak_gflops(int threads) {
#if defined(__x86_64__)
  if (cpu::cpu_isa() >= cpu::Isa::avx512_bf16) {
    static std::map<int, double> cache;
    return cached<int>(cache, threads < 1 ? 1 : threads,
                       [](const int& t) { return measure_fma(t, false, dot_bf16_loop); });
  }
#endif
  return measured_fma_peak_gflops(threads, false);
}

double measured_copy_bandwidth_gbs(int threads) {
  static std::map<int, double> cache;
  return cached<int>(cache, threads < 1 ? 1 : threads,
                     [](const int& t) { return measure_copy(t); });
}

double copy_once(int threads) {
  if (threads < 1) threads = 1;
  CopyBuffers& c = copy_buffers(threads);
#pragma omp parallel num_threads(threads)
  {
    size_t lo, hi;
    slice(c.n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
    std::memcpy(c.dst.get() + lo, c.src.get() + lo, (hi - lo) * sizeof(float));
  }
  return 2.0 * double(c.n * sizeof(float));
}

const char* fma_peak_isa() { return isa().name; }

}  // namespace ember::bench
