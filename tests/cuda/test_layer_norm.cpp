// layer_norm on CUDA against the CPU: forward and all three gradients for every
// floating dtype, rows short and long (one block per row either way), with and
// without weight and bias, and a 0-row input.
#include "cuda/both.h"

using namespace ember;
using cuda_test::Both;
using ref::Layout;

TEST_CASE("layer_norm forward and backward on CUDA match the CPU", "[cuda][layer_norm]") {
  std::mt19937_64 rng(5201);
  struct Case {
    Shape shape, normalized;
    bool affine;
  };
  const std::vector<Case> cases = {{{64, 768}, {768}, true}, {{7, 3, 5}, {3, 5}, true}, {{300, 10}, {10}, false},
                                   {{2, 5000}, {5000}, true}, {{0, 8}, {8}, true}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases) {
      INFO(ref::str(dt) << ref::str(c.shape) << (c.affine ? " affine" : ""));
      Both x = cuda_test::random_both(c.shape, dt, Layout::contiguous, rng, -2, 2);
      Both w = cuda_test::random_both(c.normalized, dt, Layout::contiguous, rng, 0.5, 2);
      Both b = cuda_test::random_both(c.normalized, dt, Layout::contiguous, rng, -1, 1);
      const Both g = cuda_test::random_both(c.shape, dt, Layout::contiguous, rng, -1, 1);
      for (Both* t : {&x, &w, &b}) {
        t->cpu.requires_grad_();
        t->gpu.requires_grad_();
      }
      Tensor y[2];
      for (bool gpu : {false, true}) {
        y[gpu] = layer_norm(gpu ? x.gpu : x.cpu, c.normalized, c.affine ? (gpu ? w.gpu : w.cpu) : Tensor(),
                            c.affine ? (gpu ? b.gpu : b.cpu) : Tensor());
        y[gpu].backward(gpu ? g.gpu : g.cpu);
      }
      // Sums over a row (and, for weight and bias, over rows) run in another order on
      // the GPU: judged relative to the largest entry.
      auto rel = [&](const Tensor& t) {
        ref::Tol tol = cuda_test::tol_for(dt);
        if (t.numel() > 0) tol.atol = 4 * tol.rtol * t.abs().amax().to(kFloat64).item<double>();
        return tol;
      };
      CHECK_SAME(y[1], y[0], rel(y[0]));
      CHECK_SAME(x.gpu.grad(), x.cpu.grad(), rel(x.cpu.grad()));
      if (c.affine) {
        CHECK_SAME(w.gpu.grad(), w.cpu.grad(), rel(w.cpu.grad()));
        CHECK_SAME(b.gpu.grad(), b.cpu.grad(), rel(b.cpu.grad()));
      }
    }
}
