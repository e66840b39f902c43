// DTypes: the float16/bfloat16 bit conversions of kernels/base/half.h (every half
// bit pattern; float -> half against GCC's IEEE _Float16; float -> bfloat16 against
// a double-arithmetic reference), PyTorch's promotion table and result_type tiers,
// can_cast, dtype names, and to(dtype) conversions and round trips.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;

namespace {

// float16 bits -> value, from the IEEE 754 binary16 definition.
double half_value(uint16_t b) {
  const int sign = b >> 15, e = (b >> 10) & 0x1f, m = b & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

// bfloat16 bits -> value (8 exponent bits, bias 127, 7 mantissa bits).
double bf16_value(uint16_t b) {
  const int sign = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
  double v;
  if (e == 0xff) v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (e == 0) v = std::ldexp(m, -133);
  else v = std::ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

// float -> bfloat16 bits, round to nearest, ties to even, in double arithmetic:
// the two bfloat16 neighbours of |f| are the truncation and the next value up (with
// "next after the largest finite" taken as 2^128, which rounds to Inf).
uint16_t ref_float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | 0x7f80;
  const uint16_t lo = static_cast<uint16_t>((x & 0x7fffffffu) >> 16);
  const double vlo = bf16_value(lo);
  const double vhi = lo == 0x7f7f ? std::ldexp(1.0, 128) : bf16_value(static_cast<uint16_t>(lo + 1));
  const double dlo = a - vlo, dhi = vhi - a;
  uint16_t r;
  if (dlo < dhi) r = lo;
  else if (dhi < dlo) r = static_cast<uint16_t>(lo + 1);
  else r = (lo & 1) ? static_cast<uint16_t>(lo + 1) : lo;
  return sign | r;
}

bool half_is_nan(uint16_t b) { return (b & 0x7c00) == 0x7c00 && (b & 0x3ff); }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

// GCC's _Float16 is the second reference for float16 rounding. Clang 14 has no
// _Float16 on x86 (the sanitizer builds use clang), so there the cases that need it
// are left out and the float64 reference (half_value) stands alone.
#if defined(__FLT16_MAX__)
#define EMBER_TEST_COMPILER_HALF 1
uint16_t gcc_half_bits(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
#endif

}  // namespace

TEST_CASE("float16: every bit pattern decodes to its IEEE value and round-trips", "[dtype]") {
  int64_t bad_decode = 0, bad_roundtrip = 0, bad_gcc = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = half_bits_to_float(h);
    const double want = half_value(h);
#ifdef EMBER_TEST_COMPILER_HALF
    const float gcc = static_cast<float>(std::bit_cast<_Float16>(h));
#else
    const float gcc = f;
#endif
    if (std::isnan(want)) {
      if (!std::isnan(f)) ++bad_decode;
      if (!half_is_nan(float_to_half_bits(f))) ++bad_roundtrip;
      continue;
    }
    if (static_cast<double>(f) != want || std::signbit(f) != static_cast<bool>(h >> 15)) ++bad_decode;
    if (float_to_half_bits(f) != h) ++bad_roundtrip;
    if (std::bit_cast<uint32_t>(gcc) != std::bit_cast<uint32_t>(f)) ++bad_gcc;
    if (static_cast<float>(Half::from_bits(h)) != f) ++bad_decode;
  }
  CHECK(bad_decode == 0);
  CHECK(bad_roundtrip == 0);
  CHECK(bad_gcc == 0);
  CHECK(float_to_half_bits(-0.0f) == 0x8000);
  CHECK(std::signbit(half_bits_to_float(0x8000)));
}

#ifdef EMBER_TEST_COMPILER_HALF
TEST_CASE("float -> float16 rounds to nearest even like GCC's _Float16", "[dtype]") {
  int64_t bad = 0;
  uint32_t first_bad = 0;
  auto check = [&](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t got = float_to_half_bits(f), want = gcc_half_bits(f);
    const bool ok = std::isnan(f) ? half_is_nan(got) && (got & 0x8000) == (want & 0x8000) : got == want;
    if (!ok && bad++ == 0) first_bad = bits;
  };
  // Around every half value: the value itself, its float neighbours, and the
  // midpoints to the next half value (ties) with their float neighbours.
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint32_t v = std::bit_cast<uint32_t>(half_bits_to_float(static_cast<uint16_t>(b))) | sign;
      const float mid = static_cast<float>((half_value(static_cast<uint16_t>(b)) + half_value(static_cast<uint16_t>(b + 1))) / 2);
      const uint32_t m = std::bit_cast<uint32_t>(mid) | sign;
      for (uint32_t x : {v, v + 1, v - 1, m, m + 1, m - 1}) check(x);
    }
  }
  // Random float bit patterns over the whole range.
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000000; ++i) check(rng());
  // Random floats inside the half range, where rounding is interesting.
  std::uniform_real_distribution<float> u(-70000.f, 70000.f);
  for (int i = 0; i < 500000; ++i) check(std::bit_cast<uint32_t>(u(rng)));
  INFO("first mismatch at float bits 0x" << std::hex << first_bad);
  CHECK(bad == 0);

  // Named edge cases with their expected bits written out.
  CHECK(float_to_half_bits(65504.f) == 0x7bff);
  CHECK(float_to_half_bits(65519.99f) == 0x7bff);
  CHECK(float_to_half_bits(65520.f) == 0x7c00);  // halfway to 2^16 rounds to Inf
  CHECK(float_to_half_bits(INFINITY) == 0x7c00);
  CHECK(float_to_half_bits(-INFINITY) == 0xfc00);
  CHECK(half_is_nan(float_to_half_bits(NAN)));
  CHECK(float_to_half_bits(-0.0f) == 0x8000);
  CHECK(float_to_half_bits(std::ldexp(1.f, -24)) == 0x0001);         // smallest subnormal
  CHECK(float_to_half_bits(std::ldexp(1.f, -25)) == 0x0000);         // tie to even: 0
  CHECK(float_to_half_bits(std::ldexp(1.5f, -25)) == 0x0001);        // above the tie
  CHECK(float_to_half_bits(std::ldexp(3.f, -25)) == 0x0002);         // 1.5 ulp: tie to even 2
  CHECK(float_to_half_bits(std::ldexp(1.f, -14)) == 0x0400);         // smallest normal
  CHECK(float_to_half_bits(std::ldexp(1023.5f, -24)) == 0x0400);     // subnormal rounding up into normal
  CHECK(float_to_half_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.f, -11)) == 0x3c00);  // tie, even stays
  CHECK(float_to_half_bits(1.0f + 3 * std::ldexp(1.f, -11)) == 0x3c02);
}
#endif

TEST_CASE("float -> bfloat16 rounds to nearest even (double reference)", "[dtype]") {
  int64_t bad = 0;
  uint32_t first_bad = 0;
  auto check = [&](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t got = float_to_bfloat16_bits(f);
    bool ok;
    if (std::isnan(f)) ok = bf16_is_nan(got) && (got & 0x8000) == ((bits >> 16) & 0x8000);
    else ok = got == ref_float_to_bf16(f);
    if (!ok && bad++ == 0) first_bad = bits;
  };
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint32_t v = b << 16;
    for (uint32_t off : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) check(v + off);
    // decoding matches the definition
    const double want = bf16_value(static_cast<uint16_t>(b));
    const float f = bfloat16_bits_to_float(static_cast<uint16_t>(b));
    if (!(std::isnan(want) ? std::isnan(f) : static_cast<double>(f) == want) && bad++ == 0) first_bad = v;
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 2000000; ++i) check(rng());
  INFO("first mismatch at float bits 0x" << std::hex << first_bad);
  CHECK(bad == 0);
  CHECK(float_to_bfloat16_bits(INFINITY) == 0x7f80);
  CHECK(float_to_bfloat16_bits(-0.0f) == 0x8000);
  CHECK(bf16_is_nan(float_to_bfloat16_bits(NAN)));
  CHECK(bf16_is_nan(float_to_bfloat16_bits(std::bit_cast<float>(0x7f800001u))));  // low-payload NaN stays NaN
  CHECK(float_to_bfloat16_bits(std::numeric_limits<float>::max()) == 0x7f80);      // rounds past the largest bf16
  CHECK(float_to_bfloat16_bits(std::bit_cast<float>(0x00018000u)) == 0x0002);      // subnormal tie to even
  CHECK(float_to_bfloat16_bits(1.0f) == 0x3f80);
  CHECK(static_cast<float>(BFloat16(3.0f)) == 3.0f);
}

TEST_CASE("promote_types matches PyTorch's table (int8 with uint8 gives int32)", "[dtype]") {
  const DType all[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool};
  // Rows and columns in the order of `all`. Written from PyTorch 1.13's
  // torch.promote_types; PyTorch gives int16 for int8+uint8, which Ember lacks.
  const DType f32 = kFloat32, f64 = kFloat64, f16 = kFloat16, bf = kBFloat16, i8 = kInt8, u8 = kUInt8, i32 = kInt32,
              i64 = kInt64, b = kBool;
  const DType table[9][9] = {
      /* f32 */ {f32, f64, f32, f32, f32, f32, f32, f32, f32},
      /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64, f64},
      /* f16 */ {f32, f64, f16, f32, f16, f16, f16, f16, f16},
      /* bf  */ {f32, f64, f32, bf, bf, bf, bf, bf, bf},
      /* i8  */ {f32, f64, f16, bf, i8, i32, i32, i64, i8},
      /* u8  */ {f32, f64, f16, bf, i32, u8, i32, i64, u8},
      /* i32 */ {f32, f64, f16, bf, i32, i32, i32, i64, i32},
      /* i64 */ {f32, f64, f16, bf, i64, i64, i64, i64, i64},
      /* b   */ {f32, f64, f16, bf, i8, u8, i32, i64, b},
  };
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 9; ++j) {
      INFO(dtype_name(all[i]) << " with " << dtype_name(all[j]));
      CHECK(promote_types(all[i], all[j]) == table[i][j]);
    }
}

TEST_CASE("result_type: dimensioned tensors beat 0-dim tensors beat C++ scalars", "[dtype]") {
  auto T = [](DType d) { return zeros({2}, d); };
  auto Z = [](DType d) { return zeros({}, d); };
  auto S = [](Scalar s) { return scalar_tensor(s); };
  struct Case {
    Tensor a, b;
    DType want;
  };
  // Expected values from torch.result_type in PyTorch 1.13.
  const std::vector<Case> cases = {
      {T(kInt32), S(2.5), kFloat32},     {T(kInt32), Z(kFloat64), kFloat64}, {T(kFloat16), Z(kFloat64), kFloat16},
      {T(kFloat16), S(2.5), kFloat16},   {T(kInt8), S(5), kInt8},            {T(kUInt8), Z(kInt64), kUInt8},
      {T(kBool), S(true), kBool},        {T(kBool), S(1), kInt64},           {T(kBool), Z(kInt32), kInt32},
      {Z(kInt32), Z(kFloat16), kFloat16}, {Z(kInt8), S(2.5), kFloat32},      {T(kUInt8), Z(kFloat32), kFloat32},
      {T(kInt32), Z(kBool), kInt32},     {T(kBool), S(1.5), kFloat32},       {Z(kBool), S(2), kInt64},
      {T(kFloat16), T(kBFloat16), kFloat32}, {T(kInt64), Z(kFloat16), kFloat16}, {Z(kFloat64), S(2), kFloat64},
      {T(kInt8), T(kUInt8), kInt32},     {S(2), S(2.5), kFloat32},           {S(true), S(3), kInt64},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(result_type({cases[i].a, cases[i].b}) == cases[i].want);
    CHECK(result_type({cases[i].b, cases[i].a}) == cases[i].want);
  }
  CHECK(Scalar(2).dtype() == kInt64);
  CHECK(Scalar(2.5).dtype() == kFloat64);
  CHECK(Scalar(true).dtype() == kBool);
  CHECK(scalar_tensor(2.5).is_wrapped_number());
  CHECK_FALSE(zeros({}).is_wrapped_number());
}

TEST_CASE("can_cast follows PyTorch's canCast", "[dtype]") {
  CHECK_FALSE(can_cast(kFloat32, kInt32));
  CHECK_FALSE(can_cast(kFloat16, kUInt8));
  CHECK_FALSE(can_cast(kInt32, kBool));
  CHECK_FALSE(can_cast(kFloat64, kBool));
  CHECK(can_cast(kBool, kInt8));
  CHECK(can_cast(kInt64, kInt8));
  CHECK(can_cast(kInt64, kFloat16));
  CHECK(can_cast(kFloat64, kBFloat16));
  CHECK(can_cast(kBool, kBool));
}

TEST_CASE("dtype names, sizes and parsing", "[dtype]") {
  const std::pair<const char*, DType> names[] = {
      {"float32", kFloat32}, {"float", kFloat32}, {"float64", kFloat64}, {"double", kFloat64}, {"float16", kFloat16},
      {"half", kFloat16},    {"bfloat16", kBFloat16}, {"int8", kInt8}, {"uint8", kUInt8},      {"int32", kInt32},
      {"int", kInt32},       {"int64", kInt64},   {"long", kInt64},   {"bool", kBool}};
  for (auto& [n, d] : names) {
    INFO(n);
    CHECK(parse_dtype(n) == d);
  }
  CHECK_THROWS_AS(parse_dtype("float8"), ValueError);
  CHECK_THROWS_AS(parse_dtype(""), ValueError);
  CHECK_THROWS_AS(parse_dtype("Float32"), ValueError);
  CHECK(std::string(dtype_name(kBFloat16)) == "bfloat16");
  std::ostringstream os;
  os << kUInt8;
  CHECK(os.str() == "uint8");
  CHECK(dtype_size(kFloat32) == 4);
  CHECK(dtype_size(kFloat64) == 8);
  CHECK(dtype_size(kFloat16) == 2);
  CHECK(dtype_size(kBFloat16) == 2);
  CHECK(dtype_size(kInt8) == 1);
  CHECK(dtype_size(kUInt8) == 1);
  CHECK(dtype_size(kInt32) == 4);
  CHECK(dtype_size(kInt64) == 8);
  CHECK(dtype_size(kBool) == 1);
  CHECK(is_floating(kBFloat16));
  CHECK_FALSE(is_floating(kInt64));
  CHECK(is_integral(kBool, true));
  CHECK_FALSE(is_integral(kBool, false));
}

TEST_CASE("to(dtype) converts like PyTorch", "[dtype]") {
  const std::vector<double> fv = {2.7, -2.7, 0.0, -0.0, 0.1, 300.0, -1.0, 1e-8, 65504.0, 1.0 / 3};
  Tensor f = ref::make({static_cast<int64_t>(fv.size())}, kFloat64, fv);
  // float -> int truncates toward zero; bool is "nonzero"; narrower floats round.
  CHECK(ref::read(f.to(kInt32)).v == std::vector<double>{2, -2, 0, 0, 0, 300, -1, 0, 65504, 0});
  CHECK(ref::read(f.to(kBool)).v == std::vector<double>{1, 1, 0, 0, 1, 1, 1, 1, 1, 1});
  CHECK(ref::read(f.to(kFloat32)).v ==
        std::vector<double>{2.7f, -2.7f, 0, 0, 0.1f, 300, -1, 1e-8f, 65504, 1.0f / 3});
  const Tensor h = f.to(kFloat16);
  CHECK(h.dtype() == kFloat16);
  const auto hv = ref::read(h).v;
  CHECK(hv[0] == 2.69921875);   // nearest half to 2.7
  CHECK(hv[4] == 0.0999755859375);
  CHECK(hv[7] == 0.0);  // 1e-8 is below half the smallest subnormal
  CHECK(hv[8] == 65504);
  CHECK(std::signbit(hv[3]));
  CHECK(ref::read(f.to(kBFloat16)).v[5] == 300);
  // int64 -> narrower integers wrap modulo 2^bits.
  Tensor i = ref::make({4}, kInt64, {300, -1, 128, -129});
  CHECK(ref::read(i.to(kInt8)).v == std::vector<double>{44, -1, -128, 127});
  CHECK(ref::read(i.to(kUInt8)).v == std::vector<double>{44, 255, 128, 127});
  CHECK(ref::read(i.to(kBool)).v == std::vector<double>{1, 1, 1, 1});
  Tensor b = ref::make({3}, kBool, {1, 0, 1});
  CHECK(ref::read(b.to(kFloat16)).v == std::vector<double>{1, 0, 1});
  CHECK(ref::read(b.to(kInt64)).v == std::vector<double>{1, 0, 1});
  // The same dtype returns the tensor itself, as PyTorch does.
  CHECK(f.to(kFloat64).is_same(f));
}

TEST_CASE("to(dtype) between a half type and every other dtype: contiguous and strided, value by value",
          "[dtype]") {
  // These conversions run through float32 in blocks of 256 (the vector conversions
  // on the half side; a strided half side gathered or scattered). The expected
  // values come from the rules, computed here in double: to a half type, the value
  // rounded to float32 and then to the half type (half.h's scalar conversion); from
  // one, the value itself, truncated toward zero and clamped for integers (NaN to 0),
  // nonzero for bool. 700 values cross the blocks; the strided runs read or write
  // every other element of a [700, 2] tensor.
  const DType halves[] = {kFloat16, kBFloat16};
  const DType others[] = {kBool, kUInt8, kInt8, kInt32, kInt64, kFloat32, kFloat64, kFloat16, kBFloat16};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> base = {0,      1,     -1,    7,     -128, 127,   255,   2049, 2051,  65504,   65519,
                                    65520,  70000, -70000, 1e12, -3e15, 0.1,   -2.7,  1e-8, -0.0, 65519.99, 3e38,
                                    1e300,  inf,   -inf,  nan};
  const auto fits = [](double v, DType dt) {
    if (dt == kBool) return v == 0 || v == 1;
    if (is_floating(dt)) return dt == kFloat64 || std::isnan(v) || std::fabs(v) < 3.4e38 || std::isinf(v);
    if (v != std::trunc(v)) return false;
    if (dt == kUInt8) return v >= 0 && v <= 255;
    if (dt == kInt8) return v >= -128 && v <= 127;
    if (dt == kInt32) return std::fabs(v) < 2e9;
    return std::fabs(v) < 9e18;
  };
  // The value a dtype holds for v (what ref::make stores): float32 and the half
  // types round.
  const auto held = [](double v, DType dt) {
    if (dt == kFloat32) return static_cast<double>(static_cast<float>(v));
    if (dt == kFloat16) return static_cast<double>(half_bits_to_float(float_to_half_bits(static_cast<float>(v))));
    if (dt == kBFloat16)
      return static_cast<double>(bfloat16_bits_to_float(float_to_bfloat16_bits(static_cast<float>(v))));
    return v;
  };
  const auto into = [&](double v, DType dt) {  // converting a value to dt
    if (dt == kBool) return v != 0 ? 1.0 : 0.0;  // NaN is nonzero
    if (is_floating(dt)) return held(v, dt);
    if (std::isnan(v)) return 0.0;
    const double lo = dt == kUInt8 ? 0 : dt == kInt8 ? -128 : dt == kInt32 ? -2147483648.0 : -9223372036854775808.0;
    const double hi = dt == kUInt8 ? 255 : dt == kInt8 ? 127 : dt == kInt32 ? 2147483647.0 : 9223372036854775807.0;
    return v <= lo ? lo : v >= hi ? hi : std::trunc(v) + 0.0;
  };
  const auto same = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  };
  for (DType h : halves)
    for (DType o : others) {
      if (o == h) continue;
      for (bool to_half : {true, false}) {
        const DType from = to_half ? o : h, to = to_half ? h : o;
        std::vector<double> v;
        for (int i = 0; v.size() < 700; ++i) {
          const double c = base[static_cast<size_t>(i) % base.size()] * (i / base.size() % 2 ? -1 : 1);
          if (fits(c, from)) v.push_back(is_floating(from) ? held(c, from) : c + 0.0);  // integers have no -0
        }
        std::vector<double> want, twice;
        for (double x : v) {
          want.push_back(into(x, to));
          twice.push_back(x);
          twice.push_back(x == 0 ? 5 : 0);  // the other column: never read
        }
        const int64_t n = static_cast<int64_t>(v.size());
        INFO(dtype_name(from) << " -> " << dtype_name(to));
        const auto check = [&](const Tensor& got) {
          const ref::Array a = ref::read(got);
          int64_t bad = 0;
          for (int64_t i = 0; i < n; ++i) bad += same(a.v[static_cast<size_t>(i)], want[static_cast<size_t>(i)]) ? 0 : 1;
          CHECK(bad == 0);
        };
        check(ref::make({n}, from, v).to(to));                                // contiguous
        check(ref::make({n, 2}, from, twice).select(1, 0).to(to));            // a strided source
        Tensor out = ref::make({n, 2}, to, std::vector<double>(2 * static_cast<size_t>(n), 0)).select(1, 0);
        out.copy_(ref::make({n}, from, v));                                   // a strided destination
        check(out);
      }
    }
}

TEST_CASE("to(dtype) round trips are exact where the dtypes allow", "[dtype]") {
  std::mt19937_64 rng(5);
  struct Trip {
    DType from, via;
  };
  const Trip trips[] = {{kFloat32, kFloat64}, {kFloat16, kFloat32}, {kBFloat16, kFloat32}, {kFloat16, kFloat64},
                        {kInt8, kFloat16},    {kUInt8, kBFloat16}, {kInt32, kInt64},      {kInt32, kFloat64},
                        {kInt8, kInt32},      {kBool, kUInt8},     {kBool, kFloat32},     {kInt64, kFloat64}};
  for (const auto& [from, via] : trips) {
    INFO(dtype_name(from) << " -> " << dtype_name(via) << " -> " << dtype_name(from));
    const double lo = is_floating(from) ? -100 : (from == kUInt8 ? 0 : -100), hi = 100;
    for (ref::Layout l : {ref::Layout::contiguous, ref::Layout::transposed}) {
      Tensor x = ref::random_tensor({7, 9}, from, l, rng, lo, hi);
      Tensor y = x.to(via);
      CHECK(y.dtype() == via);
      CHECK(y.shape() == x.shape());
      CHECK(ref::read(y).v == ref::read(x).v);  // every value is representable in `via`
      CHECK(ref::read(y.to(from)).v == ref::read(x).v);
    }
  }
  // Every float16 value survives float16 -> float32 -> float16 through tensors.
  std::vector<double> all;
  for (uint32_t b = 0; b < 0x7c00; ++b) all.push_back(half_value(static_cast<uint16_t>(b)));
  Tensor h = ref::make({static_cast<int64_t>(all.size())}, kFloat16, all);
  CHECK(ref::read(h.to(kFloat32).to(kFloat16)).v == all);
  CHECK(ref::read(h.to(kFloat32)).v == all);
}
