// ONNX's affine quantization (quant/quantize_linear.h): values worked out by hand
// from the operator definitions (ties to even, saturation, NaN), per-axis
// parameters against a plain double loop over the definition, and every
// documented refusal by its exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/isa.h"
#include "quant/quantize_linear.h"
#include "support/message_of.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

std::vector<int64_t> codes(const Tensor& t) { return t.to(kCPU, kInt64).contiguous().reshape({t.numel()}).to_vector<int64_t>(); }

}  // namespace

TEST_CASE("quantize_linear: halves go to even, ends saturate, NaN takes the low end", "[quant][onnx_quant]") {
  // On every instruction set's loop this CPU runs.
  for (const char* isa : {"generic", "avx2", "avx512"}) {
  if (!cpu::set_isa(isa)) continue;
  INFO(isa);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = tensor(std::vector<float>{1.25f, 1.75f, -0.25f, 200, -10, nan, 0.75f, 2.25f}, {8});
  const Tensor q = quant::quantize_linear(x, full({}, 0.5f, kFloat32), full({}, 10, kUInt8), 1, kUInt8);
  CHECK(q.dtype() == kUInt8);
  // x / 0.5: 2.5 -> 2, 3.5 -> 4, -0.5 -> -0, 400, -20, NaN, 1.5 -> 2, 4.5 -> 4; then + 10 and [0, 255].
  CHECK(codes(q) == std::vector<int64_t>{12, 14, 10, 255, 0, 0, 12, 14});
  const Tensor s = quant::quantize_linear(x, full({}, 0.5f, kFloat32), full({}, -3, kInt8), 0, kInt8);
  CHECK(codes(s) == std::vector<int64_t>{-1, 1, -3, 127, -23, -128, -1, 1});
  // No zero point: 0.
  CHECK(codes(quant::quantize_linear(tensor(std::vector<float>{3, -3}, {2}), full({}, 2.0f, kFloat32), Tensor(), 0,
                                     kInt8)) == std::vector<int64_t>{2, -2});
  // Long enough for the vector loops: 1000 values, a tie every fourth.
  std::vector<float> many;
  std::vector<int64_t> want;
  for (int i = 0; i < 1000; ++i) {
    const float v = float(i % 40 - 20) * 0.25f;  // / 0.5: halves at odd multiples of 0.25
    many.push_back(v);
    want.push_back(std::min<int64_t>(127, std::max<int64_t>(-128, int64_t(std::nearbyint(double(v) / 0.5)) + 3)));
  }
  CHECK(codes(quant::quantize_linear(tensor(many, {1000}), full({}, 0.5f, kFloat32), full({}, 3, kInt8), 0,
                                     kInt8)) == want);
  }
  cpu::set_isa("auto");
}

TEST_CASE("quantize_linear: per-axis scales and zero points against the definition", "[quant][onnx_quant]") {
  const Shape shape{2, 3, 4};
  std::vector<float> xv;
  for (int i = 0; i < 24; ++i) xv.push_back(float(i * 7 % 24) * 1.37f - 11.0f);
  const Tensor x = tensor(xv, shape);
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<float> sv;
    std::vector<int32_t> zv;
    for (int64_t c = 0; c < shape[size_t(a)]; ++c) {
      sv.push_back(0.05f + 0.11f * float(c));
      zv.push_back(int32_t(-20 + 13 * c));
    }
    const Tensor q = quant::quantize_linear(x, tensor(sv, {int64_t(sv.size())}),
                                            tensor(zv, {int64_t(zv.size())}).to(kInt8), axis, kInt8);
    std::vector<int64_t> want;
    for (int64_t i = 0; i < 24; ++i) {
      const int64_t idx[3] = {i / 12, i / 4 % 3, i % 4};
      const int64_t c = idx[a];
      const double v = std::nearbyint(double(xv[size_t(i)] / sv[size_t(c)])) + zv[size_t(c)];
      want.push_back(int64_t(std::min(127.0, std::max(-128.0, v))));
    }
    INFO("axis " << axis);
    CHECK(codes(q) == want);
  }
  // int32 and float16 inputs are divided in float32.
  CHECK(codes(quant::quantize_linear(tensor(std::vector<int32_t>{7, -9, 100000}, {3}), full({}, 2.0f, kFloat32),
                                     full({}, 1, kUInt8), 0, kUInt8)) == std::vector<int64_t>{5, 0, 255});
  CHECK(codes(quant::quantize_linear(tensor(std::vector<float>{1.5f, -0.5f}, {2}).to(kFloat16),
                                     full({}, 1.0f, kFloat16), Tensor(), 0, kInt8)) == std::vector<int64_t>{2, 0});
}

TEST_CASE("dequantize_linear: (q - zero point) * scale, per axis, in the scale's dtype", "[quant][onnx_quant]") {
  const Tensor q = tensor(std::vector<int32_t>{0, 128, 255, 3, 10, 250}, {2, 3}).to(kUInt8);
  const Tensor y = quant::dequantize_linear(q, tensor(std::vector<float>{0.5f, 0.25f}, {2}),
                                            tensor(std::vector<int32_t>{128, 10}, {2}).to(kUInt8), 0);
  CHECK(y.dtype() == kFloat32);
  CHECK(y.to_vector<float>() == std::vector<float>{-64, 0, 63.5f, -1.75f, 0, 60});
  const Tensor h = quant::dequantize_linear(tensor(std::vector<int32_t>{-1000, 7}, {2}), full({}, 0.5f, kFloat16),
                                            full({}, 0, kInt32), 1);
  CHECK(h.dtype() == kFloat16);
  CHECK(h.to(kFloat32).to_vector<float>() == std::vector<float>{-500, 3.5f});
  // One zero point with a scale per index of the axis serves every index.
  CHECK(quant::dequantize_linear(q, tensor(std::vector<float>{0.5f, 0.25f}, {2}), full({}, 10, kUInt8), 0)
            .to_vector<float>() == std::vector<float>{-5, 59, 122.5f, -1.75f, 0, 60});
  CHECK(quant::dequantize_linear(tensor(std::vector<int32_t>{-128, 127}, {2}).to(kInt8), full({}, 2.0f, kFloat32),
                                 Tensor(), 1)
            .to_vector<float>() == std::vector<float>{-256, 254});
}

TEST_CASE("dynamic_quantize_linear: the range widened to 0, uint8 codes", "[quant][onnx_quant]") {
  // min -1, max 3.5: scale 4.5 / 255, zero point round(1 / scale) = round(56.67) = 57;
  // 2 / scale = 113.33 -> 113 + 57; 3.5 / scale = 198.33 -> 198 + 57.
  const auto d = quant::dynamic_quantize_linear(tensor(std::vector<float>{0, 2, -1, 3.5f}, {2, 2}));
  CHECK(d.scale.shape() == Shape{});
  CHECK(d.scale.item<float>() == 4.5f / 255.0f);
  CHECK(d.zero_point.dtype() == kUInt8);
  CHECK(codes(d.zero_point) == std::vector<int64_t>{57});
  CHECK(codes(d.y) == std::vector<int64_t>{57, 170, 0, 255});
  // Only positive values: the zero point is 0 and the largest value 255.
  const auto p = quant::dynamic_quantize_linear(tensor(std::vector<float>{5.1f, 0.3f}, {2}));
  CHECK(codes(p.zero_point) == std::vector<int64_t>{0});
  CHECK(codes(p.y) == std::vector<int64_t>{255, 15});
  const auto z = quant::dynamic_quantize_linear(zeros({3}));
  CHECK(z.scale.item<float>() == 0.0f);
  CHECK(codes(z.y) == std::vector<int64_t>{0, 0, 0});
  CHECK(quant::dynamic_quantize_linear(zeros({0, 4})).y.shape() == Shape{0, 4});
}

TEST_CASE("requantize: int32 sums times a multiplier, per axis, saturated", "[quant][onnx_quant]") {
  for (const char* isa : {"generic", "avx2", "avx512"}) {  // every instruction set's loop this CPU runs
  if (!cpu::set_isa(isa)) continue;
  INFO(isa);
  const Tensor acc = tensor(std::vector<int32_t>{-100, 0, 7, 1000, 5, -5}, {3, 2});
  CHECK(codes(quant::requantize(acc, full({}, 0.5f, kFloat32), full({}, 128, kUInt8), 1, kUInt8)) ==
        std::vector<int64_t>{78, 128, 132, 255, 130, 126});  // 2.5 -> 2 and -2.5 -> -2: ties to even
  CHECK(codes(quant::requantize(acc, tensor(std::vector<float>{1, 0.1f}, {2}), Tensor(), 1, kInt8)) ==
        std::vector<int64_t>{-100, 0, 7, 100, 5, -0});
  CHECK(codes(quant::requantize(acc, tensor(std::vector<float>{1, 0.1f, 2}, {3}), Tensor(), 0, kInt8)) ==
        std::vector<int64_t>{-100, 0, 1, 100, 10, -10});
  // Long enough for the vector loops: sums k - 500 times 0.5, ties at every odd k.
  std::vector<int32_t> many;
  std::vector<int64_t> want;
  for (int k = 0; k < 1000; ++k) {
    many.push_back(k - 500);
    want.push_back(std::min<int64_t>(255, std::max<int64_t>(0, int64_t(std::nearbyint((k - 500) * 0.5)) + 100)));
  }
  CHECK(codes(quant::requantize(tensor(many, {1000}), full({}, 0.5f, kFloat32), full({}, 100, kUInt8), 0, kUInt8)) ==
        want);
  }
  cpu::set_isa("auto");
}

TEST_CASE("onnx quantization: the documented refusals", "[quant][onnx_quant][errors]") {
  const Tensor x = zeros({2, 3});
  const Tensor s = full({}, 1.0f, kFloat32);
  CHECK(message_of<DTypeError>([&] { quant::quantize_linear(x, s, Tensor(), 1, kInt32); }) ==
        "quantize_linear: the quantized type must be int8 or uint8, got int32");
  CHECK(message_of<DTypeError>([&] { quant::quantize_linear(x, full({}, 1, kInt32), Tensor(), 1, kInt8); }) ==
        "quantize_linear: the scale must be floating point, got int32");
  CHECK(message_of<DTypeError>([&] { quant::quantize_linear(x.to(kInt8), s, Tensor(), 1, kInt8); }) ==
        "quantize_linear: the input must be float32, float16, bfloat16 or int32, got int8");
  CHECK(message_of<ShapeError>([&] { quant::quantize_linear(x, ones({2}), Tensor(), 1, kInt8); }) ==
        "quantize_linear: the scale must hold one value or one per index of axis 1 of [2, 3], got shape [2]");
  CHECK(message_of<ShapeError>([&] { quant::quantize_linear(x, ones({3}), Tensor(), 2, kInt8); }) ==
        "quantize_linear: axis 2 is out of range for a rank-2 input");
  CHECK(message_of<ShapeError>([&] { quant::quantize_linear(x, ones({3}), zeros({2}, kInt8), 1, kInt8); }) ==
        "quantize_linear: the zero point's shape [2] does not match the scale's [3]");
  CHECK(message_of<DTypeError>([&] { quant::quantize_linear(x, s, zeros({}), 1, kInt8); }) ==
        "quantize_linear: the zero point must be int8 like the codes, got float32");
  // An int32 zero point could lie outside the codes' range: ONNX's rule, the codes' dtype, keeps it inside.
  CHECK(message_of<DTypeError>([&] { quant::requantize(zeros({2}, kInt32), s, full({}, 1000000000, kInt32), 0, kInt8); }) ==
        "requantize: the zero point must be int8 like the codes, got int32");
  const Tensor q = zeros({2, 3}, kInt32);
  CHECK(message_of<DTypeError>([&] { quant::dequantize_linear(x, s, Tensor(), 1); }) ==
        "dequantize_linear: the input must be int8, uint8 or int32, got float32");
  CHECK(message_of<DTypeError>([&] { quant::dequantize_linear(q, s, zeros({}, kInt8), 1); }) ==
        "dequantize_linear: the zero point must be int32 like the codes, got int8");
  CHECK(message_of<ValueError>([&] { quant::dequantize_linear(q, s, full({}, 1, kInt32), 1); }) ==
        "dequantize_linear: an int32 input's zero point must be 0");
  CHECK(message_of<DTypeError>([&] { quant::dynamic_quantize_linear(x.to(kFloat64)); }) ==
        "dynamic_quantize_linear: the input must be float32, got float64");
  CHECK(message_of<ValueError>([&] {
          quant::dynamic_quantize_linear(tensor(std::vector<float>{1, std::numeric_limits<float>::infinity()}, {2}));
        }) == "dynamic_quantize_linear: the input holds inf or NaN, which has no quantized value");
  CHECK(message_of<DTypeError>([&] { quant::requantize(x, s, Tensor(), 1, kInt8); }) ==
        "requantize: the sums must be int32, got float32");
  CHECK(message_of<ShapeError>([&] { quant::requantize(q, s, zeros({2}, kInt8), 1, kInt8); }) ==
        "requantize: the output zero point must hold one value, got shape [2]");
  CHECK(message_of<ShapeError>([&] { quant::requantize(q, ones({4}), Tensor(), 1, kInt8); }) ==
        "requantize: the multiplier must hold one value or one per index of axis 1 of [2, 3], got shape [4]");
}
