// QuantizeLinear and requantization (see quantize_linear.h): [0, n) split into
// chunks for the thread team and each chunk into runs that share a parameter;
// each run is one call of quantize_int8's row loops, compiled per instruction
// set (the rounding there is the add-and-subtract of 1.5 * 2^23, exact once the
// value is clamped to the code range, not a libm call per element).
#include "kernels/cpu/quantize_linear.h"

#include <algorithm>

#include "kernels/base/parallel.h"
#include "kernels/cpu/quantize_int8.h"

namespace ember::cpu {

namespace {

// Splits [0, n) into chunks for the thread team and each chunk into runs of one
// parameter; run(begin, end, p) does one run.
template <class Run>
void for_each_run(int64_t n, ParamLayout params, Run run) {
  constexpr int64_t kChunk = 1 << 16;
  parallel_rows((n + kChunk - 1) / kChunk, n >= kParallelGrain, [&](int64_t c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    if (params.count == 1) return run(begin, end, int64_t(0));
    for (int64_t i = begin; i < end;) {
      const int64_t stop = std::min(end, (i / params.inner + 1) * params.inner);
      run(i, stop, params.of(i));
      i = stop;
    }
  });
}

// The code range of int8 or uint8.
int32_t code_min(DType dt) { return dt == DType::Int8 ? -128 : 0; }
int32_t code_max(DType dt) { return dt == DType::Int8 ? 127 : 255; }

}  // namespace

void quantize_linear(const float* x, int64_t n, const float* scale, const int32_t* zero_point, ParamLayout params,
                     DType out_dt, void* out) {
  auto* o = static_cast<char*>(out);  // one byte per code
  for_each_run(n, params, [&](int64_t begin, int64_t end, int64_t p) {
    quantize_divide(x + begin, end - begin, scale[p], zero_point[p], code_min(out_dt), code_max(out_dt), out_dt,
                    o + begin);
  });
}

void requantize(const int32_t* acc, int64_t n, const float* multiplier, const int32_t* zero_point,
                ParamLayout params, DType out_dt, void* out) {
  auto* o = static_cast<char*>(out);
  for_each_run(n, params, [&](int64_t begin, int64_t end, int64_t p) {
    requantize_run(acc + begin, end - begin, multiplier[p], zero_point[p], code_min(out_dt), code_max(out_dt), out_dt,
                   o + begin);
  });
}

}  // namespace ember::cpu
