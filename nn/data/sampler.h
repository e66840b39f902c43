// Which samples an epoch visits, in what order: the identity or a seeded shuffle,
// then optionally one rank's share of it (PyTorch's RandomSampler and
// DistributedSampler as plain functions of their arguments, with no state).
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <vector>

EMBER_API_BEGIN

namespace ember::data {

// A permutation of 0..n-1 that is a function of (seed, epoch) alone: every rank of
// a distributed job computes the same one, and a rerun sees the same order. It is
// Fisher-Yates over std::mt19937_64, whose output the C++ standard fixes, with our
// own bounded draw (std::uniform_int_distribution differs between libraries).
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch);

// Rank `rank`'s share of `order` among `num_replicas` ranks: `order` is padded by
// wrapping around to a multiple of num_replicas, then rank r takes the elements at
// r, r + num_replicas, ... So every rank gets ceil(n / num_replicas) samples and
// together they cover `order`, a few samples twice (DistributedSampler's padding).
std::vector<int64_t> shard_indices(const std::vector<int64_t>& order, int64_t num_replicas, int64_t rank);

}  // namespace ember::data

EMBER_API_END
