// A seedable source of random numbers. Philox is counter-based, so a generator is
// just (seed, offset): each random tensor takes the next `numel` counters. The same
// seed gives the same tensors whatever the thread count.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <mutex>
#include <vector>

EMBER_API_BEGIN

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t seed() const { return seed_; }
  // Reserves `n` values (rounded up to a multiple of 4) and returns the first offset.
  uint64_t reserve(uint64_t n);

  // The whole state as bytes, for checkpoints: a generator given them by set_state
  // continues with exactly the numbers this one would draw next. 20 bytes: the
  // tag "EMG1", then seed and offset as little-endian 64-bit words. set_state
  // raises ValueError for bytes that are not such a state (docs/errors.md).
  std::vector<uint8_t> get_state() const;
  void set_state(const std::vector<uint8_t>& state);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the default generator, like torch.manual_seed.
void manual_seed(uint64_t seed);

}  // namespace ember

EMBER_API_END
