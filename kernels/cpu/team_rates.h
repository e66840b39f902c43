// How fast each thread of a team gets through equal work, relative to the others,
// learned from the ranges it ran. On a shared machine one core can run 20% slower
// than another for seconds at a time (another tenant on its physical core: a pure
// FMA loop measured 15.0 against 18.1 ms on this project's 2-core machine), and
// equal halves then leave the faster thread waiting at the end of every parallel
// region. A caller that splits work whose results do not depend on which thread
// computes them (the convolution's forward and input gradient: each output comes
// from one image) sizes each thread's range by its rate instead. Not part of the
// public API.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace ember::cpu {

class TeamRates {
 public:
  static constexpr int kMax = 64;  // threads tracked; a larger team is cut to this

  // Boundaries of n items over nt threads: thread t takes [bounds[t], bounds[t + 1]),
  // in proportion to its rate (rates start at 1 and are held within [1/4, 4]; a
  // thread may get no items).
  void split(int64_t n, int nt, int64_t* bounds) const {
    double total = 0;
    for (int t = 0; t < nt; ++t) total += rate(t);
    double acc = 0;
    bounds[0] = 0;
    for (int t = 0; t < nt; ++t) {
      acc += rate(t);
      bounds[t + 1] = t + 1 == nt ? n : std::clamp<int64_t>(int64_t(double(n) * acc / total + 0.5), bounds[t], n);
    }
  }

  // The threads of one region ran items[t] items in ns[t] nanoseconds. Each thread's
  // rate is kept relative to the team's mean (absolute rates differ 100x between
  // kernels) and moves a quarter of the way to the measured one, so that one slow
  // region (a descheduled thread) shifts the split a little, not all the way. A
  // thread that ran nothing keeps its rate; fewer than two measured threads change
  // nothing.
  void update(int nt, const int64_t* items, const int64_t* ns) {
    nt = std::min(nt, kMax);
    double measured[kMax], mean = 0;
    int counted = 0;
    for (int t = 0; t < nt; ++t) {
      measured[t] = items[t] > 0 && ns[t] > 0 ? double(items[t]) / double(ns[t]) : 0;
      if (measured[t] > 0) mean += measured[t], ++counted;
    }
    if (counted < 2) return;
    mean /= counted;
    for (int t = 0; t < nt; ++t) {
      if (measured[t] <= 0) continue;
      const float old = rates_[t].load(std::memory_order_relaxed);
      rates_[t].store(0.75f * (old > 0 ? old : 1.0f) + 0.25f * float(measured[t] / mean), std::memory_order_relaxed);
    }
  }

  // Thread t's rate (1 until measured), within [0.25, 4].
  float rate(int t) const {
    const float r = t < kMax ? rates_[t].load(std::memory_order_relaxed) : 0;
    return r > 0 ? std::clamp(r, 0.25f, 4.0f) : 1.0f;
  }

  void reset() {
    for (auto& r : rates_) r.store(0, std::memory_order_relaxed);
  }

 private:
  // Relaxed atomics: calls from several threads at once (two models run side by
  // side) may interleave their updates; any mix of rates is still a valid split.
  std::atomic<float> rates_[kMax] = {};
};

}  // namespace ember::cpu
