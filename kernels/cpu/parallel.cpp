// ember::set_num_threads: the one knob for CPU parallelism. OpenMP's own setting
// (omp_set_num_threads) belongs to the thread that calls it, so a host application
// that sets it on its main thread and runs Ember on a worker would see no effect.
// Ember keeps the number process-wide instead, and every parallel region in the
// CPU kernels asks for it by name: #pragma omp parallel num_threads(get_num_threads()).
#include "kernels/base/parallel.h"

#include <omp.h>

#include "kernels/cpu/team_loop.h"

#include <atomic>

namespace ember {
namespace {
// 0 until set_num_threads is called: OpenMP's default (OMP_NUM_THREADS, or one
// thread per core) then applies.
std::atomic<int> g_num_threads{0};
}  // namespace

void set_num_threads(int n) { g_num_threads.store(n < 1 ? 1 : n, std::memory_order_relaxed); }

int get_num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

}  // namespace ember

namespace ember::cpu {

void team_loop(int64_t n, bool worth_a_team, void (*body)(void*, int64_t), void* ctx) {
  parallel_rows(n, worth_a_team, [&](int64_t i) { body(ctx, i); });
}

}  // namespace ember::cpu
