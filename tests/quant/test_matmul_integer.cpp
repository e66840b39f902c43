// quant::matmul_integer (ONNX's MatMulInteger) against a plain int64 loop over
// (a - a_zero) * (b - b_zero): every pairing of int8 and uint8 codes, zero points
// absent, per tensor, per row and per column, batch dims on either side, 1-D
// operands, the packed b, both CPU kernels (generic and VNNI where the CPU has
// it), the float64 path of very long sums, and the emu device.
#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"
#include "quant/matmul_integer.h"
#include "integer_codes.h"
#include "support/message_of.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

using integer_codes::random_codes;
using integer_codes::values;

// The reference: a [batch, M, K] and b [batch, K, N] already expanded, zero points
// as [batch, M] and [batch, N] (empty: zero).
std::vector<int64_t> reference(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                               const std::vector<int64_t>& za, const std::vector<int64_t>& zb, int64_t batches,
                               int64_t m, int64_t n, int64_t k) {
  std::vector<int64_t> out(size_t(batches * m * n));
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        const int64_t zi = za.empty() ? 0 : za[size_t(t * m + i)], zj = zb.empty() ? 0 : zb[size_t(t * n + j)];
        for (int64_t p = 0; p < k; ++p) s += (a[size_t((t * m + i) * k + p)] - zi) * (b[size_t((t * k + p) * n + j)] - zj);
        out[size_t((t * m + i) * n + j)] = s;
      }
  return out;
}

struct IsaGuard {
  ~IsaGuard() { cpu::set_isa("auto"); }
};

}  // namespace

TEST_CASE("matmul_integer: every code pairing and zero-point form, against a plain loop", "[quant][matmul_integer]") {
  IsaGuard guard;
  std::mt19937 g(11);
  std::vector<const char*> isas;
  for (const char* n : {"generic", "avx512_vnni"})
    if (cpu::set_isa(n)) isas.push_back(n);
  for (const char* isa : isas) {
    REQUIRE(cpu::set_isa(isa));
    for (DType at : {kUInt8, kInt8})
      for (DType bt : {kUInt8, kInt8})
        for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {4, 33, 64}, {17, 2, 130}}) {
          for (int zform = 0; zform < 4; ++zform) {  // none, per tensor, per row/column, per row/column as N-D
            INFO(isa << " a " << at << " b " << bt << " m " << m << " n " << n << " k " << k << " zero form " << zform);
            const Tensor a = random_codes({m, k}, at, g), b = random_codes({k, n}, bt, g);
            Tensor za, zb;
            std::vector<int64_t> zav, zbv;
            if (zform > 0) {
              za = random_codes(zform == 1 ? Shape{} : zform == 2 ? Shape{m} : Shape{m, 1}, at, g);
              zb = random_codes(zform == 1 ? Shape{1} : zform == 2 ? Shape{n} : Shape{1, n}, bt, g);
              for (int64_t i = 0; i < m; ++i) zav.push_back(values(za)[size_t(zform == 1 ? 0 : i)]);
              for (int64_t j = 0; j < n; ++j) zbv.push_back(values(zb)[size_t(zform == 1 ? 0 : j)]);
            }
            const std::vector<int64_t> want = reference(values(a), values(b), zav, zbv, 1, m, n, k);
            const Tensor got = quant::matmul_integer(a, b, za, zb);
            CHECK(got.dtype() == kInt32);
            CHECK(got.shape() == Shape{m, n});
            CHECK(values(got) == want);
            const auto packed = quant::pack_integer_b(b);
            CHECK(values(quant::matmul_integer(a, b, za, zb, "matmul_integer", packed.get())) == want);
          }
        }
  }
}

TEST_CASE("matmul_integer: batch dims broadcast on either side, and 1-D operands", "[quant][matmul_integer]") {
  std::mt19937 g(5);
  const Tensor a = random_codes({2, 1, 3, 6}, kUInt8, g), b = random_codes({3, 6, 4}, kInt8, g);
  const Tensor za = random_codes({2, 1, 3, 1}, kUInt8, g), zb = random_codes({4}, kInt8, g);
  const Tensor got = quant::matmul_integer(a, b, za, zb);
  REQUIRE(got.shape() == Shape{2, 3, 3, 4});
  // The reference on the expanded operands.
  const Tensor ae = a.expand({2, 3, 3, 6}).contiguous(), be = b.expand({2, 3, 6, 4}).contiguous();
  std::vector<int64_t> zav = values(za.expand({2, 3, 3, 1}).contiguous()), zbv;
  for (int t = 0; t < 6; ++t)
    for (int64_t v : values(zb)) zbv.push_back(v);
  CHECK(values(got) == reference(values(ae), values(be), zav, zbv, 6, 3, 4, 6));

  const Tensor v = random_codes({6}, kInt8, g), m = random_codes({6, 5}, kUInt8, g);
  const Tensor vm = quant::matmul_integer(v, m, Tensor(), Tensor());
  CHECK(vm.shape() == Shape{5});
  CHECK(values(vm) == reference(values(v), values(m), {}, {}, 1, 1, 5, 6));
  const Tensor mv = quant::matmul_integer(m.t().contiguous(), v.to(kUInt8), Tensor(), Tensor());
  CHECK(mv.shape() == Shape{5});
  CHECK(values(mv) == reference(values(m.t().contiguous()), values(v.to(kUInt8)), {}, {}, 1, 5, 1, 6));
  CHECK(quant::matmul_integer(random_codes({0, 3}, kUInt8, g), random_codes({3, 2}, kInt8, g), Tensor(), Tensor())
            .shape() == Shape{0, 2});
  CHECK(values(quant::matmul_integer(random_codes({2, 0}, kUInt8, g), random_codes({0, 2}, kInt8, g),
                                     full({}, 3, kUInt8), full({}, 4, kInt8))) == std::vector<int64_t>(4, 0));
}

TEST_CASE("matmul_integer: sums longer than the kernel's exact range go through float64", "[quant][matmul_integer]") {
  // 70000 products of 255 * 127 sum to 2.27e9, past int32: ONNX's int32 sums wrap.
  const int64_t k = 70000;
  std::mt19937 g3(3);
  const Tensor a = full({1, k}, 255, kUInt8), b = full({k, 1}, 127, kInt8);
  const int64_t exact = int64_t(255) * 127 * k;
  CHECK(values(quant::matmul_integer(a, b, Tensor(), Tensor()))[0] == int64_t(int32_t(uint32_t(exact))));
  const Tensor a2 = random_codes({2, k}, kInt8, g3), b2 = full({k, 3}, -1, kInt8);
  std::vector<int64_t> want(6);
  const auto av = values(a2);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < k; ++p) s -= av[size_t(i * k + p)] - 2;
      want[size_t(i * 3 + j)] = s;
    }
  CHECK(values(quant::matmul_integer(a2, b2, full({}, 2, kInt8), Tensor())) == want);
}

TEST_CASE("matmul_integer: on the int8 kernel, sums past int32 wrap as ONNX's int32 sums do", "[quant][matmul_integer]") {
  // 65536 terms of (255 - 0) * (0 - 255): -4,261,478,400, which wraps to 33,488,896.
  // The kernel's own sums stay in range (b is flipped to -128); the zero-point
  // terms added afterwards carry the wrap.
  IsaGuard guard;
  for (const char* isa : {"generic", "avx512_vnni"}) {
    if (!cpu::set_isa(isa)) continue;
    INFO(isa);
    const int64_t k = 65536;
    const Tensor got = quant::matmul_integer(full({1, k}, 255, kUInt8), zeros({k, 2}, kUInt8), Tensor(),
                                             full({}, 255, kUInt8));
    CHECK(values(got) == std::vector<int64_t>{33488896, 33488896});
  }
}

TEST_CASE("matmul_integer: on emu, the float64 path gives the same sums", "[quant][matmul_integer][device]") {
  std::mt19937 g(9);
  const Tensor a = random_codes({5, 9}, kInt8, g), b = random_codes({9, 7}, kUInt8, g);
  const Tensor za = random_codes({5}, kInt8, g), zb = random_codes({7}, kUInt8, g);
  const Tensor cpu_result = quant::matmul_integer(a, b, za, zb);
  const Device emu("emu:0");
  const Tensor on_emu = quant::matmul_integer(a.to(emu), b.to(emu), za.to(emu), zb.to(emu));
  CHECK(on_emu.device() == emu);
  CHECK(values(on_emu) == values(cpu_result));
}

TEST_CASE("matmul_integer: the documented refusals", "[quant][matmul_integer][errors]") {
  const Tensor a = zeros({2, 3}, kUInt8), b = zeros({3, 4}, kInt8);
  CHECK(message_of<DTypeError>([&] { quant::matmul_integer(a.to(kFloat32), b, Tensor(), Tensor()); }) ==
        "matmul_integer: a must be int8 or uint8, got float32");
  CHECK(message_of<DTypeError>([&] { quant::matmul_integer(a, b, zeros({}, kInt8), Tensor()); }) ==
        "matmul_integer: the zero point of a must be uint8 like a, got int8");
  CHECK(message_of<ShapeError>([&] { quant::matmul_integer(a, zeros({4, 3}, kInt8), Tensor(), Tensor()); }) ==
        "matmul_integer: cannot multiply shapes [2, 3] and [4, 3]");
  CHECK(message_of<ShapeError>([&] { quant::matmul_integer(a, b, zeros({3}, kUInt8), Tensor()); }) ==
        "matmul_integer: the zero point of a must hold one value or one per row, got shape [3]");
  CHECK(message_of<ShapeError>([&] { quant::matmul_integer(a, b, Tensor(), zeros({3}, kInt8)); }) ==
        "matmul_integer: the zero point of b must hold one value or one per column, got shape [3]");
  CHECK(message_of<ShapeError>([&] { quant::matmul_integer(zeros({}, kUInt8), b, Tensor(), Tensor()); }) ==
        "matmul_integer: the operands must have at least one dim, got shapes [] and [3, 4]");
  CHECK(message_of<ShapeError>([&] { quant::pack_integer_b(zeros({2, 3, 4}, kInt8)); }) ==
        "matmul_integer: a packed b must be 2-D, got shape [2, 3, 4]");
}
