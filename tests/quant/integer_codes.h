// Helpers of the integer-product tests (test_matmul_integer.cpp,
// test_conv_integer.cpp): random 8-bit codes weighted toward the extremes, and
// any integer tensor's values as int64 for comparing with an int64 reference.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tensor/ops.h"

namespace integer_codes {

// Random codes of `dt` (int8 or uint8) with a quarter at the extremes (the largest products).
inline ember::Tensor random_codes(const ember::Shape& shape, ember::DType dt, std::mt19937& g) {
  using ember::kInt8;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::uniform_int_distribution<int> u(dt == kInt8 ? -128 : 0, dt == kInt8 ? 127 : 255), pick(0, 3);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = pick(g) == 0 ? (dt == kInt8 ? -128 : 255) : u(g);
  return ember::tensor(v, shape).to(dt);
}

inline std::vector<int64_t> values(const ember::Tensor& t) {
  return t.to(ember::kCPU, ember::kInt64).contiguous().reshape({t.numel()}).to_vector<int64_t>();
}

}  // namespace integer_codes
