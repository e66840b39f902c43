// The int8 GEMM (kernels/cpu/gemm_int8): every kernel this CPU can run, exact against
// a plain int32 loop on random data that includes the extreme codes (255 x -128, the
// largest products) and sizes that are not multiples of the tile (k % 4, n % 32,
// rows % 10, with every row-block height 1..10 of the VNNI kernel); and the fused
// epilogue against a float64 evaluation of its formula.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/isa.h"

namespace {

using namespace ember;

struct Problem {
  int64_t m, n, k;
  std::vector<uint8_t> a;  // m x lda, lda = padded k
  std::vector<int8_t> w;   // n x k
  int64_t lda;
};

// Values drawn so that a quarter are the extreme codes, the rest uniform.
Problem random_problem(int64_t m, int64_t n, int64_t k, std::mt19937& g, bool saturate_all = false) {
  Problem p{m, n, k, {}, {}, cpu::int8_padded_k(k) + 4};  // a wider stride than needed, to test lda
  std::uniform_int_distribution<int> ua(0, 255), uw(-128, 127), pick(0, 3);
  p.a.resize(size_t(m * p.lda));
  for (auto& v : p.a) v = uint8_t(saturate_all || pick(g) == 0 ? 255 : ua(g));
  p.w.resize(size_t(n * k));
  for (auto& v : p.w) v = int8_t(saturate_all || pick(g) == 0 ? -128 : uw(g));
  return p;
}

struct Packed {
  std::vector<int8_t> storage;
  int8_t* data;
  std::vector<int32_t> row_sums;
};

Packed pack(const Problem& p) {
  Packed pk;
  pk.storage.resize(size_t(cpu::packed_int8_weights_bytes(p.n, p.k) + 64));
  // The kernels load panels with aligned vector loads.
  auto addr = reinterpret_cast<uintptr_t>(pk.storage.data());
  pk.data = pk.storage.data() + ((64 - addr % 64) % 64);
  pk.row_sums.resize(size_t(p.n));
  cpu::pack_int8_weights(p.n, p.k, p.w.data(), p.k, pk.data, pk.row_sums.data());
  return pk;
}

int64_t dot(const Problem& p, int64_t i, int64_t j) {
  int64_t s = 0;
  for (int64_t q = 0; q < p.k; ++q) s += int64_t(p.a[size_t(i * p.lda + q)]) * p.w[size_t(j * p.k + q)];
  return s;
}

std::vector<const char*> kernels_here() {
  std::vector<const char*> names;
  // The instruction-set level that selects each kernel.
  for (const char* n : {"generic", "avx512_vnni"})
    if (cpu::set_isa(n)) names.push_back(n);
  cpu::set_isa("auto");
  return names;
}

struct KernelGuard {
  ~KernelGuard() { cpu::set_isa("auto"); }
};

}  // namespace

TEST_CASE("int8 gemm: the kernel choice", "[quant][gemm_int8]") {
  const auto names = kernels_here();
  REQUIRE(!names.empty());
  CHECK(std::string(names[0]) == "generic");
  CHECK(std::string(cpu::gemm_int8_kernel_name()) ==
        (cpu::cpu_isa() >= cpu::Isa::avx512_vnni ? "vnni512" : "generic"));
}

TEST_CASE("int8 gemm: exact int32 sums against a plain loop", "[quant][gemm_int8]") {
  KernelGuard guard;
  std::mt19937 g(7);
  const std::vector<std::array<int64_t, 3>> sizes = {
      {1, 1, 1},   {1, 10, 784}, {3, 33, 5},   {12, 32, 64}, {13, 31, 7},    {25, 70, 130},
      {64, 96, 257}, {1, 100, 3}, {7, 1, 1001}, {40, 65, 0}, {130, 40, 9}, {2, 3, 4},
      {4, 40, 21},  {5, 33, 66}};  // with the rest, the VNNI kernel runs blocks of 1, 2, ... 10 rows
  for (const char* name : kernels_here()) {
    REQUIRE(cpu::set_isa(name));
    for (const auto& [m, n, k] : sizes) {
      INFO("kernel " << name << ", m " << m << " n " << n << " k " << k);
      const Problem p = random_problem(m, n, k, g);
      const Packed pk = pack(p);
      std::vector<int32_t> c(size_t(m * (n + 3)), -7);  // ldc > n: the gap must stay untouched
      cpu::gemm_int8_s32(m, n, k, p.a.data(), p.lda, pk.data, c.data(), n + 3);
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) wrong += c[size_t(i * (n + 3) + j)] != dot(p, i, j);
        for (int64_t j = n; j < n + 3; ++j) wrong += c[size_t(i * (n + 3) + j)] != -7;
      }
      CHECK(wrong == 0);
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t q = 0; q < k; ++q) s += p.w[size_t(j * k + q)];
        CHECK(pk.row_sums[size_t(j)] == s);
      }
    }
  }
}

TEST_CASE("int8 gemm: all-extreme codes over the longest exact depth stay exact", "[quant][gemm_int8]") {
  KernelGuard guard;
  std::mt19937 g(1);
  // 255 * -128 * 65536 = -2^31 + 2^23: the most negative sum the kernels promise to hold.
  for (const char* name : kernels_here()) {
    REQUIRE(cpu::set_isa(name));
    INFO("kernel " << name);
    const Problem p = random_problem(2, 17, 65536, g, true);
    const Packed pk = pack(p);
    std::vector<int32_t> c(size_t(2 * 17));
    cpu::gemm_int8_s32(2, 17, p.k, p.a.data(), p.lda, pk.data, c.data(), 17);
    for (int32_t v : c) CHECK(v == -255 * 128 * 65536);
  }
}

TEST_CASE("int8 gemm: the fused epilogue against float64", "[quant][gemm_int8]") {
  KernelGuard guard;
  std::mt19937 g(3);
  std::uniform_real_distribution<float> us(0.001f, 0.05f), ub(-2.0f, 2.0f);
  for (const char* name : kernels_here()) {
    REQUIRE(cpu::set_isa(name));
    for (bool per_channel : {true, false})
      for (bool with_bias : {true, false}) {
        const int64_t m = 19, n = 45, k = 203;
        INFO("kernel " << name << ", per_channel " << per_channel << ", bias " << with_bias);
        const Problem p = random_problem(m, n, k, g);
        const Packed pk = pack(p);
        std::vector<float> scales(per_channel ? size_t(n) : 1u), bias(static_cast<size_t>(n));
        for (auto& s : scales) s = us(g);
        for (auto& b : bias) b = ub(g);
        cpu::Int8Epilogue ep;
        ep.a_scale = 0.0173f;
        ep.a_zero_point = 131;
        ep.w_row_sums = pk.row_sums.data();
        ep.w_scales = scales.data();
        ep.per_channel = per_channel;
        ep.bias = with_bias ? bias.data() : nullptr;
        std::vector<float> c(size_t(m * n));
        cpu::gemm_int8(m, n, k, p.a.data(), p.lda, pk.data, ep, c.data(), n);
        double worst = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0, mag = 0;
            for (int64_t q = 0; q < k; ++q) {
              const double t = (double(p.a[size_t(i * p.lda + q)]) - ep.a_zero_point) * p.w[size_t(j * k + q)];
              s += t;
              mag += std::abs(t);
            }
            const double scale = double(ep.a_scale) * scales[size_t(per_channel ? j : 0)];
            const double want = s * scale + (with_bias ? bias[size_t(j)] : 0.0);
            // float32 rounding of the int32 sum, the scale product and the bias add.
            const double tol = 4e-7 * (mag * scale + std::abs(want)) + 1e-7;
            worst = std::max(worst, std::abs(c[size_t(i * n + j)] - want) / tol);
          }
        CHECK(worst <= 1.0);
      }
  }
}
