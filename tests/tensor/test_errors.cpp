// Every error message documented in docs/errors.md, asserted by exact text and
// type. Device mismatches use the meta device, which needs no GPU. Keep this file
// and docs/errors.md in the same order.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "ember.h"

using namespace ember;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

TEST_CASE("device mismatch errors name both devices, first operand expected", "[errors][device]") {
  Tensor meta = zeros({2, 3}, kMeta), cpu = zeros({2, 3});
  EXPECT_ERROR(meta + cpu, DeviceError, "expected device meta but got device cpu");
  EXPECT_ERROR(cpu + meta, DeviceError, "expected device cpu but got device meta");
  EXPECT_ERROR(cpu * meta, DeviceError, "expected device cpu but got device meta");
  EXPECT_ERROR(meta == cpu, DeviceError, "expected device meta but got device cpu");
  EXPECT_ERROR(matmul(meta, cpu.t()), DeviceError, "expected device meta but got device cpu");
  EXPECT_ERROR(where(cpu > 0, meta, cpu), DeviceError, "expected device cpu but got device meta");
  EXPECT_ERROR(cat({cpu, meta}), DeviceError, "expected device cpu but got device meta");
  EXPECT_ERROR(stack({meta, cpu}), DeviceError, "expected device meta but got device cpu");
  EXPECT_ERROR(cpu.add_(meta), DeviceError, "expected device cpu but got device meta");
  // A C++ number joins a tensor on any device.
  REQUIRE((meta + 2).device() == kMeta);
}

TEST_CASE("device errors without CUDA and on meta tensors", "[errors][device]") {
  EXPECT_ERROR(zeros({2}).to(Device("cuda")), DeviceError,
               "CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
  EXPECT_ERROR(zeros({2}).cuda(), DeviceError,
               "CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
  EXPECT_ERROR(zeros({2}, kMeta).cpu(), DeviceError, "Cannot copy out of meta tensor; no data!");
  EXPECT_ERROR(zeros({1}, kMeta).item(), DeviceError, "cannot access the data of a tensor on device meta");
  EXPECT_ERROR(zeros({1}, kMeta).data_ptr(), DeviceError, "cannot access the data of a tensor on device meta");
  EXPECT_ERROR(emu::set_device(2), DeviceError, "emu: invalid device ordinal 2 (2 devices)");
  EXPECT_ERROR(zeros({2}, Device("emu:3")), DeviceError, "emu: invalid device ordinal 3 (2 devices)");
}

TEST_CASE("device and dtype parsing errors", "[errors][value]") {
  EXPECT_ERROR(Device("gpu"), ValueError, "invalid device string: 'gpu' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  EXPECT_ERROR(Device("cuda:x"), ValueError, "invalid device string: 'cuda:x' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  EXPECT_ERROR(Device(DeviceType::CUDA, -2), ValueError, "device index must be -1 or non-negative, got -2");
  EXPECT_ERROR(parse_dtype("float8"), ValueError, "invalid dtype name: 'float8'");
}

TEST_CASE("broadcast and shape errors use PyTorch's wording", "[errors][shape]") {
  EXPECT_ERROR(zeros({2, 3}) + zeros({2, 4}), ShapeError,
               "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
  EXPECT_ERROR(matmul(zeros({2, 3}), zeros({4, 5})), ShapeError,
               "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_ERROR(matmul(zeros({2, 3}), zeros({4})), ShapeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x1)");
  EXPECT_ERROR(matmul(zeros({3}), zeros({4})), ShapeError,
               "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but "
               "got 3 and 4 elements respectively");
  EXPECT_ERROR(matmul(zeros({}), zeros({3})), ShapeError,
               "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  Tensor a = zeros({3});
  EXPECT_ERROR(a.add_(zeros({2, 3})), ShapeError, "output with shape [3] doesn't match the broadcast shape [2, 3]");
  EXPECT_ERROR(a.copy_(zeros({2, 3})), ShapeError, "output with shape [3] doesn't match the broadcast shape [2, 3]");
}

TEST_CASE("view and reshape errors", "[errors][shape]") {
  Tensor a = zeros({2, 3});
  EXPECT_ERROR(a.view({4, 2}), ShapeError, "shape '[4, 2]' is invalid for input of size 6");
  EXPECT_ERROR(a.view({-1, -1}), ShapeError, "only one dimension can be inferred");
  EXPECT_ERROR(a.view({-2, 3}), ShapeError, "invalid shape dimension -2");
  EXPECT_ERROR(a.t().view({6}), ShapeError,
               "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
               "two contiguous subspaces). Use .reshape(...) instead.");
  EXPECT_ERROR(a.permute({0}), ShapeError,
               "permute(): number of dims don't match in permute: the tensor has 2 dims but 1 were given");
  EXPECT_ERROR(a.permute({1, 1}), ShapeError, "permute(): duplicate dims are not allowed.");
  EXPECT_ERROR(zeros({2, 2, 2}).t(), ShapeError, "t() expects a tensor with <= 2 dimensions, but self is 3D");
  EXPECT_ERROR(a.expand({3, 3}), ShapeError,
               "The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0.  "
               "Target sizes: [3, 3].  Tensor sizes: [2, 3]");
  EXPECT_ERROR(a.expand({3}), ShapeError,
               "expand: the number of sizes provided (1) must be greater or equal to the number of dimensions in the "
               "tensor (2)");
  EXPECT_ERROR(a.expand({-1, 2, 3}), ShapeError,
               "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
  EXPECT_ERROR(a.as_strided({2}, {1, 1}), ShapeError, "mismatch in length of strides and shape: 1 sizes, 2 strides");
  EXPECT_ERROR(a.as_strided({2, 3}, {3, 2}), IndexError,
               "as_strided: the view reaches element 7 but the storage holds 6 elements");
  EXPECT_ERROR(a.as_strided({2}, {-1}), ValueError, "as_strided: negative sizes or strides are not supported");
  EXPECT_ERROR(a.flatten(1, 0), ValueError, "flatten() has invalid args: start_dim cannot come after end_dim");
}

TEST_CASE("dimension and index errors", "[errors][index]") {
  Tensor a = zeros({3, 4});
  EXPECT_ERROR(a.sum({2}), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_ERROR(a.transpose(0, -3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_ERROR(zeros({}).softmax(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  EXPECT_ERROR(a.select(0, 5), IndexError, "select(): index 5 out of range for tensor of size [3, 4] at dimension 0");
  EXPECT_ERROR(a[-4], IndexError, "select(): index -4 out of range for tensor of size [3, 4] at dimension 0");
  EXPECT_ERROR(zeros({}).select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor.");
  EXPECT_ERROR(zeros({}).slice(0, 0, 1), IndexError, "slice() cannot be applied to a 0-dim tensor.");
  EXPECT_ERROR(zeros({}).narrow(0, 0, 1), IndexError, "narrow() cannot be applied to a 0-dim tensor.");
  EXPECT_ERROR(a.slice(0, 0, 2, 0), ValueError, "slice step must be positive");
  EXPECT_ERROR(a.narrow(1, 3, 2), IndexError, "start (3) + length (2) exceeds dimension size (4).");
  EXPECT_ERROR(a.narrow(1, 5, 0), IndexError, "start out of range (expected to be in range of [-4, 4], but got 5)");
  EXPECT_ERROR(a.narrow(1, 0, -1), ValueError, "narrow(): length must be non-negative.");
}

TEST_CASE("dtype errors", "[errors][dtype]") {
  Tensor i = zeros({3}, kInt64), b = zeros({3}, kBool);
  EXPECT_ERROR(i.add_(1.5), DTypeError, "result type float32 can't be cast to the desired output type int64");
  EXPECT_ERROR(b.add_(i), DTypeError, "result type int64 can't be cast to the desired output type bool");
  EXPECT_ERROR(-b, DTypeError,
               "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
               "the `~` or `logical_not()` operator instead.");
  EXPECT_ERROR(b - b, DTypeError,
               "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
               "operator instead.");
  EXPECT_ERROR(i.mean(), DTypeError,
               "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
               "Got: int64");
  EXPECT_ERROR(i.var(), DTypeError, "var(): std and var only support floating point and complex dtypes, got int64");
  EXPECT_ERROR(i.softmax(0), DTypeError, "softmax(): expected a floating point tensor but got dtype int64");
  EXPECT_ERROR(i.log_softmax(0), DTypeError, "log_softmax(): expected a floating point tensor but got dtype int64");
  EXPECT_ERROR(where(i, i, i), DTypeError, "where expected condition to be a boolean tensor, but got a tensor with dtype int64");
  EXPECT_ERROR(matmul(zeros({2, 2}), zeros({2, 2}, kFloat64)), DTypeError,
               "expected both matmul operands to have the same dtype, but got float32 and float64");
  EXPECT_ERROR(rand({2}, kInt32), DTypeError, "rand: expected a floating point dtype but got int32");
  EXPECT_ERROR(randn({2}, kBool), DTypeError, "randn: expected a floating point dtype but got bool");
  EXPECT_ERROR(zeros({2}).data_ptr<double>(), DTypeError, "data_ptr: expected dtype float64 but the tensor has dtype float32");
  EXPECT_ERROR(zeros({2}).to_vector<int64_t>(), DTypeError, "to_vector: expected dtype int64 but the tensor has dtype float32");
}

TEST_CASE("ops without a kernel for a dtype say which", "[errors][notimplemented]") {
  Tensor b = zeros({2}, kBool);
  EXPECT_ERROR(b.abs(), NotImplementedError, "abs: not implemented for dtype bool");
  EXPECT_ERROR(b.relu(), NotImplementedError, "relu: not implemented for dtype bool");
  EXPECT_ERROR(matmul(zeros({2, 2}, kBool), zeros({2, 2}, kBool)), NotImplementedError,
               "matmul: not implemented for dtype bool");
}

TEST_CASE("reduction errors", "[errors][reduce]") {
  Tensor e = zeros({0, 3});
  EXPECT_ERROR(e.max(), IndexError,
               "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
               "the 'dim' argument.");
  EXPECT_ERROR(e.min(), IndexError,
               "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
               "the 'dim' argument.");
  EXPECT_ERROR(e.max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_ERROR(e.amax({0}), IndexError, "amax(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_ERROR(e.argmax(), IndexError, "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  EXPECT_ERROR(zeros({2, 3}).sum({0, -2}), ValueError, "sum(): dim 0 appears multiple times in the list of dims");
  EXPECT_ERROR(zeros({2}, kInt64).norm(), DTypeError, "norm(): expected a floating point input, got int64");
  EXPECT_ERROR(zeros({0}).norm(INFINITY), IndexError,
               "norm(): cannot compute the inf norm on an empty tensor because the operation does not have an "
               "identity");
  EXPECT_ERROR(e.norm(-1, {0}), IndexError,
               "norm(): cannot compute the -1 norm on the dimension 0 because this dimension is empty and the "
               "operation does not have an identity");
  EXPECT_ERROR(zeros({2, 3}).norm(2, {0, -2}), ValueError, "norm(): dim 0 appears multiple times in the list of dims");
  EXPECT_ERROR(zeros({2}).norm(NAN), ValueError, "norm(): the order p must be a number, got nan");
}

TEST_CASE("joining errors", "[errors][join]") {
  EXPECT_ERROR(cat({}), ValueError, "cat(): expected a non-empty list of Tensors");
  EXPECT_ERROR(stack({}), ValueError, "stack expects a non-empty TensorList");
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({2, 3, 1})}), ShapeError, "Tensors must have same number of dimensions: got 2 and 3");
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({3, 3})}, 1), ShapeError,
               "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 "
               "in the list.");
  EXPECT_ERROR(cat({zeros({})}), ShapeError, "zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_ERROR(stack({zeros({2, 3}), zeros({2, 4})}), ShapeError,
               "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
}

TEST_CASE("creation errors", "[errors][creation]") {
  EXPECT_ERROR(zeros({2, -1}), ValueError, "empty: negative dimension -1 in shape [2, -1]");
  EXPECT_ERROR(zeros(Shape(13, 1)), ValueError, "empty: at most 12 dimensions are supported, got 13");
  EXPECT_ERROR(arange(0, 10, 0), ValueError, "arange: step must be nonzero");
  EXPECT_ERROR(arange(0, 10, -1), ValueError, "arange: upper bound and larger bound inconsistent with step sign");
  EXPECT_ERROR(arange(0.0, INFINITY, 1), ValueError, "arange: unsupported range: 0 -> inf");
  EXPECT_ERROR(tensor({{1.f, 2.f}, {3.f}}), ShapeError, "tensor: expected every row to have 2 values, got 1");
  EXPECT_ERROR(tensor(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError, "tensor: 3 values cannot fill shape [2, 2]");
  EXPECT_ERROR(from_blob(nullptr, {2}, kFloat32), ValueError, "from_blob: data is null but the shape has elements");
  float buf[4];
  EXPECT_ERROR(from_blob(buf, {2}, kFloat32, {1, 1}), ValueError, "from_blob: 1 sizes but 2 strides");
  EXPECT_ERROR(from_blob(buf, {2}, kFloat32, {-1}), ValueError, "from_blob: negative strides are not supported");
  // Sizes whose element count, or whose byte count, overflows int64 never reach an unchecked multiplication.
  EXPECT_ERROR(from_blob(buf, {int64_t(1) << 62, 4}, kFloat32), ShapeError,
               "shape [4611686018427387904, 4] has more elements than int64 can count");
  EXPECT_ERROR(from_blob(buf, {int64_t(1) << 62}, kFloat64), ValueError,
               "from_blob: shape [4611686018427387904] and dtype float64 span more bytes than fit in 64 bits");
  EXPECT_ERROR(clamp(zeros({2}), std::nullopt, std::nullopt), ValueError,
               "clamp: at least one of 'min' or 'max' must not be None");
  Generator g;
  EXPECT_ERROR(g.set_state({}), ValueError, "Generator.set_state: expected the 20 bytes of Generator.get_state, got 0 bytes");
  EXPECT_ERROR(g.set_state(std::vector<uint8_t>(20, 0)), ValueError,
               "Generator.set_state: expected the 20 bytes of Generator.get_state, got 20 bytes with another tag");
}

TEST_CASE("views whose sizes overflow int64 raise before any product is formed", "[errors][views]") {
  const Tensor t = zeros({2, 3});
  const int64_t big = int64_t{1} << 62;
  EXPECT_ERROR(t.reshape({big, 8, 3}), ShapeError, "shape '[4611686018427387904, 8, 3]' is invalid for input of size 6");
  EXPECT_ERROR(t.view({big, big, -1}), ShapeError,
               "shape '[4611686018427387904, 4611686018427387904, -1]' is invalid for input of size 6");
  EXPECT_ERROR(zeros({1, 1}).expand({big, 8}), ShapeError,
               "shape [4611686018427387904, 8] has more elements than int64 can count");
  EXPECT_ERROR(t.as_strided({2, big}, {1, big}), IndexError,
               "as_strided: the view reaches past the last element int64 can index");
  CHECK(zeros({1, 1}).expand({big, 1}).numel() == big);  // large but countable: a valid view
}

TEST_CASE("allocation errors", "[errors][memory]") {
  // More elements than int64 counts: a shape error, before any size in bytes is formed.
  EXPECT_ERROR(empty({int64_t{1} << 40, int64_t{1} << 40}), ShapeError,
               "shape [1099511627776, 1099511627776] has more elements than int64 can count");
  EXPECT_ERROR(zeros({3, int64_t{1} << 62, 8}), ShapeError,
               "shape [3, 4611686018427387904, 8] has more elements than int64 can count");
  CHECK(empty({0, int64_t{1} << 62, 1}).numel() == 0);  // a zero size: no elements, no overflow
  // ... but its other sizes must still multiply within int64 (numel, strides and
  // flattened dims multiply them in any order).
  EXPECT_ERROR(empty({0, int64_t{1} << 62, 8}), ShapeError,
               "shape [0, 4611686018427387904, 8] has no elements, but its other sizes multiply past int64");
  EXPECT_ERROR(zeros({1}).expand({int64_t{1} << 40, int64_t{1} << 40, 0}), ShapeError,
               "shape [1099511627776, 1099511627776, 0] has no elements, but its other sizes multiply past int64");
  // Size arithmetic on arguments from outside: an error, not a signed overflow.
  const int64_t big = int64_t{1} << 62;
  EXPECT_ERROR(pad(zeros({3}), {{big, big}}), ShapeError,
               "pad(): sizes overflow int64 (4611686018427387907 + 4611686018427387904)");
  EXPECT_ERROR(cat({empty({0, big}), empty({0, big})}, 1), ShapeError,
               "cat(): sizes overflow int64 (4611686018427387904 + 4611686018427387904)");
  EXPECT_ERROR(conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), Tensor(), {1, 1}, {big, 0}), ShapeError,
               "conv2d: sizes overflow int64 (2 * 4611686018427387904)");
  EXPECT_ERROR(conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), Tensor(), {1, 1}, {0, 0}, {big, 1}), ShapeError,
               "conv2d: sizes overflow int64 (4611686018427387904 * 2)");
  // The elements fit, their bytes do not.
  EXPECT_ERROR(empty({int64_t{1} << 62}), OutOfMemoryError,
               "tensor of shape [4611686018427387904] and dtype float32 is too large to allocate (its size in "
               "bytes overflows 64 bits)");
  EXPECT_ERROR(empty({int64_t{1} << 46}, kFloat64), OutOfMemoryError,
               "CPU out of memory: tried to allocate 562949953421312 bytes");
  // The strides of such a shape saturate instead of overflowing (the product 2^120
  // wraps to 0 in two's complement, which is what an overflowing loop would give).
  const Shape huge{int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40};
  CHECK(contiguous_strides(huge) == Shape{INT64_MAX, int64_t{1} << 40, 1});
}

TEST_CASE("fill_ refuses a floating value an integer tensor cannot hold, and changes nothing", "[errors][value]") {
  Tensor t = zeros({3}, kInt64);
  EXPECT_ERROR(t.fill_(std::numeric_limits<double>::infinity()), ValueError,
               "fill_: value inf cannot be converted to int64 without overflow");
  EXPECT_ERROR(t.fill_(-1e30), ValueError, "fill_: value -1e+30 cannot be converted to int64 without overflow");
  EXPECT_ERROR(t.t().fill_(std::nan("")), ValueError, "fill_: value nan cannot be converted to int64 without overflow");
  CHECK(t.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  CHECK(t.fill_(-2.7).to_vector<int64_t>() == std::vector<int64_t>{-2, -2, -2});  // truncates, as before
  Tensor f = zeros({2});
  CHECK(std::isinf(f.fill_(-std::numeric_limits<double>::infinity()).to_vector<float>()[0]));  // floats take inf
}

TEST_CASE("scalar access errors", "[errors][value]") {
  EXPECT_ERROR(zeros({2, 3}).item(), ValueError, "a Tensor with 6 elements cannot be converted to Scalar");
  EXPECT_ERROR(Tensor().numel(), ValueError, "the tensor is undefined (default-constructed)");
}

TEST_CASE("every error derives from ember::Error and std::runtime_error", "[errors]") {
  REQUIRE_THROWS_AS(zeros({2}) + zeros({3}), Error);
  REQUIRE_THROWS_AS(zeros({2}) + zeros({3}), std::runtime_error);
  REQUIRE_THROWS_AS(Device("tpu"), Error);
}
