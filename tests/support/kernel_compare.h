// Shared by the layer-kernel tests: random inputs that float32 represents exactly,
// and a normwise error against a float64 reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace test_support {

// Uniform in [-1, 1), drawn as float so float32 and float64 kernels see the same values.
inline std::vector<double> random_values(int64_t count, std::mt19937& g) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (double& e : v) e = u(g);
  return v;
}

// Largest |got - want| over the reference's largest magnitude (at least 1); NaN counts as infinite.
template <class T>
double rel_err(const std::vector<T>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double scale = 1, err = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(double(got[i]) - want[i]);
    err = std::max(err, d != d ? std::numeric_limits<double>::infinity() : d);
  }
  return err / scale;
}

}  // namespace test_support
