// The default generator and offset bookkeeping.
#include "tensor/generator.h"

namespace ember {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t start = offset_;
  offset_ += (n + 3) / 4 * 4;
  return start;
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ember
