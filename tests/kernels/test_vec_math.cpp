// exp_fast (kernels/base/vec_math.h) against double-precision exp: at most 2 ulp
// over the whole finite range it returns normal numbers for, and the right
// specials outside it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/base/vec_math.h"

namespace {
// Distance in units in the last place between two positive finite floats.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - ib);
}
}  // namespace

TEST_CASE("exp_fast is within 2 ulp of exp in double", "[kernels][vec_math]") {
  int64_t worst = 0;
  float worst_x = 0;
  // Every 97th float bit pattern of either sign up to |x| = 88.7 (about 22 million).
  const float lo = -87.33f, hi = 88.7f;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t bits = 0; bits < 0x42b16666u; bits += 97) {
      const uint32_t u = bits | sign;
      float x;
      std::memcpy(&x, &u, 4);
      if (x < lo || x > hi) continue;
      const float ref = static_cast<float>(std::exp(static_cast<double>(x)));
      const int64_t d = ulp_distance(ember::exp_fast(x), ref);
      if (d > worst) { worst = d; worst_x = x; }
    }
  INFO("worst x = " << worst_x);
  REQUIRE(worst <= 2);
}

TEST_CASE("exp_fast specials", "[kernels][vec_math]") {
  using ember::exp_fast;
  REQUIRE(exp_fast(0.0f) == 1.0f);
  REQUIRE(exp_fast(-std::numeric_limits<float>::infinity()) == 0.0f);
  REQUIRE(exp_fast(-1000.0f) == 0.0f);
  REQUIRE(std::isinf(exp_fast(89.0f)));
  REQUIRE(std::isinf(exp_fast(std::numeric_limits<float>::infinity())));
  REQUIRE(std::isnan(exp_fast(std::numeric_limits<float>::quiet_NaN())));
  REQUIRE(ulp_distance(exp_fast(1.0f), 2.7182817f) <= 1);
}
