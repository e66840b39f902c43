// parallel_rows (kernels/base/parallel.h) behind a function pointer, for templates
// with many instantiations: each `#pragma omp parallel` in a template is compiled
// into a function of its own per instantiation (and parallel_rows compiles the body
// twice, for the team and for the plain loop), and reduce.cpp's schedules have a
// copy for every dtype and reduction: its five regions took 49 KB more of the
// library that way than through this function. Internal to the CPU kernels.
#pragma once

#include <cstdint>

namespace ember::cpu {

// body(ctx, i) for every i in [0, n): on the thread team (static schedule) when
// `worth_a_team` and the team has more than one thread, else in a plain loop.
void team_loop(int64_t n, bool worth_a_team, void (*body)(void*, int64_t), void* ctx);

template <class F>
void team_loop(int64_t n, bool worth_a_team, F& f) {
  team_loop(n, worth_a_team, [](void* c, int64_t i) { (*static_cast<F*>(c))(i); }, &f);
}

}  // namespace ember::cpu
