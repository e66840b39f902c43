// quant::dequantize_sums against the ops it replaces, Cast -> Mul -> Add -> Relu
// run apart, bit for bit: int32 sums of every size a product of 8-bit codes gives
// (past 2^24, where the cast to float rounds), scales and biases along each axis or
// one value, with and without a bias and ReLU; and its refusals.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "ember.h"
#include "quant/dequantize_sums.h"
#include "support/message_of.h"

using namespace ember;

namespace {

Tensor random_sums(const Shape& shape, std::mt19937& g) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::uniform_int_distribution<int32_t> wide(-(1 << 30), 1 << 30), narrow(-300, 300), pick(0, 4);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = pick(g) == 0 ? 0 : pick(g) < 3 ? narrow(g) : wide(g);
  return tensor(v, shape).to(kInt32);
}

Tensor random_floats(const Shape& shape, std::mt19937& g) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::uniform_real_distribution<float> u(-0.01f, 0.01f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(g);
  return tensor(v, shape);
}

// The bytes of a float32 tensor, so that -0 and +0 differ.
std::vector<uint32_t> bits(const Tensor& t) {
  const auto f = t.contiguous().to_vector<float>();
  std::vector<uint32_t> b(f.size());
  std::memcpy(b.data(), f.data(), f.size() * sizeof(float));
  return b;
}

Tensor apart(const Tensor& sums, const Tensor& scale, const Tensor& bias, bool relu) {
  Tensor y = mul(sums.to(kFloat32), scale);
  if (bias.defined()) y = add(y, bias);
  return relu ? y.relu() : y;
}

}  // namespace

TEST_CASE("quant: dequantize_sums gives the bits of Cast, Mul, Add and Relu apart", "[quant]") {
  std::mt19937 g(11);
  struct Case {
    const char* what;
    Shape sums, scale, bias;  // bias {} with has_bias false: none
    bool has_bias;
  };
  const std::vector<Case> cases = {
      {"a matrix product's sums, one scale and bias per column", {37, 70}, {70}, {70}, true},
      {"one scale, a bias per column", {5, 33}, {}, {1, 33}, true},
      {"a scale per column, no bias", {9, 40}, {40}, {}, false},
      {"a convolution's sums, per output channel", {2, 16, 7, 9}, {16, 1, 1}, {16, 1, 1}, true},
      {"per channel written with a leading 1", {3, 8, 5, 5}, {1, 8, 1, 1}, {8, 1, 1}, true},
      {"one value each, as 1-element tensors", {4, 6, 3}, {1}, {1, 1}, true},
      {"a batch large enough for the team", {300, 256}, {256}, {256}, true},
      {"0-D sums", {}, {}, {}, true},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const Tensor sums = random_sums(c.sums, g);
      const Tensor scale = random_floats(c.scale, g);
      const Tensor bias = c.has_bias ? random_floats(c.bias, g) : Tensor();
      REQUIRE(quant::dequantize_sums_in_one_pass(sums, scale, bias));
      for (bool relu : {false, true}) {
        const Tensor y = quant::dequantize_sums(sums, scale, bias, relu);
        CHECK(y.shape() == sums.shape());
        CHECK(bits(y) == bits(apart(sums, scale, bias, relu)));
      }
    }
  }
}

TEST_CASE("quant: dequantize_sums keeps -0 without a bias and rounds past 2^24 as the cast does", "[quant]") {
  const Tensor sums = tensor(std::vector<int32_t>{0, 16777217, -16777219, 2147483647}, {4}).to(kInt32);
  const Tensor scale = full({}, -1.0, kFloat32);
  const auto y = quant::dequantize_sums(sums, scale, Tensor(), false).to_vector<float>();
  CHECK(std::signbit(y[0]));
  CHECK(y[1] == -16777216.0f);  // 2^24 + 1 rounds to even
  CHECK(y[2] == 16777220.0f);
  CHECK(y[3] == -2147483648.0f);
  CHECK(bits(quant::dequantize_sums(sums, scale, Tensor(), false)) == bits(apart(sums, scale, Tensor(), false)));
}

TEST_CASE("quant: dequantize_sums refuses what it does not take in one pass", "[quant][errors]") {
  std::mt19937 g(3);
  const Tensor sums = random_sums({4, 6}, g);
  const Tensor per_column = random_floats({6}, g);
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, random_floats({4, 1}, g), per_column));  // rows and columns
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, random_floats({2, 4, 6}, g), Tensor()));  // adds a dim
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, random_floats({4, 6}, g), Tensor()));     // varies along two
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, per_column.to(kFloat64), Tensor()));
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, per_column, per_column.to(kFloat64)));
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums.to(kInt64), per_column, Tensor()));
  CHECK_FALSE(quant::dequantize_sums_in_one_pass(sums, per_column, random_floats({5}, g)));  // 5 of 6 columns
  CHECK(message_of<ValueError>([&] { quant::dequantize_sums(sums, random_floats({4, 1}, g), per_column, false); }) ==
        "dequantize_sums: operands it does not take in one pass");
}

