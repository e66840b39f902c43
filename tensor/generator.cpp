// The default generator and offset bookkeeping.
#include "tensor/generator.h"

#include <cstring>

#include "kernels/base/error.h"

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

namespace {

constexpr char kStateTag[4] = {'E', 'M', 'G', '1'};
constexpr size_t kStateBytes = 20;

void put_le(uint8_t* at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return v;
}

}  // namespace

std::vector<uint8_t> Generator::get_state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<uint8_t> out(kStateBytes);
  std::memcpy(out.data(), kStateTag, 4);
  put_le(out.data() + 4, seed_);
  put_le(out.data() + 12, offset_);
  return out;
}

void Generator::set_state(const std::vector<uint8_t>& state) {
  if (state.size() != kStateBytes || std::memcmp(state.data(), kStateTag, 4) != 0)
    throw ValueError("Generator.set_state: expected the 20 bytes of Generator.get_state, got " +
                     std::to_string(state.size()) + " bytes" +
                     (state.size() == kStateBytes ? " with another tag" : ""));
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = get_le(state.data() + 4);
  offset_ = get_le(state.data() + 12);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ember
