// The bfloat16 GEMM (cpu::gemm_bf16: bfloat16 A and B, float32 C) against a float64
// triple loop over the same bfloat16 values, for both of its paths: the vdpbf16ps
// kernel (the avx512_bf16 level, where this CPU has it) and the widening fallback
// (any lower level). Layouts, odd sizes and depths (a k pair padded with zero),
// cache blocks, threads, alpha/beta, beta == 0 over NaN, k == 0, batches, NaN
// propagation and the documented treatment of subnormal inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"
#include "support/gemm_matrix.h"
#include "support/sanitized.h"

namespace {

using ember::BFloat16;
using ember::cpu::gemm_bf16;
using gemm_test::Layout;
using gemm_test::layout_name;
using gemm_test::make;
using gemm_test::Mat;
using gemm_test::ThreadsGuard;

// C_after = alpha A B + beta C_before within float32 summation error, and nothing
// written outside C.
void check(int64_t m, int64_t n, int64_t k, float alpha, Mat<BFloat16>& a, Mat<BFloat16>& b,
           float beta, const Mat<float>& c_before, Mat<float>& c) {
  std::vector<char> inside(c.buf.size(), 0);
  int64_t bad = 0;
  const gemm_test::RefSums ref = gemm_test::reference_sums(a, b, m, n, k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = double(alpha) * ref.at_sum(i, j);
      double mag = std::fabs(double(alpha)) * ref.at_mag(i, j);
      if (beta != 0.f) {
        const double c0 = c_before.buf[size_t(i * c.rs + j * c.cs)];
        want += double(beta) * c0;
        mag += std::fabs(double(beta) * c0);
      }
      const double got = c.at(i, j);
      const double tol = 2.0 * double(k + 2) * 0x1p-24 * mag + 1e-30;
      if (!(std::fabs(got - want) <= tol)) {
        if (bad < 5) UNSCOPED_INFO("C(" << i << "," << j << ") = " << got << ", want " << want);
        ++bad;
      }
      inside[size_t(i * c.rs + j * c.cs)] = 1;
    }
  int64_t touched = 0;
  for (size_t e = 0; e < c.buf.size(); ++e)
    if (!inside[e] && std::memcmp(&c.buf[e], &c_before.buf[e], sizeof(float)) != 0) ++touched;
  CHECK(bad == 0);
  CHECK(touched == 0);
}

void run_case(int64_t m, int64_t n, int64_t k, float alpha, float beta, Layout la, Layout lb, Layout lc,
              bool nan_c = false, uint32_t seed = 1) {
  std::mt19937 g(seed);
  Mat<BFloat16> a = make<BFloat16>(m, k, la, g), b = make<BFloat16>(k, n, lb, g);
  Mat<float> c = make<float>(m, n, lc, g);
  if (nan_c)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c.at(i, j) = std::numeric_limits<float>::quiet_NaN();
  const Mat<float> c_before = c;
  INFO("m=" << m << " n=" << n << " k=" << k << " alpha=" << alpha << " beta=" << beta << " A "
            << layout_name(la) << " B " << layout_name(lb) << " C " << layout_name(lc)
            << (nan_c ? " C=NaN" : ""));
  gemm_bf16(m, n, k, alpha, a.buf.data(), a.rs, a.cs, b.buf.data(), b.rs, b.cs, beta, c.buf.data(),
            c.rs, c.cs);
  check(m, n, k, alpha, a, b, beta, c_before, c);
}

// Runs f with each path this CPU can run: the vdpbf16ps kernel at the avx512_bf16
// level, the widening fallback at the level below it (or at generic).
template <class F>
void for_each_path(F&& f) {
  bool native = false;
  for (const char* level : {"avx512_bf16", "avx512_vnni", "generic"}) {
    if (!ember::cpu::set_isa(level)) continue;
    const std::string name = ember::cpu::gemm_bf16_kernel_name();
    if (name == "avx512_bf16") {
      if (native) continue;
      native = true;
    }
    INFO("level " << level << ", bf16 kernel " << name);
    CHECK(name == (std::string(level) == "avx512_bf16" ? "avx512_bf16" : "widen"));
    f(name);
  }
  ember::cpu::set_isa("auto");
}

const Layout kDense[] = {Layout::Row, Layout::Col};

}  // namespace

TEST_CASE("gemm_bf16: the kernel the CPU gets", "[gemm][bf16]") {
  const bool has = ember::cpu::cpu_isa() >= ember::cpu::Isa::avx512_bf16;
  CHECK(std::string(ember::cpu::gemm_bf16_kernel_name()) == (has ? "avx512_bf16" : "widen"));
}

TEST_CASE("gemm_bf16 matches a float64 reference on square and odd sizes", "[gemm][bf16]") {
  ThreadsGuard threads(2);
  for_each_path([](const std::string&) {
    for (int64_t s : {1, 2, 3, 17, 33, 65, 127})
      for (Layout la : kDense)
        for (Layout lb : kDense)
          for (Layout lc : kDense) run_case(s, s, s, 1.5f, 0.5f, la, lb, lc);
    for (Layout la : kDense)
      for (Layout lb : kDense) run_case(300, 129, 71, -0.75f, 2.f, la, lb, Layout::Row);
    // Whole 16-pair transposes and their tails, in both packed operands.
    run_case(29, 70, 66, 1.f, 0.f, Layout::Row, Layout::Col, Layout::Row);
    run_case(29, 70, 67, 1.f, 0.f, Layout::Col, Layout::Row, Layout::Row);
    run_case(300, 129, 71, 1.f, 1.f, Layout::PaddedRow, Layout::PaddedRow, Layout::PaddedRow);
    run_case(129, 300, 71, 1.f, -1.f, Layout::Strided, Layout::Strided, Layout::Strided);
    run_case(71, 300, 129, 2.f, 0.f, Layout::Strided, Layout::Col, Layout::PaddedRow);
    run_case(40, 50, 60, 1.f, 0.f, Layout::BcastRows, Layout::Row, Layout::Row);
    // A single row of A: the float kernels have a one-pass row path, this one packs.
    run_case(1, 200, 300, 1.f, 0.f, Layout::Row, Layout::Col, Layout::Row);
  });
}

TEST_CASE("gemm_bf16 across cache blocks and thread counts", "[gemm][bf16]") {
  for_each_path([](const std::string&) {
    // 1, 2 and 3 threads; 3 only under AddressSanitizer (support/sanitized.h).
    for (int threads : cache_block_test_teams()) {
      ThreadsGuard guard(threads);
      INFO("threads " << threads);
      // Depth beyond one KC block (an odd last block), rows beyond one MC block, a
      // shared packed B, and columns beyond one NC block.
      run_case(300, 600, 1201, 1.f, 0.25f, Layout::Row, Layout::Row, Layout::Row);
      run_case(300, 600, 1201, 1.f, 0.f, Layout::Col, Layout::Col, Layout::Col);
      run_case(30, 4200, 200, 1.f, 1.f, Layout::Row, Layout::Row, Layout::Row);
    }
  });
}

TEST_CASE("gemm_bf16 edge cases: beta == 0 over NaN, k == 0, empty, NaN inputs", "[gemm][bf16]") {
  ThreadsGuard threads(2);
  for_each_path([](const std::string&) {
    run_case(33, 65, 17, 1.f, 0.f, Layout::Row, Layout::Row, Layout::Row, /*nan_c=*/true);
    run_case(33, 65, 0, 1.f, 0.5f, Layout::Row, Layout::Row, Layout::Row);
    run_case(33, 65, 0, 1.f, 0.f, Layout::Row, Layout::Row, Layout::Row, /*nan_c=*/true);
    run_case(0, 65, 17, 1.f, 0.f, Layout::Row, Layout::Row, Layout::Row);
    run_case(33, 0, 17, 1.f, 0.f, Layout::Row, Layout::Row, Layout::Row);
    // A NaN in A poisons its row of C; an Inf times a finite number stays Inf.
    std::vector<BFloat16> a(20 * 30, BFloat16(1.f)), b(30 * 40, BFloat16(0.5f));
    a[3 * 30 + 7] = BFloat16(std::numeric_limits<float>::quiet_NaN());
    a[5 * 30 + 2] = BFloat16(std::numeric_limits<float>::infinity());
    std::vector<float> c(20 * 40, 0.f);
    gemm_bf16(20, 40, 30, 1.f, a.data(), 30, 1, b.data(), 40, 1, 0.f, c.data(), 40, 1);
    for (int64_t j = 0; j < 40; ++j) {
      CHECK(std::isnan(c[size_t(3 * 40 + j)]));
      CHECK(c[size_t(5 * 40 + j)] == std::numeric_limits<float>::infinity());
      CHECK(c[size_t(4 * 40 + j)] == 15.f);
    }
  });
}

TEST_CASE("gemm_bf16: subnormal inputs as documented", "[gemm][bf16]") {
  // 2^-130 is a bfloat16 subnormal; times 2^100 it is 2^-30, a normal float32.
  // vdpbf16ps reads subnormal inputs as zero; the widening path keeps them.
  const BFloat16 tiny = BFloat16(0x1p-130f), big = BFloat16(0x1p100f);
  REQUIRE(float(tiny) == 0x1p-130f);
  for_each_path([&](const std::string& name) {
    std::vector<BFloat16> a(4, tiny), b(4, big);
    float c = -1.f;
    gemm_bf16(1, 1, 4, 1.f, a.data(), 4, 1, b.data(), 1, 1, 0.f, &c, 1, 1);
    CHECK(c == (name == "avx512_bf16" ? 0.f : 0x1p-28f));
  });
}

TEST_CASE("gemm_bf16_batched matches gemm_bf16 on each matrix", "[gemm][bf16]") {
  ThreadsGuard threads(2);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  struct Shape { int64_t batch, m, n, k; bool shared_b; };
  for_each_path([&](const std::string&) {
    for (Shape s : {Shape{16, 20, 20, 20, false}, Shape{16, 7, 5, 3, true}, Shape{4, 70, 80, 90, false},
                    Shape{3, 70, 80, 91, true}}) {
      INFO("batch " << s.batch << " of " << s.m << "x" << s.n << "x" << s.k << (s.shared_b ? " shared B" : ""));
      const int64_t a_bs = s.m * s.k, b_bs = s.shared_b ? 0 : s.k * s.n, c_bs = s.m * s.n;
      std::vector<BFloat16> a(size_t(s.batch * a_bs)), b(size_t(s.shared_b ? s.k * s.n : s.batch * b_bs));
      std::vector<float> c(size_t(s.batch * c_bs));
      for (auto& v : a) v = BFloat16(d(g));
      for (auto& v : b) v = BFloat16(d(g));
      for (auto& v : c) v = d(g);
      std::vector<float> want = c;
      for (int64_t i = 0; i < s.batch; ++i)
        gemm_bf16(s.m, s.n, s.k, 1.5f, a.data() + i * a_bs, s.k, 1, b.data() + i * b_bs, s.n, 1, -1.f,
                  want.data() + i * c_bs, s.n, 1);
      ember::cpu::gemm_bf16_batched(s.batch, s.m, s.n, s.k, 1.5f, a.data(), a_bs, s.k, 1, b.data(), b_bs,
                                    s.n, 1, -1.f, c.data(), c_bs, s.n, 1);
      // The same kernel on the same blocks: the same bits.
      CHECK(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
    }
  });
}

namespace {

// out = relu?(alpha A.B + bias) as bfloat16, against the float64 sum over the same
// bfloat16 values: within the float32 summation bound plus half a bfloat16 ulp
// (2^-8 relative, and 2^-134 absolute where the result is subnormal), and nothing
// written outside out's rows.
void run_rounded_case(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, Layout la, Layout lb,
                      int64_t out_pad, bool bias, bool relu, uint32_t seed = 3) {
  std::mt19937 g(seed);
  std::vector<Mat<BFloat16>> as, bs;
  for (int64_t i = 0; i < batch; ++i) {
    as.push_back(make<BFloat16>(m, k, la, g));
    bs.push_back(make<BFloat16>(k, n, lb, g));
  }
  // One buffer per operand with matrices a whole buffer apart.
  const int64_t a_bs = int64_t(as[0].buf.size()), b_bs = int64_t(bs[0].buf.size());
  std::vector<BFloat16> a, b;
  for (int64_t i = 0; i < batch; ++i) {
    a.insert(a.end(), as[size_t(i)].buf.begin(), as[size_t(i)].buf.end());
    b.insert(b.end(), bs[size_t(i)].buf.begin(), bs[size_t(i)].buf.end());
  }
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> bias_v(static_cast<size_t>(n));
  for (float& v : bias_v) v = d(g);
  const int64_t out_rs = n + out_pad, out_bs = m * out_rs + 3;
  std::vector<BFloat16> out(size_t(batch * out_bs + 1));
  for (BFloat16& v : out) v = BFloat16::from_bits(0x7fa5);  // a NaN pattern nothing computes
  INFO("batch " << batch << " m=" << m << " n=" << n << " k=" << k << " A " << layout_name(la) << " B "
                << layout_name(lb) << " pad " << out_pad << (bias ? " bias" : "") << (relu ? " relu" : ""));
  ember::cpu::gemm_bf16_rounded(batch, m, n, k, alpha, a.data(), a_bs, as[0].rs, as[0].cs, b.data(), b_bs, bs[0].rs,
                                bs[0].cs, {out.data(), out_bs, out_rs, bias ? bias_v.data() : nullptr, relu});
  int64_t bad = 0, outside = 0;
  std::vector<char> inside(out.size(), 0);
  for (int64_t t = 0; t < batch; ++t) {
    const gemm_test::RefSums ref = gemm_test::reference_sums(as[size_t(t)], bs[size_t(t)], m, n, k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = double(alpha) * ref.at_sum(i, j) + (bias ? double(bias_v[size_t(j)]) : 0.0);
        const double mag =
            std::fabs(double(alpha)) * ref.at_mag(i, j) + (bias ? std::fabs(double(bias_v[size_t(j)])) : 0.0);
        if (relu && want < 0) want = 0;
        const size_t at = size_t(t * out_bs + i * out_rs + j);
        inside[at] = 1;
        const double got = float(out[at]);
        const double tol = 2.0 * double(k + 2) * 0x1p-24 * mag + 0x1p-8 * std::fabs(want) + 0x1p-134;
        if (!(std::fabs(got - want) <= tol) || (relu && std::signbit(got))) {
          if (bad < 5) UNSCOPED_INFO("out[" << t << "](" << i << "," << j << ") = " << got << ", want " << want);
          ++bad;
        }
      }
  }
  for (size_t e = 0; e < out.size(); ++e)
    if (!inside[e] && out[e].bits != 0x7fa5) ++outside;
  CHECK(bad == 0);
  CHECK(outside == 0);
}

}  // namespace

TEST_CASE("gemm_bf16_rounded: bfloat16 C, bias and ReLU against a float64 reference", "[gemm][bf16]") {
  for_each_path([](const std::string&) {
    // 1, 2 and 3 threads; 3 only under AddressSanitizer (support/sanitized.h).
    for (int threads : cache_block_test_teams()) {
      ThreadsGuard guard(threads);
      INFO("threads " << threads);
      for (int64_t s : {1, 17, 33, 127})
        run_rounded_case(1, s, s, s, 1.f, Layout::Row, Layout::Row, 0, false, false);
      run_rounded_case(1, 300, 129, 71, -0.75f, Layout::Col, Layout::Strided, 5, true, false);
      run_rounded_case(1, 129, 300, 70, 1.f, Layout::Row, Layout::Col, 3, true, true);
      // Deeper than one depth block: float32 partial sums, then the rounded last block.
      run_rounded_case(1, 300, 600, 1201, 1.f, Layout::Row, Layout::Row, 0, true, true);
      // Beyond one NC block of columns, and columns split over the team: each tile's
      // bias starts at its own column.
      run_rounded_case(1, 30, 4200, 2100, 0.5f, Layout::Col, Layout::Row, 1, true, false);
      run_rounded_case(1, 30, 600, 1500, 1.f, Layout::Row, Layout::Row, 0, true, true);
      run_rounded_case(1, 30, 600, 300, 1.f, Layout::Row, Layout::Col, 2, true, false);
      // Batches, one by matrices over the team and one threaded inside each product.
      run_rounded_case(16, 20, 24, 28, 1.f, Layout::Row, Layout::Row, 2, true, true);
      run_rounded_case(3, 200, 150, 1100, 2.f, Layout::Row, Layout::Col, 0, true, false);
      // k == 0: the bias, through ReLU, rounded.
      run_rounded_case(2, 33, 65, 0, 1.f, Layout::Row, Layout::Row, 1, true, true);
      run_rounded_case(1, 0, 65, 5, 1.f, Layout::Row, Layout::Row, 0, true, true);
    }
  });
}

TEST_CASE("gemm_bf16_rounded rounds exact sums once, to nearest even, keeping NaN, -0 and subnormals",
          "[gemm][bf16]") {
  ThreadsGuard threads(1);
  // Row i of A is all ones over k = 8; column j of B holds small integers summing to
  // want[j], exactly in float32, so each output is BFloat16(want[j]) exactly:
  // 257 and 259 are ties (bfloat16 steps by 2 from 256) that go to the even 256 and
  // 260; 257.5 is above the tie and goes up; -3 through ReLU is +0.
  const std::vector<float> want = {257.f, 259.f, 257.5f, 261.f, -3.f, 1.f, 255.f, 0.f};
  const int64_t n = int64_t(want.size()), k = 8;
  std::vector<BFloat16> a(2 * k, BFloat16(1.f)), b(size_t(k * n), BFloat16(0.f));
  for (int64_t j = 0; j < n; ++j) {
    b[size_t(0 * n + j)] = BFloat16(want[size_t(j)] >= 0 ? std::floor(want[size_t(j)] / 2) : want[size_t(j)]);
    b[size_t(1 * n + j)] = BFloat16(want[size_t(j)] >= 0 ? want[size_t(j)] - std::floor(want[size_t(j)] / 2) : 0.f);
  }
  for_each_path([&](const std::string&) {
    for (bool relu : {false, true}) {
      std::vector<BFloat16> out(size_t(2 * n));
      ember::cpu::gemm_bf16_rounded(1, 2, n, k, 1.f, a.data(), 0, k, 1, b.data(), 0, n, 1,
                                    {out.data(), 0, n, nullptr, relu});
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const float w = relu && want[size_t(j)] < 0 ? 0.f : want[size_t(j)];
          INFO("relu " << relu << " column " << j << " sum " << want[size_t(j)]);
          CHECK(out[size_t(i * n + j)].bits == BFloat16(w).bits);
        }
      CHECK(float(out[0]) == 256.f);
      CHECK(float(out[1]) == 260.f);
      CHECK(float(out[2]) == 258.f);
    }
    // A subnormal result (1.5 * 2^-126 - 2^-126 = 2^-127) stays, as BFloat16(float)
    // keeps it (vcvtneps2bf16 would flush it); a NaN bias gives NaN through ReLU; a
    // negative subnormal result is +0 through ReLU.
    const std::vector<BFloat16> a1 = {BFloat16(0x1.8p-63f)}, b1 = {BFloat16(0x1p-63f), BFloat16(0x1p-63f),
                                                                     BFloat16(-0x1p-63f)};
    const std::vector<float> bias = {-0x1p-126f, std::numeric_limits<float>::quiet_NaN(), 0x1p-126f};
    // A -0 sum (alpha -1 times +0) without a bias stays -0.
    {
      const std::vector<BFloat16> zeros(4, BFloat16(0.f)), ones(4, BFloat16(1.f));
      std::vector<BFloat16> out(2);
      ember::cpu::gemm_bf16_rounded(1, 1, 2, 2, -1.f, zeros.data(), 0, 2, 1, ones.data(), 0, 2, 1, {out.data(), 0, 2});
      CHECK(out[0].bits == 0x8000);
      CHECK(out[1].bits == 0x8000);
    }
    for (bool relu : {false, true}) {
      std::vector<BFloat16> out(3);
      ember::cpu::gemm_bf16_rounded(1, 1, 3, 1, 1.f, a1.data(), 0, 1, 1, b1.data(), 0, 3, 1,
                                    {out.data(), 0, 3, bias.data(), relu});
      INFO("relu " << relu);
      CHECK(float(out[0]) == 0x1p-127f);
      CHECK(std::isnan(float(out[1])));
      CHECK(out[2].bits == (relu ? 0x0000 : 0x8040));
    }
  });
}
