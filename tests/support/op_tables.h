// The inputs the elementwise op tests draw from: dtypes, layouts, value domains,
// shapes and shape/layout pairs, and the random draws that fill them. Both the CPU
// table (tests/tensor/test_ops_elementwise.cpp, against a float64 reference) and
// the CUDA table (tests/cuda/test_ops.cpp, against the CPU) use it, so that the two
// suites exercise the same cases and a new case reaches both.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "support/reference.h"

namespace op_tables {

using ember::DType;
using ember::Scalar;
using ember::Shape;
using ref::Layout;

inline const DType kAllTypes[] = {ember::kFloat32, ember::kFloat64, ember::kFloat16,
                                  ember::kBFloat16, ember::kInt8,   ember::kUInt8,
                                  ember::kInt32,    ember::kInt64,  ember::kBool};
inline const DType kFloatTypes[] = {ember::kFloat32, ember::kFloat64, ember::kFloat16, ember::kBFloat16};
inline const Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded,
                                  Layout::permuted};

// The value range an operand is drawn from: floating dtypes use [flo, fhi],
// integer dtypes [ilo, ihi] (uint8 clips ilo at 0). `discrete` draws floats as
// integers / 2 so that ties and equalities happen (comparisons, maximum, minimum).
struct Domain {
  double flo, fhi, ilo, ihi;
  bool discrete = false;
  double gap = 0;  // floats keep at least this distance from 0 (kinks: abs, relu)
};

inline const Domain kSigned = {-4, 4, -10, 10};     // most unary ops
inline const Domain kPositive = {0.1, 10, 1, 10};   // log, sqrt, rsqrt
inline const Domain kWide = {-10, 10, -10, 10};     // add, sub, mul; the dividend of div
inline const Domain kTies = {-2, 2, -3, 3, true};   // comparisons, maximum, minimum

// The domains an op's row names (kernels/base/ops.def.h, `domain` columns).
namespace domain {
inline const Domain any_sign = kSigned;
inline const Domain away_from_zero = {-4, 4, -10, 10, false, 0.1};
inline const Domain positive = kPositive;
inline const Domain wide = kWide;
inline const Domain ties = kTies;
inline const Domain divisor = {0.25, 4, -4, 4};  // integer zero divisors give inf/nan in float
inline const Domain pow_base = {0.25, 3, -3, 3};
inline const Domain pow_exponent = {-2, 2, 0, 3};
}  // namespace domain

// The dtypes an op's row names (`dtypes` column): the input dtypes PyTorch accepts.
namespace dtypes {
inline const std::vector<DType> all = {ember::kFloat32, ember::kFloat64, ember::kFloat16, ember::kBFloat16,
                                       ember::kInt8,    ember::kUInt8,   ember::kInt32,   ember::kInt64,
                                       ember::kBool};
inline const std::vector<DType> floats = {ember::kFloat32, ember::kFloat64, ember::kFloat16, ember::kBFloat16};
}  // namespace dtypes

// n values for dtype dt from domain d.
inline std::vector<double> draw(int64_t n, DType dt, const Domain& d, std::mt19937_64& rng) {
  if (dt == ember::kBool) return ref::random_values(n, dt, rng, 0, 1);
  if (ember::is_floating(dt)) {
    if (d.gap > 0) {  // [flo, fhi] with (-gap, gap) pushed outwards
      auto v = ref::random_values(n, ember::kFloat64, rng, d.flo + d.gap, d.fhi - d.gap);
      for (auto& x : v) x = ref::cast(x < 0 ? x - d.gap : x + d.gap, dt);
      return v;
    }
    if (!d.discrete) return ref::random_values(n, dt, rng, d.flo, d.fhi);
    auto v = ref::random_values(n, ember::kInt64, rng, 2 * d.flo, 2 * d.fhi);
    for (auto& x : v) x /= 2;
    return v;
  }
  return ref::random_values(n, dt, rng, dt == ember::kUInt8 ? std::max(0.0, d.ilo) : d.ilo, d.ihi);
}

// A C++ number of the given kind (Float64 = a floating literal, Int64 = an integer,
// Bool = bool) from the domain: quarters for floats, so that every floating dtype
// holds it exactly.
inline Scalar draw_scalar(DType kind, const Domain& d, std::mt19937_64& rng) {
  if (kind == ember::kBool) return Scalar(ref::random_values(1, ember::kBool, rng, 0, 1)[0] != 0);
  if (kind == ember::kInt64)
    return Scalar(static_cast<int64_t>(ref::random_values(1, ember::kInt64, rng, d.ilo, d.ihi)[0]));
  const double v = std::round(ref::random_values(1, ember::kFloat64, rng, 4 * d.flo, 4 * d.fhi)[0]) / 4;
  return Scalar(std::max(v, d.flo));
}

// Unary op shapes: 0-dim, 0-size, 1-size, odd and multi-dim.
inline const std::vector<Shape> kUnaryShapes = {{}, {0}, {1}, {37}, {3, 0, 2}, {4, 5}, {2, 3, 5}, {1, 6, 1}};

// Binary op operand shapes: equal, broadcast either way, 0-dim and 0-size.
struct ShapePair {
  Shape a, b;
};
inline const std::vector<ShapePair> kBinaryShapes = {
    {{}, {}},         {{0}, {0}},       {{0, 4}, {4}},    {{3, 0}, {1, 0}},    {{1}, {1}},
    {{1}, {6}},       {{37}, {37}},     {{4, 5}, {4, 5}}, {{3, 1, 5}, {4, 5}}, {{2, 3, 4}, {3, 1}},
    {{5, 1}, {1, 6}}, {{6, 4}, {1}},
};

// Binary op operand layouts: each non-contiguous layout on one side or both.
struct LayoutPair {
  Layout a, b;
};
inline const LayoutPair kLayoutPairs[] = {
    {Layout::contiguous, Layout::contiguous}, {Layout::transposed, Layout::contiguous},
    {Layout::contiguous, Layout::transposed}, {Layout::sliced, Layout::sliced},
    {Layout::expanded, Layout::contiguous},   {Layout::contiguous, Layout::expanded},
    {Layout::permuted, Layout::permuted}};

}  // namespace op_tables
