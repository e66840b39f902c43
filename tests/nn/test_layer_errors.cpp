// The documented errors of the layer-op front-ends (docs/errors.md, "Layer ops"),
// each asserted by its exact text: convolution shapes and arguments, pooling
// arguments, and dtypes the layer kernels do not take.
#include <catch2/catch.hpp>

#include "ember.h"

using namespace ember;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

TEST_CASE("conv2d shape errors use PyTorch's wording", "[nn][errors][conv2d]") {
  Tensor w = zeros({6, 1, 5, 5}), b = zeros({6});
  EXPECT_ERROR(conv2d(zeros({1, 28, 28}), w, b), ShapeError,
               "Expected 4-dimensional input for 4-dimensional weight [6, 1, 5, 5], but got 3-dimensional input of "
               "size [1, 28, 28] instead");
  EXPECT_ERROR(conv2d(zeros({2, 3, 28, 28}), w, b), ShapeError,
               "Given groups=1, weight of size [6, 1, 5, 5], expected input[2, 3, 28, 28] to have 1 channels, but "
               "got 3 channels instead");
  EXPECT_ERROR(conv2d(zeros({1, 4, 8, 8}), zeros({5, 2, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 2), ShapeError,
               "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size "
               "[5, 2, 3, 3] instead");
  EXPECT_ERROR(conv2d(zeros({1, 1, 8, 8}), w, zeros({5})), ShapeError,
               "Given weight of size [6, 1, 5, 5], expected bias to be 1-dimensional with 6 elements, but got bias of "
               "size [5] instead");
  EXPECT_ERROR(conv2d(zeros({1, 1, 4, 4}), w, b), ShapeError,
               "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size can't be greater "
               "than actual input size");
  EXPECT_ERROR(conv2d(zeros({1, 1, 8, 8}), zeros({6, 25}), b), ShapeError,
               "conv2d: expected a 4-dimensional weight, got [6, 25]");
}

TEST_CASE("conv2d argument and dtype errors", "[nn][errors][conv2d]") {
  Tensor x = zeros({1, 1, 8, 8}), w = zeros({6, 1, 3, 3}), b = zeros({6});
  EXPECT_ERROR(conv2d(x, w, b, {0, 1}), ValueError, "non-positive stride is not supported");
  EXPECT_ERROR(conv2d(x, w, b, {1, 1}, {-1, 0}), ValueError, "negative padding is not supported");
  EXPECT_ERROR(conv2d(x, w, b, {1, 1}, {0, 0}, {0, 1}), ValueError, "dilation should be greater than zero");
  EXPECT_ERROR(conv2d(x, w, b, {1, 1}, {0, 0}, {1, 1}, 0), ValueError, "non-positive groups is not supported");
  EXPECT_ERROR(conv2d(x, w.to(kFloat64), b), DTypeError,
               "conv2d: expected input, weight and bias to have the same dtype, but got float32, float64 and float32");
  // Like PyTorch's CPU build, the layer kernels take floating types only.
  EXPECT_ERROR(conv2d(x.to(kInt64), w.to(kInt64), b.to(kInt64)), NotImplementedError,
               "conv2d: not implemented for dtype int64");
}

TEST_CASE("pooling errors", "[nn][errors][pool]") {
  Tensor x = zeros({1, 2, 8, 8});
  EXPECT_ERROR(max_pool2d_with_indices(zeros({2, 8, 8}), {2, 2}, {2, 2}), ShapeError,
               "max_pool2d: expected a 4-D input [N, C, H, W], got [2, 8, 8]");
  EXPECT_ERROR(max_pool2d_with_indices(x, {0, 2}, {2, 2}), ValueError, "max_pool2d: kernel_size must be greater than zero");
  EXPECT_ERROR(avg_pool2d(x, {2, 2}, {0, 2}), ValueError, "avg_pool2d: stride must be greater than zero");
  EXPECT_ERROR(max_pool2d_with_indices(x, {2, 2}, {2, 2}, {0, 0}, {0, 1}), ValueError,
               "max_pool2d: dilation must be greater than zero");
  EXPECT_ERROR(max_pool2d_with_indices(x, {2, 2}, {2, 2}, {2, 0}), ValueError,
               "max_pool2d: pad should be at most half of effective kernel size, but got pad=2, kernel_size=2");
  EXPECT_ERROR(max_pool2d_with_indices(zeros({1, 1, 1, 1}), {3, 3}, {1, 1}), ShapeError,
               "max_pool2d: output size is too small (-1x-1) for input [1, 1, 1, 1]");
  EXPECT_ERROR(avg_pool2d(x, {2, 2}, {2, 2}, {0, 0}, false, true, -1), ValueError, "avg_pool2d: divisor must be not zero");
  EXPECT_ERROR(max_pool2d_with_indices(x.to(kInt32), {2, 2}, {2, 2}), NotImplementedError,
               "max_pool2d: not implemented for dtype int32");
  EXPECT_ERROR(avg_pool2d(x.to(kUInt8), {2, 2}, {2, 2}), NotImplementedError,
               "avg_pool2d: not implemented for dtype uint8");
}
