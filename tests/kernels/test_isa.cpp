// The instruction-set levels of the CPU kernels (kernels/cpu/isa.h): set_isa picks
// each level this CPU runs, every family reports the level's table, and the families
// whose results must not depend on the level (pooling, half conversions, quantize)
// give the same bits at every level.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/half.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/pool2d.h"
#include "kernels/cpu/quantize_int8.h"
#include "kernels/cpu/softmax.h"
#include "kernels/isa_guard.h"

using namespace ember;

namespace {

// The levels this CPU runs, lowest first.
std::vector<const char*> levels_here() {
  std::vector<const char*> names;
  for (const char* n : {"generic", "avx2", "avx512", "avx512_vnni", "avx512_bf16"})
    if (cpu::set_isa(n)) names.push_back(n);
  cpu::set_isa("auto");
  return names;
}

using testing::IsaGuard;

// What the families compute at the active level, as bytes.
std::vector<uint8_t> run_families() {
  std::mt19937 g(3);
  std::normal_distribution<float> d(0.f, 4.f);
  std::vector<float> x(2 * 3 * 12 * 12);
  for (float& v : x) v = d(g);
  x[7] = NAN;
  std::vector<uint8_t> out;
  auto append = [&](const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + bytes);
  };
  // 2x2 pooling, max (with indices) and average, float and double.
  Pool2dShape s;
  s.n = 2, s.c = 3, s.h = 12, s.w = 12, s.kh = 2, s.kw = 2, s.stride_h = 2, s.stride_w = 2;
  pool2d_set_output_size(s);
  std::vector<float> y(size_t(s.n * s.c * s.h_out * s.w_out));
  std::vector<int64_t> ind(y.size());
  cpu::max_pool2d_forward(DType::Float32, s, x.data(), y.data(), ind.data());
  append(y.data(), y.size() * 4);
  append(ind.data(), ind.size() * 8);
  cpu::avg_pool2d_forward(DType::Float32, s, x.data(), y.data());
  append(y.data(), y.size() * 4);
  std::vector<double> xd(x.begin(), x.end()), yd(y.size());
  cpu::max_pool2d_forward(DType::Float64, s, xd.data(), yd.data(), ind.data());
  append(yd.data(), yd.size() * 8);
  cpu::avg_pool2d_forward(DType::Float64, s, xd.data(), yd.data());
  append(yd.data(), yd.size() * 8);
  // Half conversions both ways, with tails shorter than a vector.
  std::vector<Half> h(x.size() - 3);
  std::vector<BFloat16> b(h.size());
  std::vector<float> back(h.size());
  cpu::store_from_float(x.data(), h.data(), int64_t(h.size()));
  cpu::load_to_float(h.data(), back.data(), int64_t(h.size()));
  append(back.data(), back.size() * 4);
  cpu::store_from_float(x.data(), b.data(), int64_t(b.size()));
  cpu::load_to_float(b.data(), back.data(), int64_t(b.size()));
  append(back.data(), back.size() * 4);
  // Widen-and-add (the half sums) onto float values: one rounding per element.
  std::vector<float> acc(x.begin(), x.begin() + int64_t(h.size()));
  cpu::add_to_float(h.data(), acc.data(), int64_t(h.size()));
  cpu::add_to_float(b.data(), acc.data(), int64_t(b.size()));
  append(acc.data(), acc.size() * 4);
  // Quantize a row and scan min/max (finite part only).
  std::vector<uint8_t> q(x.size() - 8);
  cpu::quantize(x.data() + 8, 1, int64_t(q.size()), 0, 0.3f, 128, 0, 255, DType::UInt8, q.data(), 0,
                int64_t(q.size()), 0);
  append(q.data(), q.size());
  const cpu::MinMax mm = cpu::min_max(x.data() + 8, int64_t(x.size()) - 8);
  append(&mm.min, 4);
  append(&mm.max, 4);
  return out;
}

}  // namespace

TEST_CASE("set_isa picks each level this CPU runs, and only those", "[kernels][isa]") {
  IsaGuard guard;
  const auto levels = levels_here();
  REQUIRE(!levels.empty());
  CHECK(std::string(levels[0]) == "generic");
  CHECK(std::string(levels.back()) == cpu::isa_name(cpu::cpu_isa()));
  CHECK_FALSE(cpu::set_isa("sse9"));
  CHECK_FALSE(cpu::set_isa(nullptr));
  REQUIRE(cpu::set_isa("generic"));
  CHECK(cpu::active_isa() == cpu::Isa::generic);
  // Every family now reports its generic table.
  CHECK(std::string(cpu::gemm_kernel_name()) == "generic");
  CHECK(std::string(cpu::half_conversion_path()) == "generic");
  REQUIRE(cpu::set_isa("auto"));
  CHECK(cpu::active_isa() == cpu::cpu_isa());
  // A family without code for a level uses the widest it has below it.
  if (cpu::cpu_isa() >= cpu::Isa::avx512)
    CHECK(std::string(cpu::gemm_kernel_name()) == "avx512");
}

TEST_CASE("pooling, half conversions, widen-and-add and quantize give the same bits at every level", "[kernels][isa]") {
  IsaGuard guard;
  REQUIRE(cpu::set_isa("generic"));
  const std::vector<uint8_t> ref = run_families();
  for (const char* level : levels_here()) {
    INFO("level " << level);
    REQUIRE(cpu::set_isa(level));
    CHECK(run_families() == ref);
  }
}

TEST_CASE("softmax agrees at every level", "[kernels][isa]") {
  IsaGuard guard;
  std::vector<float> x(3 * 37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i)) * 10);
  std::vector<float> ref(x.size()), y(x.size());
  REQUIRE(cpu::set_isa("generic"));
  cpu::softmax(DType::Float32, 3, 37, 1, x.data(), ref.data(), false);
  for (const char* level : levels_here()) {
    INFO("level " << level);
    REQUIRE(cpu::set_isa(level));
    cpu::softmax(DType::Float32, 3, 37, 1, x.data(), y.data(), false);
    for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(ref[i]).epsilon(1e-6));
  }
}
