// The cuda_softmax suite: softmax over the last dim through the tensor front-end on
// CUDA, in GB/s (one read and one write of the tensor) against the device-to-device
// copy: long rows ([4096, 4096]) and short ones ([65536, 128], where a warp per row
// or several rows per block decide the speed), in float32 and float16. Each case is
// first checked against the CPU's float32 softmax of the same (upcast) input.
// These tensors (32-64 MiB) come near the 60 MB L2, so the timed calls rotate over
// four inputs: each call reads an input the previous three calls did not touch.
#include <string>
#include <vector>

#include "bench/cuda_harness.h"
#include "ember.h"

namespace ember::bench {
namespace {

void run(const Options&, Report& report) {
  const Device gpu("cuda");
  manual_seed(12);
  struct Case {
    int64_t rows, cols;
  };
  for (const Case c : {Case{4096, 4096}, Case{65536, 128}}) {
    for (DType dt : {kFloat32, kFloat16}) {
      const std::string name = "softmax [" + std::to_string(c.rows) + "," + std::to_string(c.cols) + "] " +
                               (dt == kFloat32 ? "f32" : "f16");
      cuda_case(report, "cuda_softmax " + name, [&] {
        // randn * 4: rows with a spread of several units, so the max subtraction matters.
        std::vector<Tensor> xs;
        for (int i = 0; i < 4; ++i) xs.push_back((randn({c.rows, c.cols}, {kFloat32, gpu}) * 4).to(dt));
        const Tensor& x = xs[0];
        Tensor want = x.cpu().to(kFloat32).softmax(1);
        // float32 carries ~1e-7 rounding; float16 output rounds each probability to
        // 11 bits (relative 5e-4 of the largest).
        check_close(report, name + " vs CPU f32", x.softmax(1), want, dt == kFloat32 ? 1e-5 : 2e-3);
        const double bytes = 2.0 * double(x.numel()) * (dt == kFloat32 ? 4 : 2);
        size_t next = 0;
        report_cuda_bandwidth(report, "cuda_softmax", name + " dim 1", bytes,
                              [&] { Tensor y = xs[next++ % xs.size()].softmax(1); });
      });
    }
  }
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(cuda_softmax, ember::bench::run);
