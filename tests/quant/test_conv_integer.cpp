// quant::conv_integer (ONNX's ConvInteger, the sums of QLinearConv) against a plain
// int64 loop over the definition: every pairing of int8 and uint8 codes, zero
// points absent, per tensor and per output channel, a bias, groups, strides,
// dilations and asymmetric padding, packed and unpacked weights, each path (the
// int8 GEMM, the automatic choice, float64), both CPU kernels (generic and VNNI
// where the CPU has it), 1x1 windows reading pixels as rows, output positions split into several
// GEMMs, the 32-bit wrap of long sums, the float64 path past the kernel's exact
// range, the emu device, and every documented refusal.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "integer_codes.h"
#include "kernels/cpu/isa.h"
#include "quant/conv_integer.h"
#include "support/message_of.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

using integer_codes::random_codes;
using integer_codes::values;

// The definition: padding positions are skipped (x - x_zero is 0 there); the
// int64 sums wrap to int32 at the end, as ONNX's int32 sums do.
std::vector<int64_t> reference(const Tensor& x, const Tensor& w, int64_t zx, const std::vector<int64_t>& zw,
                               const std::vector<int64_t>& bias, const quant::ConvIntegerWindow& q) {
  const auto xv = values(x), wv = values(w);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t m = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3), mg = m / q.groups;
  const int64_t oh = (h + q.pad_begin[0] + q.pad_end[0] - (kh - 1) * q.dilation[0] - 1) / q.stride[0] + 1;
  const int64_t ow = (wd + q.pad_begin[1] + q.pad_end[1] - (kw - 1) * q.dilation[1] - 1) / q.stride[1] + 1;
  std::vector<int64_t> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t acc = bias.empty() ? 0 : bias[size_t(o)];
          const int64_t g = o / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t r = i * q.stride[0] - q.pad_begin[0] + a * q.dilation[0];
                const int64_t s = j * q.stride[1] - q.pad_begin[1] + e * q.dilation[1];
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                acc += (xv[size_t(((b * c + g * cg + ci) * h + r) * wd + s)] - zx) *
                       (wv[size_t(((o * cg + ci) * kh + a) * kw + e)] - zw[size_t(o)]);
              }
          out.push_back(int64_t(int32_t(uint32_t(uint64_t(acc)))));
        }
  return out;
}

struct IsaGuard {
  ~IsaGuard() { cpu::set_isa("auto"); }
};

std::vector<const char*> cpu_kernels() {
  std::vector<const char*> isas;
  for (const char* n : {"generic", "avx512_vnni"})
    if (cpu::set_isa(n)) isas.push_back(n);
  cpu::set_isa("auto");
  return isas;
}

quant::ConvIntegerWindow window(int64_t groups, std::array<int64_t, 2> stride, std::array<int64_t, 2> dil,
                                std::array<int64_t, 2> pb, std::array<int64_t, 2> pe) {
  quant::ConvIntegerWindow q;
  q.groups = groups;
  q.stride = stride;
  q.dilation = dil;
  q.pad_begin = pb;
  q.pad_end = pe;
  return q;
}

}  // namespace

TEST_CASE("conv_integer: every code pairing, zero-point form and window, against a plain loop",
          "[quant][conv_integer]") {
  IsaGuard guard;
  std::mt19937 g(21);
  struct Case {
    int64_t n, c, h, w, m, kh, kw;
    quant::ConvIntegerWindow q;
  };
  const std::vector<Case> cases{
      {1, 1, 1, 1, 1, 1, 1, window(1, {1, 1}, {1, 1}, {0, 0}, {0, 0})},
      {2, 3, 7, 6, 5, 3, 3, window(1, {1, 1}, {1, 1}, {1, 1}, {1, 1})},
      {1, 4, 9, 8, 6, 3, 2, window(2, {2, 1}, {1, 2}, {1, 0}, {2, 1})},   // asymmetric pads, dilation
      {2, 6, 5, 7, 6, 2, 3, window(3, {1, 2}, {2, 1}, {0, 2}, {1, 0})},   // 3 groups
      {1, 8, 6, 6, 8, 3, 3, window(8, {1, 1}, {1, 1}, {1, 1}, {1, 1})},   // depthwise
      {1, 40, 5, 4, 33, 1, 1, window(1, {1, 1}, {1, 1}, {0, 0}, {0, 0})},  // 1x1 (pixels as rows), two weight panels
      {2, 18, 3, 5, 9, 1, 1, window(1, {1, 1}, {1, 1}, {0, 0}, {0, 0})},   // 1x1, channels not a multiple of 4
      {1, 2, 4, 4, 3, 3, 3, window(1, {3, 3}, {1, 1}, {2, 2}, {2, 2})},   // pads wider than the input reach
  };
  for (const char* isa : cpu_kernels()) {
    REQUIRE(cpu::set_isa(isa));
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& cs = cases[ci];
      for (DType xt : {kUInt8, kInt8})
        for (DType wt : {kUInt8, kInt8})
          for (int zform = 0; zform < 3; ++zform) {  // none, per tensor, per output channel
            INFO(isa << " case " << ci << " x " << xt << " w " << wt << " zero form " << zform);
            const Tensor x = random_codes({cs.n, cs.c, cs.h, cs.w}, xt, g);
            const Tensor w = random_codes({cs.m, cs.c / cs.q.groups, cs.kh, cs.kw}, wt, g);
            Tensor zx, zw, bias;
            int64_t zxv = 0;
            std::vector<int64_t> zwv(size_t(cs.m), 0), bv;
            if (zform > 0) {
              zx = random_codes({}, xt, g);
              zxv = values(zx)[0];
              zw = random_codes(zform == 1 ? Shape{1, 1} : Shape{cs.m}, wt, g);
              for (int64_t o = 0; o < cs.m; ++o) zwv[size_t(o)] = values(zw)[size_t(zform == 1 ? 0 : o)];
              std::uniform_int_distribution<int32_t> ub(-100000, 100000);
              std::vector<int32_t> b;
              for (int64_t o = 0; o < cs.m; ++o) b.push_back(ub(g));
              bias = tensor(b, {cs.m});
              bv = values(bias);
            }
            const std::vector<int64_t> want = reference(x, w, zxv, zwv, bv, cs.q);
            const auto packed = quant::pack_conv_weights(w, cs.q.groups);
            for (auto path : {quant::ConvIntegerPath::Int8Gemm, quant::ConvIntegerPath::Auto,
                              quant::ConvIntegerPath::Float64}) {
              INFO("path " << int(path));
              const Tensor got = quant::conv_integer(x, w, zx, zw, bias, cs.q, "conv_integer", nullptr, path);
              CHECK(got.dtype() == kInt32);
              CHECK(values(got) == want);
              if (path != quant::ConvIntegerPath::Float64)
                CHECK(values(quant::conv_integer(x, w, zx, zw, bias, cs.q, "conv_integer", packed.get(), path)) ==
                      want);
            }
          }
    }
  }
}

TEST_CASE("conv_integer: output positions split over several products give the same sums", "[quant][conv_integer]") {
  // 4096 channels under a 2x2 kernel: rows of 16384 bytes, so 64 positions per
  // product, and the 2 x 81 positions of two 9x9 outputs in three, the second of
  // which holds positions of both images.
  IsaGuard guard;
  std::mt19937 g(4);
  const Tensor x = random_codes({2, 4096, 10, 10}, kUInt8, g), w = random_codes({3, 4096, 2, 2}, kUInt8, g);
  const Tensor zx = full({}, 17, kUInt8), zw = tensor(std::vector<int32_t>{3, 0, 250}, {3}).to(kUInt8);
  const quant::ConvIntegerWindow q;
  const std::vector<int64_t> want = reference(x, w, 17, {3, 0, 250}, {}, q);
  for (const char* isa : cpu_kernels()) {
    REQUIRE(cpu::set_isa(isa));
    INFO(isa);
    CHECK(values(quant::conv_integer(x, w, zx, zw, Tensor(), q, "conv_integer", nullptr,
                                     quant::ConvIntegerPath::Int8Gemm)) == want);
  }
}

TEST_CASE("conv_integer: sums past int32 wrap as ONNX's int32 sums do; longer ones go through float64",
          "[quant][conv_integer]") {
  IsaGuard guard;
  // 65536 terms of (255 - 0) * (0 - 255) (uint8 w of 0 with zero point 255): the
  // kernel's largest exact sum, -4,261,478,400, which wraps to 33,488,896.
  const Tensor x = full({1, 16384, 2, 2}, 255, kUInt8), w = full({2, 16384, 2, 2}, 0, kUInt8);
  const Tensor zw = full({}, 255, kUInt8);
  const int64_t wrapped = int64_t(int32_t(uint32_t(uint64_t(int64_t(-65536) * 255 * 255))));
  REQUIRE(wrapped == 33488896);
  for (const char* isa : cpu_kernels()) {
    REQUIRE(cpu::set_isa(isa));
    INFO(isa);
    CHECK(values(quant::conv_integer(x, w, Tensor(), zw, Tensor(), {}, "conv_integer", nullptr,
                                     quant::ConvIntegerPath::Int8Gemm)) == std::vector<int64_t>{wrapped, wrapped});
  }
  // 65540 terms: past the kernel's exact range, summed in float64.
  std::mt19937 g(8);
  const Tensor x2 = random_codes({1, 16385, 2, 3}, kInt8, g), w2 = random_codes({2, 16385, 2, 2}, kInt8, g);
  const Tensor zx2 = full({}, -3, kInt8);
  CHECK(values(quant::conv_integer(x2, w2, zx2, Tensor(), Tensor(), {}, "conv_integer", nullptr,
                                   quant::ConvIntegerPath::Int8Gemm)) == reference(x2, w2, -3, {0, 0}, {}, {}));
}

TEST_CASE("conv_integer: rows, products and stores large enough for the thread team", "[quant][conv_integer]") {
  // 512 positions of 576-byte rows and 64 outputs: every loop splits its work over
  // the team (OMP_NUM_THREADS=2 in the suite); zero points per output channel make
  // the row sums run too.
  IsaGuard guard;
  std::mt19937 g(13);
  const Tensor x = random_codes({2, 64, 16, 16}, kUInt8, g), w = random_codes({64, 64, 3, 3}, kInt8, g);
  const Tensor zx = full({}, 99, kUInt8), zw = random_codes({64}, kInt8, g);
  std::vector<int32_t> b;
  for (int i = 0; i < 64; ++i) b.push_back(i * 1000 - 31000);
  const Tensor bias = tensor(b, {64});
  const quant::ConvIntegerWindow q = window(1, {1, 1}, {1, 1}, {1, 1}, {1, 1});
  const std::vector<int64_t> want = reference(x, w, 99, values(zw), values(bias), q);
  for (const char* isa : cpu_kernels()) {
    REQUIRE(cpu::set_isa(isa));
    INFO(isa);
    CHECK(values(quant::conv_integer(x, w, zx, zw, bias, q)) == want);
  }
}

TEST_CASE("conv_integer: on emu, the float64 path gives the same sums", "[quant][conv_integer][device]") {
  std::mt19937 g(2);
  const Tensor x = random_codes({2, 4, 5, 6}, kInt8, g), w = random_codes({4, 2, 3, 2}, kUInt8, g);
  const Tensor zx = full({}, 5, kInt8), zw = random_codes({4}, kUInt8, g);
  const Tensor bias = tensor(std::vector<int32_t>{7, -7, 70000, -1}, {4});
  const quant::ConvIntegerWindow q = window(2, {2, 1}, {1, 2}, {1, 2}, {0, 1});
  std::vector<int64_t> zwv = values(zw);
  const std::vector<int64_t> want = reference(x, w, 5, zwv, values(bias), q);
  const Device emu("emu:0");
  const Tensor on_emu = quant::conv_integer(x.to(emu), w.to(emu), zx.to(emu), zw.to(emu), bias.to(emu), q);
  CHECK(on_emu.device() == emu);
  CHECK(values(on_emu) == want);
  CHECK(values(quant::conv_integer(x, w, zx, zw, bias, q)) == want);
}

TEST_CASE("conv_integer: refusals, exactly as documented", "[quant][conv_integer][errors]") {
  const Tensor x = zeros({1, 4, 3, 3}, kUInt8), w = zeros({2, 4, 2, 2}, kInt8);
  const quant::ConvIntegerWindow q;
  CHECK(message_of<DTypeError>([&] { quant::conv_integer(zeros({1, 4, 3, 3}), w, {}, {}, {}, q); }) ==
        "conv_integer: x and w must be int8 or uint8, got float32");
  CHECK(message_of<DTypeError>([&] { quant::conv_integer(x, w, full({}, 1, kInt8), {}, {}, q); }) ==
        "conv_integer: the zero point of x must be uint8 like x, got int8");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x.reshape({4, 3, 3}), w, {}, {}, {}, q); }) ==
        "conv_integer: x must be [N, C, H, W] and w [M, C / group, kH, kW], got shapes [4, 3, 3] and [2, 4, 2, 2]");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, w, {}, {}, {}, window(2, {1, 1}, {1, 1}, {0, 0}, {0, 0})); }) ==
        "conv_integer: w of shape [2, 4, 2, 2] does not fit 4 input channels in 2 groups");
  CHECK(message_of<ValueError>([&] { quant::conv_integer(x, w, {}, {}, {}, window(1, {0, 1}, {1, 1}, {0, 0}, {0, 0})); }) ==
        "conv_integer: strides and dilations must be positive and pads not negative");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, w, zeros({2}, kUInt8), {}, {}, q); }) ==
        "conv_integer: x's zero point must hold one value, got shape [2]");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, w, {}, zeros({3}, kInt8), {}, q); }) ==
        "conv_integer: w's zero point must hold one value or one per output channel, got shape [3]");
  CHECK(message_of<DTypeError>([&] { quant::conv_integer(x, w, {}, {}, zeros({2}), q); }) ==
        "conv_integer: the bias must be int32, got float32");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, w, {}, {}, zeros({3}, kInt32), q); }) ==
        "conv_integer: the bias must hold one value per output channel, got shape [3]");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, zeros({2, 4, 4, 2}, kInt8), {}, {}, {}, q); }) ==
        "conv_integer: the padded input (3 x 3) is smaller than the kernel's reach (4 x 2)");
  const auto other = quant::pack_conv_weights(zeros({2, 2, 2, 2}, kInt8), 2);
  CHECK(message_of<ValueError>([&] { quant::conv_integer(x, w, {}, {}, {}, q, "conv_integer", other.get()); }) ==
        "conv_integer: the packed weights were made for another w or group count");
  const auto as_uint8 = quant::pack_conv_weights(zeros({2, 4, 2, 2}, kUInt8), 1);
  CHECK(message_of<ValueError>([&] { quant::conv_integer(x, w, {}, {}, {}, q, "conv_integer", as_uint8.get()); }) ==
        "conv_integer: the packed weights were made for another w or group count");
  CHECK(message_of<ShapeError>([&] { quant::conv_integer(x, zeros({2, 4, 0, 2}, kInt8), {}, {}, {}, q); }) ==
        "conv_integer: the kernel must have at least one tap, got w of shape [2, 4, 0, 2]");
  CHECK(message_of<ShapeError>([&] { quant::pack_conv_weights(w, 3); }) ==
        "conv_integer: w of shape [2, 4, 2, 2] cannot be packed in 3 groups");
}
