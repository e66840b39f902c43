// The float32 transcendentals (kernels/base/vec_math.h, vec_erf.h) against double
// references rounded to float: every instruction-set table of kernels/cpu/vmath.h
// this CPU runs, plus the portable scalar function itself, over every 509th
// float32 bit pattern (both signs, all of the range: about 8.4 million values), the
// specials, subnormals, and 4096 patterns on each side of every threshold and branch
// boundary. The bound is in ulps of the rounded reference (subnormal ulps in the
// subnormal range); docs/numerics.md lists them. scripts/check-vmath sweeps all 2^32.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/base/vec_erf.h"
#include "kernels/base/vec_math.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/vmath.h"

#if defined(__x86_64__)
#include <immintrin.h>
// The short exp of the AVX-512 half softmax, the table exp of the float32 softmax
// loops (exp_avx512.h) and the log of the short rows' sums (log_avx512.h), compiled
// here for the tests below; they only run where the CPU has AVX-512.
EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/exp_avx512.h"
#include "kernels/cpu/log_avx512.h"
namespace {
void log16_of(const float* x, float* y) { _mm512_storeu_ps(y, ember::cpu::log16(_mm512_loadu_ps(x))); }
void exp_short16(const float* x, float* y) {
  _mm512_storeu_ps(y, ember::cpu::exp16_pow2(_mm512_loadu_ps(x)));
}
void exp_table16(const float* x, float* y) {
  _mm512_storeu_ps(y, ember::cpu::exp16_table(_mm512_loadu_ps(x)));
}
}  // namespace
EMBER_ISA_END
#endif

namespace {

using ember::cpu::vmath_detail::UnaryF32;
using ember::cpu::vmath_detail::VmathKernels;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Floats as integers that order like the values (-0 and +0 both map to 0), so the
// distance of two finite or infinite floats is their ulp distance.
int64_t ordinal(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}

// Every 509th pattern, the specials, and the neighbourhoods of `edges`.
std::vector<float> inputs(std::initializer_list<float> edges) {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 509) x.push_back(from_bits(static_cast<uint32_t>(b)));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
    x.push_back(v);
  for (uint32_t u = 1; u < 0x00800000u; u += 97) {  // subnormals of both signs
    x.push_back(from_bits(u));
    x.push_back(from_bits(u | 0x80000000u));
  }
  for (float e : edges)
    for (float s : {e, -e}) {
      uint32_t u;
      std::memcpy(&u, &s, 4);
      // Each side in a block of its own, so that whole vectors lie on one side of
      // the edge (the AVX-512 gelu picks its path per vector).
      for (uint32_t d = 0; d < 4096; ++d) x.push_back(from_bits(u + d));
      for (uint32_t d = 1; d <= 4096; ++d) x.push_back(from_bits(u - d));
    }
  return x;
}

struct Case {
  const char* name;
  UnaryF32 VmathKernels::*kernel;
  float (*scalar)(float);  // the portable scalar function (the functors' float32 form)
  double (*reference)(double);
  std::vector<float> x;
  int64_t bound;
};

// Largest ulp distance of y from the rounded references; NaN must meet NaN.
int64_t worst_ulps(const std::vector<float>& x, const std::vector<float>& ref, const std::vector<float>& y,
                   float& worst_x) {
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(ref[i]) || std::isnan(y[i])) {
      if (std::isnan(ref[i]) != std::isnan(y[i])) {
        worst_x = x[i];
        return std::numeric_limits<int64_t>::max();
      }
      continue;
    }
    const int64_t d = std::llabs(ordinal(y[i]) - ordinal(ref[i]));
    if (d > worst) {
      worst = d;
      worst_x = x[i];
    }
  }
  return worst;
}

void check(const Case& c) {
  std::vector<float> ref(c.x.size()), y(c.x.size());
  for (size_t i = 0; i < c.x.size(); ++i) ref[i] = static_cast<float>(c.reference(c.x[i]));
  float worst_x = 0;
  for (size_t i = 0; i < c.x.size(); ++i) y[i] = c.scalar(c.x[i]);
  {
    const int64_t worst = worst_ulps(c.x, ref, y, worst_x);
    INFO(c.name << " scalar: worst " << worst << " ulp at x = " << worst_x);
    CHECK(worst <= c.bound);
  }
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const VmathKernels& k = ember::cpu::vmath();
    std::fill(y.begin(), y.end(), 0.0f);
    (k.*c.kernel)(c.x.data(), y.data(), static_cast<int64_t>(c.x.size()));
    const int64_t worst = worst_ulps(c.x, ref, y, worst_x);
    INFO(c.name << " table " << k.name << ": worst " << worst << " ulp at x = " << worst_x);
    CHECK(std::string(k.name) == level);
    CHECK(worst <= c.bound);
  }
  ember::cpu::set_isa("auto");
}

double gelu_reference(double x) {
  // erfc for x < 0: 1 + erf(x / sqrt 2) cancels to 0 in double long before gelu does.
  return x >= 0 ? 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))) : 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

}  // namespace

// Edges: exp's overflow, subnormal and zero thresholds; tanh's and erf's branch
// points; erfc's piece boundaries (z = 1, 2, 10.5, times sqrt 2 for gelu).
TEST_CASE("vectorized exp is within 1 ulp of exp in double", "[kernels][vec_math]") {
  check({"exp", &VmathKernels::exp, [](float v) { return ember::exp_fast(v); },
         [](double v) { return std::exp(v); }, inputs({88.72283935546875f, 87.33654f, 103.972f, 89.0f, 104.0f, 0.34657f}), 1});
}

TEST_CASE("vectorized sigmoid is within 2 ulp of the double reference", "[kernels][vec_math]") {
  check({"sigmoid", &VmathKernels::sigmoid, [](float v) { return ember::sigmoid_fast(v); },
         [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, inputs({88.72f, 103.97f, 16.64f}), 2});
}

TEST_CASE("vectorized tanh is within 2 ulp of tanh in double", "[kernels][vec_math]") {
  check({"tanh", &VmathKernels::tanh, [](float v) { return ember::tanh_fast(v); },
         [](double v) { return std::tanh(v); }, inputs({0.625f, 9.01f}), 2});
}

TEST_CASE("vectorized erf is within 2 ulp of erf in double", "[kernels][vec_math]") {
  check({"erf", &VmathKernels::erf, [](float v) { return ember::erf_fast(v); },
         [](double v) { return std::erf(v); }, inputs({0.5f, 1.0f, 2.0f, 3.92f, 10.5f}), 2});
}

TEST_CASE("vectorized gelu is within 4 ulp of the double reference", "[kernels][vec_math]") {
  check({"gelu", &VmathKernels::gelu, [](float v) { return ember::gelu_fast(v); }, gelu_reference,
         inputs({0.70710678f, 1.41421356f, 2.82842712f, 4.0f, 14.85f, 13.9f}), 4});
}

TEST_CASE("vectorized transcendentals keep the specials", "[kernels][vec_math]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const VmathKernels& k = ember::cpu::vmath();
    INFO("table " << k.name);
    const std::vector<float> x = {0.0f, -0.0f, inf, -inf, nan, -1000.0f, 1000.0f};
    auto run = [&](UnaryF32 f) {
      std::vector<float> y(x.size());
      f(x.data(), y.data(), static_cast<int64_t>(x.size()));
      return y;
    };
    const auto e = run(k.exp), s = run(k.sigmoid), t = run(k.tanh), r = run(k.erf), g = run(k.gelu);
    CHECK((e[0] == 1 && e[1] == 1 && e[2] == inf && e[3] == 0 && std::isnan(e[4]) && e[5] == 0 && e[6] == inf));
    CHECK((s[0] == 0.5f && s[2] == 1 && s[3] == 0 && std::isnan(s[4]) && s[5] == 0 && s[6] == 1));
    CHECK((t[0] == 0 && !std::signbit(t[0]) && std::signbit(t[1]) && t[2] == 1 && t[3] == -1 && std::isnan(t[4])));
    CHECK((r[0] == 0 && std::signbit(r[1]) && r[2] == 1 && r[3] == -1 && std::isnan(r[4]) && r[5] == -1));
    // gelu(-inf) is -inf * 0 in the defining formula: NaN, as libm erf gave before.
    CHECK((g[0] == 0 && std::signbit(g[1]) && g[2] == inf && std::isnan(g[3]) && std::isnan(g[4]) && g[5] == 0 &&
           g[6] == 1000.0f));
    // The same zeros in 16 lanes that all have |x| < 4 (the AVX-512 gelu's table path).
    std::vector<float> small(16, 0.25f), gs(16);
    small[1] = -0.0f;
    small[2] = std::numeric_limits<float>::denorm_min();
    small[3] = -std::numeric_limits<float>::denorm_min();
    k.gelu(small.data(), gs.data(), 16);
    CHECK((gs[1] == 0 && std::signbit(gs[1]) && !std::signbit(gs[2]) && std::signbit(gs[3])));
  }
  ember::cpu::set_isa("auto");
}

// Not run by default (hidden tag): every float32 input of every function through
// each table this CPU runs, in chunks, the worst printed. scripts/check-vmath runs
// it; about 9 CPU-minutes, mostly the double references.
TEST_CASE("vectorized transcendentals over all 2^32 inputs", "[.][exhaustive]") {
  namespace vd = ember::cpu::vmath_detail;
  using ember::cpu::Isa;
  struct Fn {
    const char* name;
    UnaryF32 VmathKernels::*kernel;
    double (*reference)(double);
  };
  const Fn fns[] = {{"exp", &VmathKernels::exp, [](double v) { return std::exp(v); }},
                    {"sigmoid", &VmathKernels::sigmoid, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
                    {"tanh", &VmathKernels::tanh, [](double v) { return std::tanh(v); }},
                    {"erf", &VmathKernels::erf, [](double v) { return std::erf(v); }},
                    {"gelu", &VmathKernels::gelu, gelu_reference}};
  std::vector<const VmathKernels*> tables = {vd::vmath_kernels_generic()};
  if (ember::cpu::cpu_isa() >= Isa::avx2 && vd::vmath_kernels_avx2()) tables.push_back(vd::vmath_kernels_avx2());
  if (ember::cpu::cpu_isa() >= Isa::avx512 && vd::vmath_kernels_avx512()) tables.push_back(vd::vmath_kernels_avx512());
  constexpr uint64_t kChunk = uint64_t{1} << 22;
  for (const Fn& f : fns) {
    std::vector<int64_t> worst(tables.size(), 0);
    std::vector<float> worst_x(tables.size(), 0);
#pragma omp parallel
    {
      std::vector<float> x(kChunk), ref(kChunk), y(kChunk);
#pragma omp for schedule(dynamic)
      for (int64_t c = 0; c < int64_t{1} << 10; ++c) {
        for (uint64_t i = 0; i < kChunk; ++i) {
          x[i] = from_bits(static_cast<uint32_t>(static_cast<uint64_t>(c) * kChunk + i));
          ref[i] = static_cast<float>(f.reference(x[i]));
        }
        for (size_t t = 0; t < tables.size(); ++t) {
          (tables[t]->*f.kernel)(x.data(), y.data(), static_cast<int64_t>(kChunk));
          float wx = 0;
          const int64_t w = worst_ulps(x, ref, y, wx);
#pragma omp critical
          if (w > worst[t]) {
            worst[t] = w;
            worst_x[t] = wx;
          }
        }
      }
    }
    for (size_t t = 0; t < tables.size(); ++t)
      WARN(f.name << " (" << tables[t]->name << " table, all 2^32 inputs): worst " << worst[t] << " ulp at x = "
                  << worst_x[t]);
  }
}

// The short exp of the half softmax and the half exp (exp16_pow2, 2^s as exp2_16)
// keeps a relative error below 1e-5 (docs/kernels-cpu.md: 2^f by a degree-4
// polynomial, 2.9e-6, plus the rounding of x log2 e), far below a float16 half ulp,
// so a softmax row's values round as the exact ones do but for near-ties. Every 97th
// float in [-103, 0], and -inf, NaN; the arguments past any exp's underflow (the
// route has no clamp: vreduceps must give 0 for them, integers from -2^23 on, and
// -inf) must give 0.
TEST_CASE("the half softmax's short exp is within 1e-5 relative", "[kernels][vec_math]") {
#if defined(__x86_64__)
  if (ember::cpu::cpu_isa() < ember::cpu::Isa::avx512) return;
  std::vector<float> x;
  for (uint32_t u = 0x80000000u; from_bits(u) >= -103.0f; u += 97) x.push_back(from_bits(u));
  const size_t minus_inf = x.size();
  x.push_back(-std::numeric_limits<float>::infinity());
  for (float v : {-std::numeric_limits<float>::max(), -1e30f, -33554432.0f, -8388608.0f, -8388607.5f, -200.0f,
                  -150.0f})
    x.push_back(v);
  const size_t underflow_end = x.size();
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  while (x.size() % 16) x.push_back(-1.0f);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 16) exp_short16(x.data() + i, y.data() + i);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      CHECK(std::isnan(y[i]));
      continue;
    }
    const double ref = std::exp(static_cast<double>(x[i]));
    if (ref < 1e-36) continue;  // float32 subnormal results: beyond every half type's range
    const double e = std::fabs(y[i] / ref - 1);
    if (e > worst) worst = e, worst_x = x[i];
  }
  INFO("worst relative error " << worst << " at x = " << worst_x);
  CHECK(worst < 1e-5);
  for (size_t i = minus_inf; i < underflow_end; ++i) {
    INFO("x = " << x[i]);
    CHECK(y[i] == 0);
  }
#endif
}

// The softmax loops' exp (exp16_table: a table of 2^(j/16), a degree-3 polynomial,
// one FMA) within 1 ulp of exp rounded to float32, subnormal results included, over
// every 97th float in [-104, 64] (x - max is never positive; the short rows' blocks
// pass logits within [-64, 64]) and 4096 floats on each side of the table's steps
// near 0 (t = +-k ln2 / 32), and below 1.1 ulp from the exact value (over every
// float in [-104, -0] the worst is 1.07; with a table entry 1 ulp off these inputs
// read 1.104); the specials: -0 gives 1, -inf and arguments below -104 give 0, NaN
// stays NaN.
TEST_CASE("the softmax loops' table exp is within 1 ulp", "[kernels][vec_math]") {
#if defined(__x86_64__)
  if (ember::cpu::cpu_isa() < ember::cpu::Isa::avx512) return;
  std::vector<float> x;
  for (uint32_t u = 0x80000000u; from_bits(u) >= -104.0f; u += 97) x.push_back(from_bits(u));
  for (uint32_t u = 1; from_bits(u) <= 64.0f; u += 97) x.push_back(from_bits(u));
  for (int k = -64; k <= 64; ++k) {
    if (k == 0) continue;
    const float step = static_cast<float>(-k * std::log(2.0) / 32);
    uint32_t b;
    std::memcpy(&b, &step, 4);
    for (uint32_t d = 0; d < 4096; ++d) {
      x.push_back(from_bits(b + d));
      x.push_back(from_bits(b - d));
    }
  }
  const size_t specials = x.size();
  for (float v : {-0.0f, -std::numeric_limits<float>::infinity(), -104.5f, -200.0f,
                  -std::numeric_limits<float>::max(), std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  while (x.size() % 16) x.push_back(-1.0f);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 16) exp_table16(x.data() + i, y.data() + i);
  int64_t worst = 0;
  double worst_exact = 0;
  float worst_x = 0;
  for (size_t i = 0; i < specials; ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    const float ref = static_cast<float>(exact);
    worst = std::max<int64_t>(worst, std::llabs(ordinal(y[i]) - ordinal(ref)));
    // In ulps of the float32 spacing at the exact value (2^-149 for subnormals).
    const double ulp = static_cast<double>(std::nextafter(ref, std::numeric_limits<float>::infinity())) - static_cast<double>(ref);
    const double e = std::fabs(static_cast<double>(y[i]) - exact) / ulp;
    if (e > worst_exact) worst_exact = e, worst_x = x[i];
  }
  INFO("worst " << worst << " ulp from the rounded exp, " << worst_exact << " from the exact one at x = " << worst_x);
  CHECK(worst <= 1);
  CHECK(worst_exact < 1.1);
  CHECK(y[specials] == 1.0f);
  for (size_t i = specials + 1; i < specials + 5; ++i) {
    INFO("x = " << x[i]);
    CHECK(y[i] == 0.0f);
  }
  CHECK(std::isnan(y[specials + 5]));
#endif
}

// The log of the softmax loops' sums (log16, log_avx512.h) within 2 ulp of log
// rounded to float32, over every 509th positive float (subnormals to the largest, so
// every binade and mantissa region), and 4096 floats on each side of 1 (where log x
// is small and a relative error shows most); the specials: 0 and -0 give -inf, inf
// gives inf, negative values and NaN give NaN.
TEST_CASE("the softmax loops' vector log is within 2 ulp", "[kernels][vec_math]") {
#if defined(__x86_64__)
  if (ember::cpu::cpu_isa() < ember::cpu::Isa::avx512) return;
  std::vector<float> x;
  for (uint32_t u = 1; u < 0x7f800000u; u += 509) x.push_back(from_bits(u));
  for (uint32_t d = 1; d <= 4096; ++d) {
    x.push_back(from_bits(0x3f800000u + d));
    x.push_back(from_bits(0x3f800000u - d));
  }
  x.push_back(1.0f);
  const size_t specials = x.size();
  for (float v : {0.0f, std::numeric_limits<float>::infinity(), -1.0f, -0.0f,
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  while (x.size() % 16) x.push_back(2.0f);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); i += 16) log16_of(x.data() + i, y.data() + i);
  int64_t worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < specials; ++i) {
    const float ref = static_cast<float>(std::log(static_cast<double>(x[i])));
    const int64_t d = std::llabs(ordinal(y[i]) - ordinal(ref));
    if (d > worst) worst = d, worst_x = x[i];
  }
  INFO("worst " << worst << " ulp at x = " << worst_x);
  CHECK(worst <= 2);
  CHECK(y[specials] == -std::numeric_limits<float>::infinity());
  CHECK(y[specials + 1] == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(y[specials + 2]));
  CHECK(y[specials + 3] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(y[specials + 4]));
#endif
}

// The half types' exp kernel (VmathKernels::exp_half: exp16_half on AVX-512, the
// float32 exp elsewhere) keeps a relative error below 1e-5 over the whole range a
// float32 exp does not overflow or flush (every 97th float in [-103, 88.7]), and
// the specials of exp. Its results are rounded to float16 or bfloat16, whose half
// ulps are 2.4e-4 and 2.0e-3 at least; tests/tensor/test_half.cpp checks those
// roundings over every 16-bit pattern.
TEST_CASE("the half types' exp kernel is within 1e-5 relative", "[kernels][vec_math]") {
  std::vector<float> x;
  for (uint32_t u = 0x80000000u; from_bits(u) >= -103.0f; u += 97) x.push_back(from_bits(u));
  for (uint32_t u = 0; from_bits(u) <= 88.7f; u += 97) x.push_back(from_bits(u));
  const float inf = std::numeric_limits<float>::infinity();
  const size_t specials = x.size();
  const float big = std::numeric_limits<float>::max();
  for (float v : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1000.0f, -1000.0f, 0.0f, big, -big, 8388608.0f,
                  -8388608.0f, 1e30f, -1e30f, -1e-45f})
    x.push_back(v);
  std::vector<float> y(x.size());
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const VmathKernels& k = ember::cpu::vmath();
    INFO("table " << k.name);
    std::fill(y.begin(), y.end(), -1.0f);
    k.exp_half(x.data(), y.data(), static_cast<int64_t>(x.size()));
    double worst = 0, worst_tiny = 0;
    float worst_x = 0;
    for (size_t i = 0; i < specials; ++i) {
      const double ref = std::exp(static_cast<double>(x[i]));
      // Below float32's normals the result has fewer bits; its absolute error must
      // stay below 2^-140, an eighth of bfloat16's smallest gap there (2^-133).
      if (ref < std::numeric_limits<float>::min()) {
        worst_tiny = std::max(worst_tiny, std::fabs(y[i] - ref));
        continue;
      }
      const double e = std::fabs(y[i] / ref - 1);
      if (e > worst) worst = e, worst_x = x[i];
    }
    INFO("worst relative error " << worst << " at x = " << worst_x << "; below float32's normals, " << worst_tiny);
    CHECK(worst < 1e-5);
    CHECK(worst_tiny < std::ldexp(1.0, -140));
    const float* s = y.data() + specials;
    CHECK((s[0] == inf && s[1] == 0 && std::isnan(s[2]) && s[3] == inf && s[4] == 0 && s[5] == 1));
    CHECK((s[6] == inf && s[7] == 0 && s[8] == inf && s[9] == 0 && s[10] == inf && s[11] == 0));
    CHECK(std::fabs(s[12] - 1.0) < 1e-5);  // the smallest negative argument: f rounds to 1 in the short route
  }
  ember::cpu::set_isa("auto");
}

// The one-pass half kernels (VmathKernels::f16 / bf16: widen, compute and round 16
// values in registers) give the block path's bits: every 16-bit pattern widened by
// half.h, run through the table's float32 kernel for half blocks (exp_half for exp)
// and rounded by half.h, compared pattern for pattern. A run of 65531 ends in a
// partial vector; the pattern past it must stay untouched. Tables without the
// kernels (nullptr) are skipped: their half runs take the block path itself.
TEST_CASE("the one-pass half kernels give the block path's bits", "[kernels][vec_math]") {
  using ember::BFloat16;
  using ember::Half;
  using ember::cpu::vmath_detail::HalfBitsKernels;
  using ember::cpu::vmath_detail::UnaryHalfBits;
  constexpr int64_t kRun = 65531;
  std::vector<uint16_t> x(65536), y(65536);
  for (int i = 0; i < 65536; ++i) x[i] = static_cast<uint16_t>(i);
  int tables_run = 0;
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const VmathKernels& k = ember::cpu::vmath();
    for (const bool bf16 : {false, true}) {
      const HalfBitsKernels& h = bf16 ? k.bf16 : k.f16;
      const struct {
        const char* name;
        UnaryHalfBits bits;
        UnaryF32 block;
      } ops[] = {{"exp", h.exp, k.exp_half},     {"erf", h.erf, k.erf},      {"tanh", h.tanh, k.tanh},
                 {"sigmoid", h.sigmoid, k.sigmoid}, {"gelu", h.gelu, k.gelu}};
      for (const auto& op : ops) {
        if (!op.bits) continue;
        ++tables_run;
        std::vector<float> wide(kRun);
        for (int64_t i = 0; i < kRun; ++i)
          wide[i] = bf16 ? float(BFloat16::from_bits(x[i])) : float(Half::from_bits(x[i]));
        op.block(wide.data(), wide.data(), kRun);
        std::fill(y.begin(), y.end(), uint16_t{0x1234});
        op.bits(x.data(), y.data(), kRun);
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < kRun; ++i) {
          const uint16_t want = bf16 ? BFloat16(wide[i]).bits : Half(wide[i]).bits;
          if (y[i] != want && differ++ == 0) first = i;
        }
        INFO(k.name << " table, " << (bf16 ? "bfloat16 " : "float16 ") << op.name << ": first differing pattern "
                    << first);
        CHECK(differ == 0);
        CHECK(y[kRun] == 0x1234);
        // Every run length up to 40 at an odd offset (nothing past the run written),
        // and a run in place (y is x): the same patterns as the long run.
        int64_t short_differ = 0;
        for (int64_t n = 0; n <= 40; ++n) {
          std::vector<uint16_t> z(n + 1, 0x4321);
          op.bits(x.data() + 1001, z.data(), n);
          for (int64_t i = 0; i < n; ++i) short_differ += z[i] != y[1001 + i];
          short_differ += z[n] != 0x4321;
        }
        std::vector<uint16_t> in_place(x.begin(), x.begin() + 333);
        op.bits(in_place.data(), in_place.data(), 333);
        for (int64_t i = 0; i < 333; ++i) short_differ += in_place[i] != y[i];
        CHECK(short_differ == 0);
      }
    }
  }
  ember::cpu::set_isa("auto");
  if (ember::cpu::cpu_isa() >= ember::cpu::Isa::avx512) CHECK(tables_run == 10);
}
