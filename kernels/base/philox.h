// Philox4x32-10, a counter-based random generator (Salmon et al., SC'11).
// Element i of a random tensor is a pure function of (seed, offset + i), so the
// numbers do not depend on how many threads (or, later, which device) produced them.
#pragma once

#include <cstdint>

#include "kernels/base/half.h"  // EMBER_HD

namespace ember {

struct Philox4x32 {
  uint32_t v[4];
};

// Ten rounds of the Philox bijection keyed by the 64-bit seed, applied to the
// 128-bit counter (counter, subsequence).
EMBER_HD inline Philox4x32 philox(uint64_t seed, uint64_t counter, uint64_t subsequence) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = static_cast<uint32_t>(subsequence), c3 = static_cast<uint32_t>(subsequence >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// 24 random bits -> a float in [0, 1): every value is exactly representable.
EMBER_HD inline float uint_to_unit_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}
// 53 random bits -> a double in [0, 1).
EMBER_HD inline double uint_to_unit_double(uint32_t hi, uint32_t lo) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(x) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
