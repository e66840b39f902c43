// The elementwise suite: memory-bound ops on 16M float32 elements (64 MiB per
// tensor, far past the caches) in GB/s against the copy bandwidth. `a + b` counts
// 12 bytes per element (two reads, one write); in place and `out=` forms show the
// cost of allocation separately; ReLU's backward counts its two reads and a write. exp, gelu, tanh, sigmoid and erf show where
// arithmetic starts to cost (kernels/cpu/vmath.h; inputs in [0, 1)). An Adam step
// on one 16M-element parameter reads the parameter, its gradient and both moments
// and writes three of them back: 28 bytes per element, two divisions and a square
// root each.
#include <string>

#include "bench/suite_memory_bound.h"
#include "ember.h"
#include "nn/optim/optimizer.h"

namespace ember::bench {
namespace {

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  constexpr int64_t n = int64_t{16} << 20;
  manual_seed(1);
  Tensor a = rand({n}), b = rand({n}), out = empty({n});
  const double f32 = 4.0 * n;
  report_bandwidth(report, opt, "elementwise", "add a+b 16M f32", 3 * f32, [&] { Tensor c = a + b; });
  report_bandwidth(report, opt, "elementwise", "add out= 16M f32", 3 * f32,
                   [&] { binary_out(BinaryOp::add, out, a, b); });
  report_bandwidth(report, opt, "elementwise", "add_ in place 16M f32", 3 * f32, [&] { out.add_(b); });
  report_bandwidth(report, opt, "elementwise", "mul a*2 16M f32", 2 * f32, [&] { Tensor c = a * 2; });
  report_bandwidth(report, opt, "elementwise", "add broadcast [4096,4096]+[4096]", 2 * f32,
                   [&] { Tensor c = a.view({4096, 4096}) + b.slice(0, 0, 4096); });
  report_bandwidth(report, opt, "elementwise", "relu 16M f32", 2 * f32, [&] { Tensor c = a.relu(); });
  // ReLU's backward (one pass: the gradient where y > 0): two reads and a write,
  // with half the outputs masked to zero.
  Tensor y = a - 0.5;
  report_bandwidth(report, opt, "elementwise", "relu backward 16M f32", 3 * f32,
                   [&] { Tensor c = relu_backward(b, y); });
  report_bandwidth(report, opt, "elementwise", "exp 16M f32", 2 * f32, [&] { Tensor c = a.exp(); });
  report_bandwidth(report, opt, "elementwise", "gelu 16M f32", 2 * f32, [&] { Tensor c = a.gelu(); });
  report_bandwidth(report, opt, "elementwise", "tanh 16M f32", 2 * f32, [&] { Tensor c = a.tanh(); });
  report_bandwidth(report, opt, "elementwise", "sigmoid 16M f32", 2 * f32, [&] { Tensor c = a.sigmoid(); });
  report_bandwidth(report, opt, "elementwise", "erf 16M f32", 2 * f32, [&] { Tensor c = a.erf(); });
  Tensor t = a.view({4096, 4096}).t();
  report_bandwidth(report, opt, "elementwise", "contiguous() of a transpose 16M f32", 2 * f32,
                   [&] { Tensor c = t.contiguous(); });
  Tensor h = a.to(kFloat16), hb = b.to(kFloat16);
  report_bandwidth(report, opt, "elementwise", "add a+b 16M f16", 3 * 2.0 * n, [&] { Tensor c = h + hb; });
  report_bandwidth(report, opt, "elementwise", "to(float16) 16M f32", 6.0 * n, [&] { Tensor c = a.to(kFloat16); });
  // Half precision (docs/amp.md): vector conversions around float32 math.
  report_bandwidth(report, opt, "elementwise", "to(float32) 16M f16", 6.0 * n, [&] { Tensor c = h.to(kFloat32); });
  report_bandwidth(report, opt, "elementwise", "relu 16M f16", 4.0 * n, [&] { Tensor c = h.relu(); });
  report_bandwidth(report, opt, "elementwise", "exp 16M f16", 4.0 * n, [&] { Tensor c = h.exp(); });
  Tensor g = a.to(kBFloat16), gb = b.to(kBFloat16);
  report_bandwidth(report, opt, "elementwise", "add a+b 16M bf16", 3 * 2.0 * n, [&] { Tensor c = g + gb; });
  Tensor yb = y.to(kBFloat16);
  report_bandwidth(report, opt, "elementwise", "relu backward 16M bf16", 3 * 2.0 * n,
                   [&] { Tensor c = relu_backward(gb, yb); });
  report_bandwidth(report, opt, "elementwise", "to(bfloat16) 16M f32", 6.0 * n, [&] { Tensor c = a.to(kBFloat16); });
  Tensor param = a.clone();
  param.set_grad(b - 0.5);
  nn::optim::Adam adam({param}, 1e-3);
  adam.step();  // the moment buffers exist before the timing
  report_bandwidth(report, opt, "elementwise", "adam step 16M f32", 7 * f32, [&] { adam.step(); });
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(elementwise, ember::bench::run);
