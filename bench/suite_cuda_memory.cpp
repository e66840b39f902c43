// The cuda_memory suite: memory-bound ops through the tensor front-ends on CUDA
// tensors of 256 MiB each (far past the 60 MB L2), in GB/s against a 256 MiB
// device-to-device copy. Bytes counted are the fewest the op must move: a + b
// reads two tensors and writes one; a conversion reads the source and writes the
// destination; a reduction reads its input. Inputs are random (never zeros), and
// the allocating forms are timed: the caching allocator hands the freed result
// back on the next call, as it does in a training loop.
#include <string>

#include "bench/cuda_floors.h"
#include "bench/cuda_harness.h"
#include "ember.h"

namespace ember::bench {
namespace {

constexpr int64_t kBytes = int64_t{256} << 20;

void run(const Options&, Report& report) {
  const Device gpu("cuda");
  manual_seed(11);
  const char* S = "cuda_memory";

  {
    Record r;  // the floor itself, as a row: ember/floor reads 1 by construction
    r.suite = S;
    r.case_name = "copy D2D 256 MiB (floor)";
    r.unit = "GB/s";
    r.ember = r.floor.emplace(measured_cuda_copy_gbs());
    report.add(std::move(r));
  }

  // float32: 64M elements, 256 MiB per tensor.
  const int64_t n32 = kBytes / 4;
  cuda_case(report, "cuda_memory float32", [&] {
    Tensor a = rand({n32}, {kFloat32, gpu}), b = rand({n32}, {kFloat32, gpu});
    const double t = double(kBytes);
    check_close(report, "add a+b f32 vs CPU", a + b, a.cpu() + b.cpu(), 0);
    report_cuda_bandwidth(report, S, "add a+b 64M f32", 3 * t, [&] { Tensor c = a + b; });
    report_cuda_bandwidth(report, S, "exp 64M f32", 2 * t, [&] { Tensor c = a.exp(); });
    Tensor centred = a - 0.5;  // half the elements negative, so relu has work to do
    report_cuda_bandwidth(report, S, "relu 64M f32", 2 * t, [&] { Tensor c = centred.relu(); });
    report_cuda_bandwidth(report, S, "to(float16) 64M f32", 1.5 * t, [&] { Tensor c = a.to(kFloat16); });
    report_cuda_bandwidth(report, S, "to(bfloat16) 64M f32", 1.5 * t, [&] { Tensor c = a.to(kBFloat16); });

    Tensor m = a.view({8192, 8192});
    // float32 sums of 8192 to 64M positive terms: any sane order stays far under
    // 1e-4 of the largest sum (a sequential sum of 8192 drifts ~1e-5).
    check_close(report, "sum all f32 vs CPU float64", a.sum(), a.cpu().to(kFloat64).sum(), 1e-4);
    check_close(report, "sum dim 1 f32 vs CPU float64", m.sum({1}), m.cpu().to(kFloat64).sum({1}), 1e-4);
    check_close(report, "sum dim 0 f32 vs CPU float64", m.sum({0}), m.cpu().to(kFloat64).sum({0}), 1e-4);
    report_cuda_bandwidth(report, S, "sum all 64M f32", t, [&] { Tensor s = a.sum(); });
    report_cuda_bandwidth(report, S, "sum dim 1 (last) [8192,8192] f32", t, [&] { Tensor s = m.sum({1}); });
    report_cuda_bandwidth(report, S, "sum dim 0 (first) [8192,8192] f32", t, [&] { Tensor s = m.sum({0}); });
  });

  // The half types: 128M elements, 256 MiB per tensor.
  for (DType dt : {kFloat16, kBFloat16}) {
    const std::string tag = dt == kFloat16 ? "f16" : "bf16";
    cuda_case(report, "cuda_memory " + tag, [&] {
      const int64_t n16 = kBytes / 2;
      Tensor a = rand({n16}, {dt, gpu}), b = rand({n16}, {dt, gpu});
      const double t = double(kBytes);
      // The CPU reference adds in float32 and rounds once to the half type; a kernel
      // adding in the half type's own hardware rounds once too, and the two can
      // differ by one unit in the last place in rare cases: allow one. Checked on
      // the last 16M elements (the tail, where a grid-size error would show).
      const int64_t len = int64_t{16} << 20, off = n16 - len;
      Tensor ta = a.narrow(0, off, len).cpu(), tb = b.narrow(0, off, len).cpu();
      check_close(report, "add a+b " + tag + " vs CPU (last 16M)", (a + b).narrow(0, off, len),
                  (ta.to(kFloat32) + tb.to(kFloat32)).to(dt), dt == kFloat16 ? 1e-3 : 8e-3);
      report_cuda_bandwidth(report, S, "add a+b 128M " + tag, 3 * t, [&] { Tensor c = a + b; });
      report_cuda_bandwidth(report, S, "to(float32) 128M " + tag, 3 * t, [&] { Tensor c = a.to(kFloat32); });
      report_cuda_bandwidth(report, S, "sum all 128M " + tag, t, [&] { Tensor s = a.sum(); });
    });
  }
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(cuda_memory, ember::bench::run);
