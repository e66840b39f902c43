// Quantization parameters and quantize/dequantize (quant/qparams.h,
// quant/quantized_tensor.h) against PyTorch 1.13's values (data/quant_reference.json,
// written by make_quant_reference.py), the round-trip error bound, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "quant/quant.h"
#include "tensor/ops.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/quant/data (see tests/quant/meson.build)"
#endif

namespace {

using namespace ember;
using json = nlohmann::json;

const json& reference() {
  static const json j = [] {
    std::ifstream f(std::string(EMBER_TEST_DATA_DIR) + "/quant_reference.json");
    REQUIRE(f.good());
    return json::parse(f);
  }();
  return j;
}

std::vector<float> floats(const json& j) { return j.get<std::vector<float>>(); }

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("choose_qparams matches PyTorch's ChooseQuantizationParams", "[quant][qparams]") {
  for (const json& c : reference()["affine"]) {
    const float lo = c["min"].get<float>(), hi = c["max"].get<float>();
    const bool rr = c["reduce_range"].get<bool>();
    INFO("min " << lo << " max " << hi << " reduce_range " << rr);
    const quant::QParams p = quant::choose_qparams(lo, hi, 0, 255, rr);
    CHECK(p.scale == Approx(c["scale"].get<double>()).epsilon(1e-6));
    CHECK(p.zero_point == c["zero_point"].get<int>());
  }
}

TEST_CASE("symmetric weight parameters match PyTorch's observers", "[quant][qparams]") {
  const json& w = reference()["weight"];
  const Shape shape = w["shape"].get<Shape>();
  const Tensor t = tensor(floats(w["values"]), shape);
  auto [scales, zps] = quant::choose_symmetric_qparams_per_channel(t, 0);
  const std::vector<float> want = floats(w["per_channel_scale"]);
  const std::vector<float> got = scales.to_vector<float>();
  REQUIRE(got.size() == want.size());
  for (size_t c = 0; c < got.size(); ++c) CHECK(got[c] == Approx(want[c]).epsilon(1e-6));
  CHECK(zps.to_vector<int32_t>() == std::vector<int32_t>(want.size(), 0));
  const quant::QuantizedTensor pc = quant::quantize_per_channel(t, scales, zps, 0, kInt8);
  std::vector<int> codes;
  for (int8_t v : pc.int_repr.to_vector<int8_t>()) codes.push_back(v);
  CHECK(codes == w["per_channel_codes"].get<std::vector<int>>());

  const quant::QParams p = quant::choose_symmetric_qparams(t);
  CHECK(p.scale == Approx(w["per_tensor_scale"].get<double>()).epsilon(1e-6));
  CHECK(p.zero_point == 0);
  const quant::QuantizedTensor pt = quant::quantize_per_tensor(t, p.scale, 0, kInt8);
  codes.clear();
  for (int8_t v : pt.int_repr.to_vector<int8_t>()) codes.push_back(v);
  CHECK(codes == w["per_tensor_codes"].get<std::vector<int>>());
}

TEST_CASE("quantize_per_tensor rounds half to even and clamps as PyTorch", "[quant][qparams]") {
  const json& q = reference()["quint8"];
  const Tensor x = tensor(floats(q["values"]));
  const quant::QuantizedTensor qt =
      quant::quantize_per_tensor(x, q["scale"].get<double>(), q["zero_point"].get<int>(), kUInt8);
  std::vector<int> codes;
  for (uint8_t v : qt.int_repr.to_vector<uint8_t>()) codes.push_back(v);
  CHECK(codes == q["codes"].get<std::vector<int>>());
}

TEST_CASE("quantize then dequantize stays within half a step inside the range", "[quant][qparams]") {
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-3.0f, 7.0f);
  std::vector<float> v(1000);
  for (auto& e : v) e = u(g);
  const Tensor x = tensor(v, {20, 50});
  // Affine uint8 from the tensor's own range: every value is inside it.
  const quant::QParams p = quant::choose_qparams(x);
  const std::vector<float> back = quant::dequantize(quant::quantize_per_tensor(x, p.scale, p.zero_point, kUInt8))
                                      .to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(double(back[i]) - v[i]));
  CHECK(worst <= p.scale / 2 * (1 + 1e-5));
  CHECK(worst >= p.scale / 4);  // the bound is not vacuous: real rounding happened
  // 0 is exact.
  CHECK(quant::dequantize(quant::quantize_per_tensor(zeros({1}), p.scale, p.zero_point, kUInt8))
            .item<float>() == 0.0f);
  // Symmetric int8 per channel along axis 1: each column within its own half step.
  auto [scales, zps] = quant::choose_symmetric_qparams_per_channel(x, 1);
  const quant::QuantizedTensor q = quant::quantize_per_channel(x, scales, zps, 1, kInt8);
  CHECK(q.axis == 1);
  const std::vector<float> back2 = quant::dequantize(q).to_vector<float>();
  const std::vector<float> s = scales.to_vector<float>();
  int64_t over = 0;
  // (The largest value of a column lands exactly half a step from its code, 127.5 x
  // scale against 127 x scale, so float32 rounding of the value itself is allowed too.)
  for (size_t i = 0; i < v.size(); ++i)
    over += std::abs(double(back2[i]) - v[i]) > s[i % 50] / 2 + 1e-6 * std::abs(v[i]);
  CHECK(over == 0);
  // Outside the range values clamp to the end codes.
  const quant::QuantizedTensor far = quant::quantize_per_tensor(tensor({-1e9f, 1e9f, NAN}), 0.1, 3, kInt8);
  CHECK(far.int_repr.to_vector<int8_t>() == std::vector<int8_t>{-128, 127, -128});
}

TEST_CASE("min and max scans find the extremes and every inf or NaN", "[quant][qparams]") {
  std::mt19937 g(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t n : {2, 15, 16, 17, 1000, 200003}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& e : v) e = u(g);
    const size_t lo = size_t(n) / 3, hi = size_t(n) - 1;  // one in the vector body, one in the tail
    v[lo] = -7.5f;
    v[hi] = 9.25f;
    INFO("n " << n);
    const quant::QParams p = quant::choose_qparams(tensor(v));
    CHECK(p == quant::choose_qparams(-7.5f, 9.25f));
    for (float bad : {INFINITY, -INFINITY, NAN}) {
      std::vector<float> w = v;
      w[size_t(n) / 2] = bad;
      CHECK_THROWS_AS(quant::choose_qparams(tensor(w)), ValueError);
    }
  }
}

TEST_CASE("quantization errors", "[quant][qparams][errors]") {
  const Tensor x = ones({2, 3});
  CHECK(error_text([&] { quant::quantize_per_tensor(x, 0.1, 0, kInt32); }) ==
        "quantize_per_tensor: dtype must be int8 or uint8, got int32");
  CHECK(error_text([&] { quant::quantize_per_tensor(x.to(kFloat64), 0.1, 0, kInt8); }) ==
        "quantize_per_tensor: expected a float32 tensor, got float64");
  CHECK(error_text([&] { quant::quantize_per_tensor(x, 0.0, 0, kInt8); }) ==
        "quantize_per_tensor: scale must be positive and finite, got 0");
  CHECK(error_text([&] { quant::quantize_per_tensor(x, 0.1, 300, kUInt8); }) ==
        "quantize_per_tensor: zero_point 300 is outside the range [0, 255] of uint8");
  CHECK(error_text([&] { quant::quantize_per_channel(x, ones({2}), zeros({2}, kInt32), 1, kInt8); }) ==
        "quantize_per_channel: expected 3 scales and zero points for axis 1 of shape [2, 3], got 2 and 2");
  CHECK(error_text([&] { quant::choose_qparams(1.0f, -1.0f); }) == "choose_qparams: min 1 is greater than max -1");
  CHECK(error_text([&] { quant::choose_qparams(0.0f, INFINITY); }) ==
        "choose_qparams: the range must be finite, got [0, inf]");
  CHECK(error_text([&] { quant::choose_qparams(tensor({1.0f, INFINITY})); }) ==
        "choose_qparams: the tensor holds inf or NaN, which cannot be quantized");
  CHECK_THROWS_AS(quant::quantize_per_tensor(x, 0.1, 0, kInt32), DTypeError);
  CHECK_THROWS_AS(quant::quantize_per_channel(x, ones({2}), zeros({2}, kInt32), 1, kInt8), ShapeError);
}
