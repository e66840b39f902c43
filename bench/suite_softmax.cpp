// The softmax suite: softmax and log_softmax over rows, in GB/s (one read, one
// write) against the copy bandwidth: long rows (4096x4096), classifier-sized rows
// (65536x10, a batch of logits; log_softmax too, whose log sums take a vector log)
// and a softmax over a non-last dim.
#include "bench/suite_memory_bound.h"
#include "ember.h"

namespace ember::bench {
namespace {

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  manual_seed(3);
  Tensor big = randn({4096, 4096}), logits = randn({65536, 10}), cols = randn({64, 1024, 256});
  const double b1 = 8.0 * big.numel(), b2 = 8.0 * logits.numel(), b3 = 8.0 * cols.numel();
  report_bandwidth(report, opt, "softmax", "softmax [4096,4096] dim 1", b1, [&] { Tensor y = big.softmax(1); });
  report_bandwidth(report, opt, "softmax", "log_softmax [4096,4096] dim 1", b1,
                   [&] { Tensor y = big.log_softmax(1); });
  report_bandwidth(report, opt, "softmax", "softmax [65536,10] dim 1", b2, [&] { Tensor y = logits.softmax(1); });
  report_bandwidth(report, opt, "softmax", "log_softmax [65536,10] dim 1", b2,
                   [&] { Tensor y = logits.log_softmax(1); });
  Tensor big_h = big.to(kFloat16);
  report_bandwidth(report, opt, "softmax", "softmax [4096,4096] dim 1 f16", b1 / 2, [&] { Tensor y = big_h.softmax(1); });
  report_bandwidth(report, opt, "softmax", "softmax [64,1024,256] dim 1", b3, [&] { Tensor y = cols.softmax(1); });
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(softmax, ember::bench::run);
