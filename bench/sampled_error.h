// Checking a benchmarked GEMM without computing the whole reference: 256 sampled
// elements of c = a . b (n x n, row-major; b read transposed when trans_b) against
// float64 dot products. Every GEMM suite reports this next to its timing, so a fast
// wrong kernel cannot pass unnoticed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

namespace ember::bench {

// max |c - want| / max |want| over the sampled elements (the absolute error when
// every sampled value is 0).
template <class T>
double sampled_rel_err(int64_t n, const T* a, const T* b, const T* c, bool trans_b = false, uint32_t seed = 3) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  double diff = 0, scale = 0;
  for (int s = 0; s < 256; ++s) {
    const int64_t i = pick(g), j = pick(g);
    double want = 0;
    for (int64_t p = 0; p < n; ++p) want += double(a[i * n + p]) * double(trans_b ? b[j * n + p] : b[p * n + j]);
    diff = std::max(diff, std::fabs(double(c[i * n + j]) - want));
    scale = std::max(scale, std::fabs(want));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace ember::bench
