// Half precision on the CPU. The vector conversions (kernels/cpu/half_vec.h) against
// half.h's portable code, bit for bit, over every float16/bfloat16 pattern and a
// sweep of float32 patterns; then every op in float16 and bfloat16 against the same
// op in float32 on the same (already rounded) inputs, with the tolerances of
// docs/numerics.md ("CPU"): the half op computes in float32 and rounds once, so it
// must land within `ulps` units in the last place of the half result.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "ember.h"
#include "kernels/cpu/half_vec.h"
#include "nn/nn.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The gap between dtype values next to |v| (unit in the last place), never below
// the smallest normal's ulp.
double ulp(double v, DType dt) {
  const int mant = dt == kFloat16 ? 10 : 7;
  const int min_exp = dt == kFloat16 ? -14 : -126;
  int e;
  std::frexp(std::max(std::abs(v), 1e-30), &e);
  return std::ldexp(1.0, std::max(e - 1, min_exp) - mant);
}

// Max over elements of |got - want| / ulp_dtype(want) (normwise: / ulp of max |want|).
double max_ulps(const Tensor& got, const Tensor& want, DType dt, bool normwise = false) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to(kFloat32).contiguous().to_vector<float>();
  const auto w = want.to(kFloat32).contiguous().to_vector<float>();
  double worst = 0, biggest = 0;
  for (float v : w) biggest = std::max(biggest, std::isfinite(v) ? std::abs(double(v)) : 0.0);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    worst = std::max(worst, std::abs(double(g[i]) - double(w[i])) / ulp(normwise ? biggest : w[i], dt));
  }
  return worst;
}

// Every 16-bit pattern in order (0 to 0xffff) as a tensor of the half dtype dt.
Tensor every_pattern(DType dt) {
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = uint16_t(i);
  Tensor x = empty({65536}, {dt, kCPU});
  std::memcpy(x.data_ptr(), bits.data(), bits.size() * 2);
  return x;
}

// The value of pattern b of the half dtype dt, by half.h's portable conversion.
double half_value(DType dt, uint16_t b) {
  return dt == kFloat16 ? double(half_bits_to_float(b)) : double(bfloat16_bits_to_float(b));
}

}  // namespace

TEST_CASE("half_vec: float16 and bfloat16 widen bit for bit like half.h", "[half]") {
  std::vector<Half> h(65536);
  std::vector<BFloat16> b(65536);
  for (int i = 0; i < 65536; ++i) {
    h[i].bits = static_cast<uint16_t>(i);
    b[i].bits = static_cast<uint16_t>(i);
  }
  std::vector<float> fh(65536), fb(65536);
  cpu::load_to_float(h.data(), fh.data(), 65536);
  cpu::load_to_float(b.data(), fb.data(), 65536);
  int mismatches = 0;
  for (int i = 0; i < 65536; ++i) {
    const float rh = half_bits_to_float(static_cast<uint16_t>(i));
    const float rb = bfloat16_bits_to_float(static_cast<uint16_t>(i));
    // NaNs may come back quieted by the hardware; they must stay NaN with their sign.
    if (std::isnan(rh)) mismatches += !(std::isnan(fh[i]) && std::signbit(fh[i]) == std::signbit(rh));
    else mismatches += bits_of(fh[i]) != bits_of(rh);
    mismatches += bits_of(fb[i]) != bits_of(rb);
  }
  CHECK(mismatches == 0);
  INFO("float16 path: " << cpu::half_conversion_path());
}

TEST_CASE("half_vec: float32 narrows bit for bit like half.h (ties, subnormals, overflow, NaN)", "[half]") {
  std::vector<float> f;
  // A sweep over all exponents and many mantissas, both signs.
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) f.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  // Exact ties and their neighbours around float16 and bfloat16 rounding points.
  for (uint32_t base : {0x3f800000u, 0x38800000u, 0x33000000u, 0x477fe000u, 0x47800000u, 0x7f7f8000u, 0x00400000u}) {
    for (uint32_t d : {0x0u, 0x1000u, 0x0fffu, 0x1001u, 0x3000u, 0x8000u, 0x7fffu, 0x18000u}) {
      f.push_back(std::bit_cast<float>(base + d));
      f.push_back(-std::bit_cast<float>(base + d));
    }
  }
  f.push_back(INFINITY);
  f.push_back(-INFINITY);
  f.push_back(NAN);
  const int64_t n = static_cast<int64_t>(f.size());
  std::vector<Half> h(n);
  std::vector<BFloat16> b(n);
  cpu::store_from_float(f.data(), h.data(), n);
  cpu::store_from_float(f.data(), b.data(), n);
  int64_t bad_h = 0, bad_b = 0;
  for (int64_t i = 0; i < n; ++i) {
    bad_h += h[i].bits != float_to_half_bits(f[i]);
    bad_b += b[i].bits != float_to_bfloat16_bits(f[i]);
  }
  CHECK(bad_h == 0);
  CHECK(bad_b == 0);
}

TEST_CASE("half: to() round trips through float32 on contiguous, strided and odd lengths", "[half]") {
  manual_seed(3);
  for (DType dt : {kFloat16, kBFloat16}) {
    for (int64_t n : {1, 7, 16, 17, 255, 256, 257, 100003}) {
      Tensor x = randn({n}) * 100;
      Tensor h = x.to(dt);
      // Reference: half.h's scalar conversion element by element.
      const auto xv = x.to_vector<float>();
      const auto hv = h.to(kFloat32).to_vector<float>();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float want = dt == kFloat16 ? half_bits_to_float(float_to_half_bits(xv[i]))
                                          : bfloat16_bits_to_float(float_to_bfloat16_bits(xv[i]));
        bad += bits_of(hv[i]) != bits_of(want);
      }
      CHECK(bad == 0);
    }
    Tensor m = randn({33, 65});
    CHECK(max_ulps(m.t().to(dt), m.t(), dt) <= 0.5);  // a transposed (strided) source
  }
}

TEST_CASE("half: relu of every 16-bit pattern, contiguous and strided, bit for bit", "[half]") {
  // All 65536 patterns: relu keeps x > 0 and every NaN (either sign, payload and
  // all), and gives +0 for -0, negative subnormals, negative normals and -inf. The
  // reference decides from the float64 value; contiguous runs go through the bit
  // loop, the strided view through the float32 functor.
  for (DType dt : {kFloat16, kBFloat16}) {
    const Tensor x = every_pattern(dt);
    const auto value = [dt](uint16_t b) { return half_value(dt, b); };
    const auto check = [&](const Tensor& y, int64_t step) {
      const Tensor yc = y.contiguous();
      const uint16_t* got = static_cast<const uint16_t*>(yc.data_ptr());
      int64_t bad = 0;
      for (int64_t i = 0; i < yc.numel(); ++i) {
        const uint16_t b = uint16_t(i * step);
        const double v = value(b);
        if (std::isnan(v)) {
          bad += !std::isnan(value(got[i]));
          if (step == 1) bad += got[i] != b;  // the bit loop keeps the NaN's own bits
        } else {
          bad += got[i] != (v > 0 ? b : uint16_t{0});
        }
      }
      return bad;
    };
    INFO("dtype " << dtype_name(dt));
    CHECK(check(relu(x), 1) == 0);
    CHECK(check(relu(x.as_strided({32768}, {2})), 2) == 0);
  }
}

TEST_CASE("half: exp of every 16-bit pattern is within 0.52 ulp of exp in double", "[half]") {
  // The half types' exp computes in float32 with a shorter exponential than
  // float32's own (relative error below 1e-5 where the CPU has AVX-512), then
  // rounds once: each result must be one of the two half values around the exact
  // e^x, nearer than 0.52 of the gap between them (0.5 is correct rounding; the
  // shorter exp adds about 0.014 of a float16 gap, 0.002 of a bfloat16 one). Past
  // the largest finite value the exact result rounds to that value or to +inf; no
  // result is negative (-0 included). All 65536 patterns, contiguous, through a
  // strided view (the same kernel on gathered blocks) and as a run of 65535 (a
  // partial last vector).
  for (DType dt : {kFloat16, kBFloat16}) {
    const Tensor x = every_pattern(dt);
    const auto value = [dt](uint16_t b) { return half_value(dt, b); };
    const double max_finite = dt == kFloat16 ? 65504.0 : double(bfloat16_bits_to_float(0x7f7f));
    // The positive half values just below and above e (e > 0, finite, not above max).
    const auto neighbours = [&](double e, double& lo, double& hi) {
      uint16_t b = 0;  // patterns 0..0x7bff / 0x7f7f order like their values
      for (int step = 1 << 15; step > 0; step >>= 1)
        if (uint32_t(b) + step <= 0x7fffu && value(uint16_t(b + step)) <= e && std::isfinite(value(uint16_t(b + step))))
          b = uint16_t(b + step);
      lo = value(b);
      hi = lo == e ? lo : value(uint16_t(b + 1));
    };
    double worst = 0;  // of the gap, over the finite results
    const auto check = [&](const Tensor& y) {
      const Tensor yc = y.contiguous();
      const uint16_t* got = static_cast<const uint16_t*>(yc.data_ptr());
      int64_t bad = 0;
      for (int64_t i = 0; i < yc.numel(); ++i) {
        const double v = value(uint16_t(i)), r = value(got[i]), e = std::exp(v);
        if (std::isnan(v)) {
          bad += !std::isnan(r);
          continue;
        }
        bad += std::signbit(r);  // never negative, not even -0
        if (e == 0) {
          bad += r != 0;
        } else if (e > max_finite) {
          bad += r != max_finite && !(std::isinf(r) && r > 0);
        } else {
          double lo, hi;
          neighbours(e, lo, hi);
          const double gap = hi - lo, err = gap == 0 ? (r == e ? 0 : 1) : std::abs(r - e) / gap;
          worst = std::max(worst, err);
          bad += !(err <= 0.52);
        }
      }
      return bad;
    };
    const int64_t contiguous = check(exp(x));
    Tensor wide = empty({65536, 2}, {dt, kCPU});
    Tensor column = wide.select(1, 1);
    column.copy_(x);
    const int64_t strided = check(exp(column));
    // 65535 values: the last vector of the run is a partial one.
    const int64_t short_run = check(exp(x.narrow(0, 0, 65535)));
    INFO("dtype " << dtype_name(dt) << ": worst " << worst << " of the gap");
    CHECK(contiguous == 0);
    CHECK(strided == 0);
    CHECK(short_run == 0);
  }
}

// ---- every op in half against float32 on the same inputs ----

namespace {

struct OpCase {
  std::string name;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::vector<Shape> shapes;
  double lo = -2, hi = 2;  // input range
  double ulps = 1;         // tolerance in units of the half dtype's ulp of the result
  // Ops composed of several rounded steps (x.w^T + b, (a-b)^2, batch norm) can cancel,
  // so they are measured normwise: in ulps of the largest result, not of each element.
  bool normwise = false;
};

std::vector<OpCase> op_cases() {
  using V = const std::vector<Tensor>&;
  std::vector<OpCase> c;
  const Shape s{37, 129};  // odd sizes: vector bodies and scalar tails
  auto unary = [&](std::string name, std::function<Tensor(const Tensor&)> f, double lo = -2, double hi = 2) {
    c.push_back({name, [f](V t) { return f(t[0]); }, {s}, lo, hi, 1});
  };
  // Every unary op of kernels/base/ops.def.h; positive-domain ops draw from (0.05, 4].
#define EMBER_X(Name, name, kind, saves, autocast, dom, ...)                      \
  if (std::string(#dom) == "positive") unary(#name, [](const Tensor& x) { return x.name(); }, 0.05, 4); \
  else unary(#name, [](const Tensor& x) { return x.name(); });
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  auto binary = [&](std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f, Shape sb) {
    c.push_back({name, [f](V t) { return f(t[0], t[1]); }, {s, sb}, 0.1, 2, 1});
  };
  for (const Shape& sb : {s, Shape{129}, Shape{37, 1}}) {
    binary("add", [](const Tensor& a, const Tensor& b) { return a + b; }, sb);
    binary("sub", [](const Tensor& a, const Tensor& b) { return a - b; }, sb);
    binary("mul", [](const Tensor& a, const Tensor& b) { return a * b; }, sb);
    binary("div", [](const Tensor& a, const Tensor& b) { return a / b; }, sb);
    binary("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, sb);
    binary("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, sb);
    binary("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, sb);
    binary("where", [](const Tensor& a, const Tensor& b) { return where(a > 1, a, b); }, sb);
  }
  c.push_back({"mul scalar", [](V t) { return t[0] * 3; }, {s}, -2, 2, 1});
  c.push_back({"clamp", [](V t) { return t[0].clamp(-0.5, 0.5); }, {s}, -2, 2, 1});
  // Reductions and softmax accumulate in float32 and round once; sums of many
  // terms may differ from float32's order by a few float32 ulps, far below 1 half ulp.
  c.push_back({"sum all", [](V t) { return t[0].sum(); }, {s}, 0, 1, 1});
  c.push_back({"sum dim 0", [](V t) { return t[0].sum({0}); }, {s}, 0, 1, 1});
  c.push_back({"sum dim 1", [](V t) { return t[0].sum({1}); }, {s}, 0, 1, 1});
  c.push_back({"mean", [](V t) { return t[0].mean({1}); }, {s}, -1, 1, 1});
  c.push_back({"var", [](V t) { return t[0].var({1}); }, {s}, -1, 1, 1});
  c.push_back({"amax", [](V t) { return t[0].amax({1}); }, {s}, -1, 1, 0});
  c.push_back({"max dim", [](V t) { return std::get<0>(t[0].max(0)); }, {s}, -1, 1, 0});
  c.push_back({"softmax", [](V t) { return t[0].softmax(1); }, {s}, -4, 4, 1});
  c.push_back({"softmax dim 0", [](V t) { return t[0].softmax(0); }, {s}, -4, 4, 1});
  c.push_back({"log_softmax", [](V t) { return t[0].log_softmax(1); }, {s}, -4, 4, 1});
  // GEMM and convolution: half inputs widened to float32 panels, one rounding at the end.
  c.push_back({"matmul", [](V t) { return matmul(t[0], t[1]); }, {{37, 129}, {129, 21}}, -1, 1, 1});
  c.push_back({"matmul batched", [](V t) { return matmul(t[0], t[1]); }, {{3, 17, 40}, {40, 9}}, -1, 1, 1});
  c.push_back({"linear", [](V t) { return F::linear(t[0], t[1], t[2]); }, {{8, 50}, {30, 50}, {30}}, -1, 1, 2, true});
  c.push_back({"conv2d", [](V t) { return F::conv2d(t[0], t[1], t[2], {1, 1}, {1, 1}); },
               {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}}, -1, 1, 1});
  c.push_back({"max_pool2d", [](V t) { return F::max_pool2d(t[0], {2, 2}); }, {{2, 3, 9, 9}}, -1, 1, 0});
  c.push_back({"avg_pool2d", [](V t) { return F::avg_pool2d(t[0], {2, 2}); }, {{2, 3, 9, 9}}, -1, 1, 1});
  c.push_back({"cat", [](V t) { return cat({t[0], t[1]}, 1); }, {{4, 5}, {4, 3}}, -1, 1, 0});
  c.push_back({"mse_loss", [](V t) { return F::mse_loss(t[0], t[1]); }, {s, s}, -1, 1, 2, true});
  c.push_back({"batch_norm (eval)", [](V t) {
                 Tensor rm = zeros({3}, t[0].dtype()), rv = ones({3}, t[0].dtype());
                 return F::batch_norm(t[0], rm, rv, t[1], t[2], false);
               },
               {{4, 3, 5, 5}, {3}, {3}}, -1, 1, 3, true});
  return c;
}

}  // namespace

TEST_CASE("half: every op in float16 and bfloat16 matches float32 within the documented ulps", "[half]") {
  for (const OpCase& op : op_cases()) {
    for (DType dt : {kFloat16, kBFloat16}) {
      manual_seed(11);
      std::vector<Tensor> h, f;
      for (const Shape& shape : op.shapes) {
        Tensor x = (rand(shape) * (op.hi - op.lo) + op.lo).to(dt);
        h.push_back(x);
        f.push_back(x.to(kFloat32));  // the same values, exactly
      }
      Tensor got = op.fn(h);
      Tensor want = op.fn(f);
      INFO(op.name << " in " << dt);
      // cross_entropy-like ops return float32; the rest keep the half dtype.
      CHECK(got.dtype() == dt);
      // Rounding the float32 answer to the half dtype is itself half an ulp away.
      CHECK(max_ulps(got, want, dt, op.normwise) <= op.ulps);
    }
  }
}

TEST_CASE("half: cross_entropy and nll_loss accumulate in float32 and return float32", "[half]") {
  manual_seed(5);
  Tensor logits = randn({64, 10}) * 3;
  Tensor y = (rand({64}) * 10).to(kInt64);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor lh = logits.to(dt);
    Tensor got = F::cross_entropy(lh, y), want = F::cross_entropy(lh.to(kFloat32), y);
    CHECK(got.dtype() == kFloat32);
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-6));
    Tensor lp = lh.log_softmax(1);
    Tensor got2 = F::nll_loss(lp, y), want2 = F::nll_loss(lp.to(kFloat32), y);
    CHECK(got2.dtype() == kFloat32);
    CHECK(got2.item<double>() == Approx(want2.item<double>()).epsilon(1e-6));
  }
}

TEST_CASE("half: new_zeros, new_full and new_ones inherit the half dtype", "[half]") {
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor x = ones({2}, dt);
    CHECK(x.new_zeros({3}).dtype() == dt);
    CHECK(x.new_ones({3}).dtype() == dt);
    Tensor f = x.new_full({2, 2}, 0.1);
    CHECK(f.dtype() == dt);
    CHECK(f.to(kFloat32).to_vector<float>()[0] == static_cast<float>(dt == kFloat16 ? float(Half(0.1f))
                                                                                    : float(BFloat16(0.1f))));
  }
}

TEST_CASE("half: gradients flow in half precision and match float32 within tolerance", "[half]") {
  for (DType dt : {kFloat16, kBFloat16}) {
    manual_seed(9);
    Tensor x32 = randn({16, 1, 12, 12});
    nn::Conv2d conv(1, 4, 3);
    nn::Linear fc(4 * 10 * 10, 5);
    auto run = [&](DType d) {
      conv.to(d);
      fc.to(d);
      conv.zero_grad();
      fc.zero_grad();
      Tensor out = fc(F::relu(conv(x32.to(d))).flatten(1));
      Tensor loss = (out * out).mean();
      loss.backward();
      return std::make_pair(conv.parameters()[0].grad().to(kFloat32), fc.parameters()[0].grad().to(kFloat32));
    };
    auto [gc32, gf32] = run(kFloat32);
    auto [gch, gfh] = run(dt);
    CHECK(conv.parameters()[0].grad().dtype() == dt);
    // Normwise: the relative error of a half computation is a few ulps of the dtype.
    const double tol = dt == kFloat16 ? 1e-2 : 5e-2;
    CHECK(((gch - gc32).abs().max() / gc32.abs().max()).item<double>() < tol);
    CHECK(((gfh - gf32).abs().max() / gf32.abs().max()).item<double>() < tol);
    conv.to(kFloat32);
    fc.to(kFloat32);
  }
}

TEST_CASE("half: the seed network in half precision predicts like float32", "[half]") {
  manual_seed(1);
  nn::Network net;
  Tensor x = rand({200, 1, 28, 28});
  Tensor want;
  {
    NoGradGuard no_grad;
    want = net(x).argmax(1);
  }
  for (DType dt : {kFloat16, kBFloat16}) {
    if (dt == kFloat16) net.half();
    else net.bfloat16();
    CHECK(net.parameters()[0].dtype() == dt);
    NoGradGuard no_grad;
    Tensor logits = net(x.to(dt));
    CHECK(logits.dtype() == dt);
    Tensor ref = net.float32()(x);
    const double err = ((logits.to(kFloat32) - ref).abs().max() / ref.abs().max()).item<double>();
    CHECK(err < (dt == kFloat16 ? 1e-2 : 5e-2));
    // An untrained network has close logits, the hardest case for agreement.
    const double agree = (logits.argmax(1) == want).to(kFloat32).mean().item<double>();
    CHECK(agree >= 0.9);
    net.float32();
  }
}
