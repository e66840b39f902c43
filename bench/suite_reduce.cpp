// The reduce suite: reductions of 16M float32 elements in GB/s (bytes read) against
// the copy bandwidth: a full sum, rows and columns of a 4096x4096 matrix, the max
// with indices along rows and down columns, var down columns, and the mean of 14x14
// planes (a global average pool); float16 sums and bfloat16 var and max down columns.
#include "bench/suite_memory_bound.h"
#include "ember.h"

namespace ember::bench {
namespace {

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  constexpr int64_t n = int64_t{16} << 20;
  manual_seed(2);
  Tensor a = rand({n});
  Tensor m = a.view({4096, 4096});
  const double bytes = 4.0 * n;
  report_bandwidth(report, opt, "reduce", "sum all 16M f32", bytes, [&] { Tensor s = a.sum(); });
  report_bandwidth(report, opt, "reduce", "sum dim 1 [4096,4096]", bytes, [&] { Tensor s = m.sum({1}); });
  report_bandwidth(report, opt, "reduce", "sum dim 0 [4096,4096]", bytes, [&] { Tensor s = m.sum({0}); });
  report_bandwidth(report, opt, "reduce", "mean all 16M f32", bytes, [&] { Tensor s = a.mean(); });
  // var reads its input once (kernels/cpu/reduce_runs.h), so it is counted as one read.
  report_bandwidth(report, opt, "reduce", "var all 16M f32", bytes, [&] { Tensor s = a.var(); });
  report_bandwidth(report, opt, "reduce", "max dim 1 with indices", bytes, [&] { auto r = m.max(1); });
  // Down the columns (the column schedule, kernels/cpu/reduce_columns.h): over the
  // batch dim, say.
  report_bandwidth(report, opt, "reduce", "var dim 0 [4096,4096]", bytes, [&] { Tensor s = m.var({0}); });
  report_bandwidth(report, opt, "reduce", "max dim 0 with indices", bytes, [&] { auto r = m.max(0); });
  // A global average pool: 196-value rows, each output's own (conv_block.onnx's at
  // batch 1000).
  Tensor planes = rand({1000, 64, 14, 14});
  report_bandwidth(report, opt, "reduce", "mean of 14x14 planes [1000,64,14,14]", 4.0 * double(planes.numel()),
                   [&] { Tensor s = planes.mean({2, 3}); });
  report_bandwidth(report, opt, "reduce", "argmax all 16M f32", bytes, [&] { Tensor s = a.argmax(); });
  Tensor ah = a.to(kFloat16), mh = m.to(kFloat16);  // half precision: half the bytes
  report_bandwidth(report, opt, "reduce", "sum all 16M f16", bytes / 2, [&] { Tensor s = ah.sum(); });
  report_bandwidth(report, opt, "reduce", "sum dim 0 [4096,4096] f16", bytes / 2, [&] { Tensor s = mh.sum({0}); });
  // bfloat16 (autocast's CPU dtype) down the columns: the 16-bit rows widened as the
  // AVX-512 loops load them.
  Tensor mb = m.to(kBFloat16);
  report_bandwidth(report, opt, "reduce", "var dim 0 [4096,4096] bf16", bytes / 2, [&] { Tensor s = mb.var({0}); });
  report_bandwidth(report, opt, "reduce", "max dim 0 with indices bf16", bytes / 2, [&] { auto r = mb.max(0); });
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(reduce, ember::bench::run);
