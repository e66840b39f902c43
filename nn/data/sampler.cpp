// Seeded shuffles and rank shards for the DataLoader.
#include "nn/data/sampler.h"

#include <numeric>
#include <random>

namespace ember::data {
namespace {

// splitmix64's finaliser: a bijection on 64 bits that scatters nearby inputs.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) without modulo bias: reject the few draws below 2^64 mod bound.
uint64_t draw_below(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // mix(seed) + epoch is one-to-one in epoch for a given seed, and so is mix: every
  // epoch of one seed starts its own generator state.
  std::mt19937_64 rng(mix(mix(seed) + static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[draw_below(rng, static_cast<uint64_t>(i) + 1)]);
  return order;
}

std::vector<int64_t> shard_indices(const std::vector<int64_t>& order, int64_t num_replicas, int64_t rank) {
  const int64_t n = static_cast<int64_t>(order.size());
  if (n == 0) return {};
  const int64_t per_rank = (n + num_replicas - 1) / num_replicas;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  // Position p of the padded order is order[p mod n]: the padding wraps around.
  for (int64_t k = 0; k < per_rank; ++k) mine.push_back(order[(rank + k * num_replicas) % n]);
  return mine;
}

}  // namespace ember::data
