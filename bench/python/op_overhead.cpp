// ember-op-overhead: the time of one small op called from C++ (nanoseconds per
// call, best of 5 rounds), the baseline bench/python/python_vs_cpp.py sets the same
// calls from Python against. Prints one JSON object.
#include <chrono>
#include <cstdio>
#include <functional>

#include "ember.h"

using namespace ember;

static double ns_per_call(const std::function<void()>& fn, int calls) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ns / calls);
  }
  return best;
}

int main() {
  const Tensor a = ones({1}), b = ones({1});
  Tensor c = ones({1});
  const Tensor m = ones({4, 4});
  const int n = 200000;
  std::printf("{\"add\": %.1f, \"add_\": %.1f, \"relu\": %.1f, \"sum\": %.1f, \"matmul_4x4\": %.1f}\n",
              ns_per_call([&] { Tensor r = a + b; }, n), ns_per_call([&] { c.add_(b); }, n),
              ns_per_call([&] { Tensor r = a.relu(); }, n), ns_per_call([&] { Tensor r = a.sum(); }, n),
              ns_per_call([&] { Tensor r = m.matmul(m); }, n));
  return 0;
}
