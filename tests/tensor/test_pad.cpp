// pad: values against a per-element reference written here (constant, reflect and
// replicate over 1-D to 4-D inputs, pads of different sizes per side, negative pads
// that crop, every dtype, non-contiguous inputs, 0-size results), pad_backward
// against a naive scatter of the output gradient through the same index rule, and
// the exact errors. gradcheck rows are in tests/autograd/test_gradcheck.cpp.
#include <catch2/catch.hpp>

#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

// Where output coordinate o of a dim of size n padded by b in front reads, by the
// definitions (numpy.pad's "constant", "reflect", "edge"); -1 for the constant.
int64_t src(int64_t o, int64_t n, int64_t b, PadMode mode) {
  int64_t s = o - b;
  if (s >= 0 && s < n) return s;
  if (mode == PadMode::Constant) return -1;
  if (mode == PadMode::Replicate) return s < 0 ? 0 : n - 1;
  while (s < 0 || s >= n) s = s < 0 ? -s : 2 * (n - 1) - s;  // mirror at 0 and at n - 1
  return s;
}

Shape out_shape(const Shape& in, const std::vector<Pair>& pads) {
  Shape s(in.size());
  for (size_t d = 0; d < in.size(); ++d) s[d] = in[d] + pads[d][0] + pads[d][1];
  return s;
}

// The input offset (row-major) output element e reads, or -1.
int64_t read_offset(int64_t e, const Shape& in, const Shape& out, const std::vector<Pair>& pads, PadMode mode) {
  const auto idx = ref::unravel(e, out);
  int64_t off = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t s = src(idx[d], in[d], pads[d][0], mode);
    if (s < 0) return -1;
    off = off * in[d] + s;
  }
  return off;
}

Array pad_ref(const Array& x, const std::vector<Pair>& pads, PadMode mode, double value) {
  Array y{out_shape(x.shape, pads), {}};
  y.v.resize(ref::numel(y.shape));
  for (int64_t e = 0; e < ref::numel(y.shape); ++e) {
    const int64_t off = read_offset(e, x.shape, y.shape, pads, mode);
    y.v[e] = off < 0 ? value : x.v[off];
  }
  return y;
}

struct Case {
  Shape shape;
  Layout layout;
  std::vector<Pair> pads;
};

const std::vector<Case> kCases = {
    {{5}, Layout::contiguous, {{2, 3}}},
    {{5}, Layout::sliced, {{-1, 4}}},                                // crop in front, pad behind
    {{3, 4}, Layout::transposed, {{1, 0}, {2, 3}}},
    {{3, 4}, Layout::contiguous, {{-1, -1}, {0, 2}}},                // crop a whole dim's ends
    {{2, 3, 4}, Layout::permuted, {{0, 1}, {2, 2}, {1, -2}}},
    {{1, 2, 4, 5}, Layout::contiguous, {{0, 0}, {0, 0}, {3, 1}, {2, 4}}},  // NCHW image padding
    {{2, 3}, Layout::expanded, {{1, 1}, {0, 0}}},
    {{4}, Layout::contiguous, {{-2, -2}}},                           // cropped to nothing
};

}  // namespace

TEST_CASE("pad matches the per-element definition for every mode and dtype", "[ops][pad]") {
  std::mt19937_64 rng(6101);
  for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate})
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool})
      for (const Case& c : kCases) {
        if (!ref::layout_applies(c.layout, c.shape)) continue;
        INFO(static_cast<int>(mode) << " " << ref::str(dt) << ref::str(c.shape) << " "
                                    << ref::layout_name(c.layout));
        Tensor x = ref::random_tensor(c.shape, dt, c.layout, rng, -8, 8);
        const double value = dt == kBool ? 1 : dt == kUInt8 ? 7 : -2.5;
        const Scalar v = is_floating(dt) ? Scalar(value) : dt == kBool ? Scalar(true) : Scalar(int64_t(value));
        Tensor y = pad(x, c.pads, mode, v);
        CHECK(y.dtype() == dt);
        CHECK_MATCH(y, pad_ref(ref::read(x), c.pads, mode, ref::cast(is_floating(dt) ? value : double(int64_t(value)), dt)),
                    ref::Tol{0, 0});
      }
}

TEST_CASE("pad: reflect and replicate on a small case written out", "[ops][pad]") {
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  CHECK(pad(x, {{2, 2}}, PadMode::Reflect).to_vector<float>() == std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  CHECK(pad(x, {{2, 1}}, PadMode::Replicate).to_vector<float>() == std::vector<float>{1, 1, 1, 2, 3, 3});
  CHECK(pad(x, {{1, -1}}, PadMode::Constant, 9).to_vector<float>() == std::vector<float>{9, 1, 2});
}

TEST_CASE("pad_backward sums the output gradient into the elements each output read", "[ops][pad]") {
  std::mt19937_64 rng(6102);
  for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate})
    for (DType dt : {kFloat32, kFloat64, kBFloat16})
      for (const Case& c : kCases) {
        INFO(static_cast<int>(mode) << " " << ref::str(dt) << ref::str(c.shape));
        const Shape out = out_shape(c.shape, c.pads);
        Tensor g = ref::random_tensor(out, dt, Layout::contiguous, rng, -2, 2);
        const Array ga = ref::read(g);
        Array want{c.shape, std::vector<double>(ref::numel(c.shape), 0.0)};
        for (int64_t e = 0; e < ref::numel(out); ++e) {
          const int64_t off = read_offset(e, c.shape, out, c.pads, mode);
          if (off >= 0) want.v[off] += ga.v[e];
        }
        Tensor gx = pad_backward(g, c.shape, c.pads, mode);
        CHECK(gx.shape() == c.shape);
        // Each dim's fold rounds once to the dtype: bfloat16 gets its tolerance per fold.
        CHECK_MATCH(gx, want, dt == kBFloat16 ? ref::Tol{3e-2, 3e-2} : ref::tol_for(dt));
      }
}

TEST_CASE("pad infers shapes on the meta device", "[ops][pad][meta]") {
  Tensor y = pad(empty({2, 3, 4}, kMeta), {{0, 0}, {1, 2}, {-1, 3}}, PadMode::Reflect);
  CHECK(y.shape() == Shape{2, 6, 6});
}

TEST_CASE("pad raises the documented errors", "[ops][pad][errors]") {
  using Catch::Message;
  Tensor x = zeros({2, 3});
  CHECK_THROWS_MATCHES(pad(x, {{1, 1}}), ValueError, Message("pad(): expected one (begin, end) pair per dim (2), got 1"));
  CHECK_THROWS_MATCHES(pad(zeros({}), {}), ValueError, Message("pad(): cannot pad a 0-dim tensor"));
  CHECK_THROWS_MATCHES(pad(x, {{0, 0}, {-2, -2}}), ValueError,
                       Message("pad(): dim 1 of size 3 with pads (-2, -2) gives a negative size -1"));
  CHECK_THROWS_MATCHES(pad(x, {{0, 0}, {3, 0}}, PadMode::Reflect), ValueError,
                       Message("pad(): reflect padding (3, 0) must be less than the size 3 of dim 1"));
  CHECK_THROWS_MATCHES(pad(zeros({0, 3}), {{1, 0}, {0, 0}}, PadMode::Replicate), ValueError,
                       Message("pad(): replicate padding of the empty dim 0"));
  CHECK_THROWS_MATCHES(pad(zeros({2}, kInt64), {{1, 1}}, PadMode::Constant, INFINITY), ValueError,
                       Message("fill_: value inf cannot be converted to int64 without overflow"));
  // Constant padding of an empty dim is fine: all of it is the constant.
  CHECK(pad(zeros({0, 2}), {{1, 1}, {0, 0}}, PadMode::Constant, 4).to_vector<float>() == std::vector<float>(4, 4.0f));
  // ... also when the empty dim is the last one, so that the other dims' maps give
  // rows a non-zero input offset into an input with no data (the ONNX fuzz target
  // found this as an AveragePool with auto_pad over a width-0 image; UBSan flagged
  // the pointer the offset was added to).
  CHECK(pad(zeros({2, 3, 0}), {{0, 0}, {0, 0}, {1, 1}}, PadMode::Constant, 5).to_vector<float>() ==
        std::vector<float>(12, 5.0f));
}
