// Every rung of the CUDA GEMM ladder (kernels/ladder/gemm_ladder_cuda.h, table
// kCudaRungs) against a float64 triple loop on the CPU, on sizes that are no
// multiple of any tile (1x1x1, 7x13x5, 67x65x129) and on one that spans several
// block tiles with remainders in every dimension. Inputs are drawn in the rung's
// dtype, so the reference multiplies exactly the values the kernel saw; the bound is
// the cuda suite's relative Frobenius norm bound of that dtype (docs/numerics.md).
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/both.h"
#include "kernels/cuda/runtime.h"
#include "kernels/ladder/gemm_ladder_cuda.h"
#include "support/reference.h"

using namespace ember;
using cuda_test::kCuda;

namespace {

struct Dims {
  int64_t m, n, k;
};

double bound(DType dt) { return dt == DType::Float32 ? 1e-5 : 1e-3; }

}  // namespace

TEST_CASE("every CUDA GEMM ladder rung matches a float64 triple loop", "[cuda][gemm][ladder]") {
  const std::vector<Dims> sizes = {{1, 1, 1}, {7, 13, 5}, {67, 65, 129}, {5, 1, 300}, {300, 530, 261}};
  std::mt19937_64 rng(23);
  for (const Dims& d : sizes) {
    for (const auto& rung : ladder::kCudaRungs) {
      INFO("rung '" << rung.name << "', m=" << d.m << " n=" << d.n << " k=" << d.k);
      const std::vector<double> av = ref::random_values(d.m * d.k, rung.dtype, rng, -1, 1);
      const std::vector<double> bv = ref::random_values(d.k * d.n, rung.dtype, rng, -1, 1);
      const Tensor a = ref::make({d.m, d.k}, rung.dtype, av).to(kCuda);
      const Tensor b = ref::make({d.k, d.n}, rung.dtype, bv).to(kCuda);
      // C starts as NaN: a rung must overwrite it.
      Tensor c = full({d.m, d.n}, NAN, TensorOptions(rung.dtype, kCuda));
      rung.fn(d.m, d.n, d.k, a.data_ptr(), b.data_ptr(), c.data_ptr(), cuda::stream());
      const ref::Array got = ref::read(c.cpu());

      double num = 0, den = 0;
      for (int64_t i = 0; i < d.m; ++i)
        for (int64_t j = 0; j < d.n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < d.k; ++p) want += av[size_t(i * d.k + p)] * bv[size_t(p * d.n + j)];
          const double diff = got.v[size_t(i * d.n + j)] - want;
          num += std::isnan(diff) ? INFINITY : diff * diff;
          den += want * want;
        }
      const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
      CHECK(err <= bound(rung.dtype));
    }
  }
}

TEST_CASE("the CUDA GEMM ladder ends with the production tensor-core kernels", "[cuda][gemm][ladder]") {
  REQUIRE(std::size(ladder::kCudaRungs) >= 3);
  CHECK(ladder::kCudaRungs[std::size(ladder::kCudaRungs) - 2].fn == &ladder::cuda_gemm_production_mma);
  CHECK(ladder::kCudaRungs[std::size(ladder::kCudaRungs) - 1].fn == &ladder::cuda_gemm_production_f16);
  std::set<std::string> names;
  for (const auto& rung : ladder::kCudaRungs) CHECK(names.insert(rung.name).second);
}
