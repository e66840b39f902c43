// contiguous() of transposed matrices (elementwise.cpp's copy_transposed and the
// block kernels of kernels/cpu/transpose.h) against a loop over the input's indices,
// bit for bit, at every instruction-set level this CPU runs: float32 and int32 (the
// block kernel) with edges past the last whole 16 x 16 block, a batch of matrices, a
// sliced input, an output of 16 MiB or more (streaming stores), and float64 and
// float16 (the portable tiles).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/isa_guard.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

using namespace ember;

namespace {

// x: a contiguous [B, R, C] tensor (B may be 1), narrowed to its first `cols`
// columns. Checks y = x.transpose(1, 2).contiguous() element by element through
// the raw bytes, so every dtype compares exactly.
void check(DType dt, int64_t B, int64_t R, int64_t C, int64_t cols) {
  const Tensor full = arange(0, B * R * C).reshape({B, R, C}).to(dt);
  const Tensor x = full.narrow(2, 0, cols);
  const Tensor y = x.transpose(1, 2).contiguous();
  REQUIRE(y.is_contiguous());
  REQUIRE(y.sizes() == Shape{B, cols, R});
  const int64_t es = static_cast<int64_t>(dtype_size(dt));
  const char* in = static_cast<const char*>(full.data_ptr());
  const char* out = static_cast<const char*>(y.data_ptr());
  int64_t bad = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < R; ++i)
        bad += std::memcmp(out + ((b * cols + j) * R + i) * es, in + ((b * R + i) * C + j) * es, es) != 0;
  INFO(dtype_name(dt) << " [" << B << ", " << R << ", " << C << "] narrowed to " << cols << " columns");
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("contiguous() of a transpose copies every element at every level", "[kernels][transpose]") {
  testing::IsaGuard guard;
  for (const char* level : {"generic", "avx2", "avx512"}) {
    if (!cpu::set_isa(level)) continue;
    for (int t : {1, 2}) {
      set_num_threads(t);
      INFO("level " << level << ", " << t << " threads");
      for (DType dt : {kFloat32, kInt32}) {
        check(dt, 1, 16, 16, 16);
        check(dt, 1, 37, 70, 70);    // edges: 5 rows and 6 columns past the blocks
        check(dt, 1, 130, 15, 15);   // fewer than 16 columns: the tiles
        check(dt, 3, 48, 33, 33);    // a batch of three
        check(dt, 1, 64, 100, 75);   // a sliced input (rows 100 apart, 75 used)
      }
      check(kFloat64, 2, 40, 35, 35);
      check(kFloat16, 1, 70, 50, 50);
    }
    set_num_threads(2);
    check(kFloat32, 1, 1040, 4096, 4096);  // 16.25 MiB out: streaming stores
  }
}
