// pad on CUDA against the CPU: every mode, every dtype (a copy, so exact),
// non-contiguous inputs, crops, a 4-D image-sized case, and the backward (folds of
// take_backward, the same order on both devices).
#include "cuda/both.h"

using namespace ember;
using cuda_test::Both;
using ref::Layout;

TEST_CASE("pad forward and backward on CUDA match the CPU", "[cuda][pad]") {
  std::mt19937_64 rng(6201);
  struct Case {
    Shape shape;
    Layout layout;
    std::vector<Pair> pads;
  };
  const std::vector<Case> cases = {
      {{5}, Layout::contiguous, {{2, 3}}},
      {{3, 4}, Layout::transposed, {{1, -1}, {2, 3}}},
      {{2, 3, 4}, Layout::permuted, {{0, 1}, {2, 2}, {1, -2}}},
      {{8, 16, 32, 32}, Layout::contiguous, {{0, 0}, {0, 0}, {3, 3}, {1, 2}}},
      {{4}, Layout::contiguous, {{-2, -2}}},
  };
  for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate})
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kInt32, kInt64, kBool})
      for (const Case& c : cases) {
        INFO(static_cast<int>(mode) << " " << ref::str(dt) << ref::str(c.shape));
        const Both x = cuda_test::random_both(c.shape, dt, c.layout, rng, -8, 8);
        const Scalar v = is_floating(dt) ? Scalar(-1.5) : Scalar(int64_t{1});
        Tensor y_cpu = pad(x.cpu, c.pads, mode, v), y_gpu = pad(x.gpu, c.pads, mode, v);
        CHECK_SAME(y_gpu, y_cpu, cuda_test::kExact);
        if (!is_floating(dt)) continue;
        const Both g = cuda_test::random_both(y_cpu.shape(), dt, Layout::contiguous, rng, -1, 1);
        CHECK_SAME(pad_backward(g.gpu, c.shape, c.pads, mode), pad_backward(g.cpu, c.shape, c.pads, mode),
                   cuda_test::kExact);
      }
}
