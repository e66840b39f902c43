// TeamRates (kernels/cpu/team_rates.h): the ranges it deals and how measured times
// move them, against splits worked out by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/team_rates.h"

using ember::cpu::TeamRates;

namespace {

std::vector<int64_t> split(const TeamRates& r, int64_t n, int nt) {
  std::vector<int64_t> b(size_t(nt) + 1);
  r.split(n, nt, b.data());
  return b;
}

}  // namespace

TEST_CASE("TeamRates splits evenly until it has measured the team", "[kernels][team_rates]") {
  TeamRates r;
  CHECK(split(r, 100, 2) == std::vector<int64_t>{0, 50, 100});
  CHECK(split(r, 7, 3) == std::vector<int64_t>{0, 2, 5, 7});  // 2.33 and 4.67 rounded
  CHECK(split(r, 1, 2) == std::vector<int64_t>{0, 1, 1});     // 0.5 rounds up; thread 1 idles
  CHECK(split(r, 0, 2) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("TeamRates moves a quarter of the way to the measured rates", "[kernels][team_rates]") {
  TeamRates r;
  // 50 items each, thread 1 twice as slow: rates 0.5 and 0.25 per ns, mean 0.375,
  // relative 4/3 and 2/3; a quarter of the way from 1: 13/12 and 11/12.
  const int64_t items[2] = {50, 50}, ns[2] = {100, 200};
  r.update(2, items, ns);
  CHECK(r.rate(0) == Approx(13.0 / 12));
  CHECK(r.rate(1) == Approx(11.0 / 12));
  CHECK(split(r, 100, 2) == std::vector<int64_t>{0, 54, 100});  // 100 * 13/24 = 54.2
  // A region where one thread ran nothing, or only one thread was timed, changes
  // nothing.
  const int64_t one[2] = {50, 0}, t[2] = {100, 100};
  r.update(2, one, t);
  CHECK(r.rate(0) == Approx(13.0 / 12));
  CHECK(r.rate(1) == Approx(11.0 / 12));
}

TEST_CASE("TeamRates keeps the rates within 4x of 1", "[kernels][team_rates]") {
  TeamRates r;
  // Thread 1 100x slower, many times: relative rates 200/101 and 2/101, the second
  // held at 0.25, so thread 0 takes 100 * 1.980 / 2.230 = 88.8 of 100 items.
  const int64_t items[2] = {10, 10}, ns[2] = {10, 1000};
  for (int i = 0; i < 80; ++i) r.update(2, items, ns);
  CHECK(r.rate(0) == Approx(200.0 / 101).epsilon(1e-4));
  CHECK(r.rate(1) == 0.25f);
  CHECK(split(r, 100, 2) == std::vector<int64_t>{0, 89, 100});
  r.reset();
  CHECK(split(r, 100, 2) == std::vector<int64_t>{0, 50, 100});
}

TEST_CASE("TeamRates ranges cover every item once for any rates and team size", "[kernels][team_rates]") {
  std::mt19937 g(5);
  std::uniform_int_distribution<int64_t> work(1, 1000);
  for (int nt : {2, 3, 7, 64}) {
    TeamRates r;
    for (int round = 0; round < 50; ++round) {
      std::vector<int64_t> items(size_t(nt), 0), ns(size_t(nt), 0);
      for (int t = 0; t < nt; ++t) items[size_t(t)] = work(g), ns[size_t(t)] = work(g) * (t % 5 == 0 ? 100 : 1);
      r.update(nt, items.data(), ns.data());
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{63}, int64_t{100}, int64_t{1001}}) {
        const std::vector<int64_t> b = split(r, n, nt);
        INFO("threads " << nt << ", round " << round << ", n " << n);
        CHECK(b.front() == 0);
        CHECK(b.back() == n);
        CHECK(std::is_sorted(b.begin(), b.end()));
      }
    }
  }
  // Thread 1 10000x slower: relative rates 2 and 0.0002, the second held at 1/4; of
  // two items both go to the fast thread (2 * 2 / 2.25 = 1.8 rounds to 2).
  TeamRates r;
  const int64_t items[2] = {10, 10}, ns[2] = {1, 10000};
  for (int i = 0; i < 80; ++i) r.update(2, items, ns);
  CHECK(r.rate(0) == Approx(2.0).epsilon(1e-3));
  CHECK(split(r, 2, 2) == std::vector<int64_t>{0, 2, 2});
  // A time of zero (a clock that did not move) is not a measurement.
  const int64_t zero[2] = {0, 5};
  TeamRates fresh;
  fresh.update(2, items, zero);
  CHECK(fresh.rate(0) == 1.0f);
  CHECK(fresh.rate(1) == 1.0f);
}
