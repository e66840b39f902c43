// Quantize/dequantize loops (see quantize_int8.h). Rounding uses the float "magic
// number" 1.5 * 2^23: adding it leaves no bits below the units, so the sum is
// rounded half-to-even by the FPU's default mode, and subtracting it gives
// round(v) as a float. Unlike std::nearbyint it vectorizes on baseline x86-64, and
// it is exact for |v| < 2^22, which the clamp before it guarantees.
#include "kernels/cpu/quantize_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/quantize_int8_kernels.h"

namespace ember::cpu {
namespace {

const quantize_detail::QuantizeKernels& kernels() {
  using namespace quantize_detail;
  static const PerIsa<QuantizeKernels> tables(
      quantize_kernels_generic(), quantize_kernels_avx2(),
      quantize_kernels_avx512(), nullptr);
  return tables.pick();
}

}  // namespace

MinMax min_max(const float* x, int64_t n) {
  if (n <= 0) return {};
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks == 1 || omp_in_parallel()) return kernels().min_max(x, n);
  std::vector<MinMax> part(static_cast<size_t>(chunks));
#pragma omp parallel for num_threads(get_num_threads()) schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    part[size_t(c)] = kernels().min_max(x + c * kChunk, std::min(kChunk, n - c * kChunk));
  MinMax r = part[0];
  for (const MinMax& p : part) {
    r.min = std::min(r.min, p.min);
    r.max = std::max(r.max, p.max);
    r.finite = r.finite && p.finite;
  }
  return r;
}

void quantize_divide(const float* x, int64_t n, float scale, int32_t zero_point, int32_t qmin, int32_t qmax,
                     DType out_dt, void* out) {
  if (out_dt == DType::UInt8) kernels().divide_row_u8(x, n, scale, zero_point, qmin, qmax, static_cast<uint8_t*>(out));
  else if (out_dt == DType::Int8) kernels().divide_row_s8(x, n, scale, zero_point, qmin, qmax, static_cast<int8_t*>(out));
}

void requantize_run(const int32_t* acc, int64_t n, float multiplier, int32_t zero_point, int32_t qmin, int32_t qmax,
                    DType out_dt, void* out) {
  if (out_dt == DType::UInt8)
    kernels().requantize_row_u8(acc, n, multiplier, zero_point, qmin, qmax, static_cast<uint8_t*>(out));
  else if (out_dt == DType::Int8)
    kernels().requantize_row_s8(acc, n, multiplier, zero_point, qmin, qmax, static_cast<int8_t*>(out));
}

void quantize(const float* x, int64_t rows, int64_t cols, int64_t x_rs, float inv_scale, int32_t zero_point,
              int32_t qmin, int32_t qmax, DType out_dt, void* out, int64_t out_rs, int64_t padded_cols, int32_t pad) {
  if (out_dt != DType::Int8 && out_dt != DType::UInt8) return;  // the front-ends admit only these two
  const bool u8 = out_dt == DType::UInt8;
  // parallel_rows: a batch-1 call enters no OpenMP region (a false `if` clause
  // still cost about 1.6 us in libgomp).
  parallel_rows(rows, rows * cols >= kParallelGrain && rows > 1 && !omp_in_parallel(), [&](int64_t r) {
    const float* xr = x + r * x_rs;
    if (u8) {
      uint8_t* o = static_cast<uint8_t*>(out) + r * out_rs;
      kernels().row_u8(xr, cols, inv_scale, zero_point, qmin, qmax, o);
      for (int64_t j = cols; j < padded_cols; ++j) o[j] = uint8_t(pad);
    } else {
      int8_t* o = static_cast<int8_t*>(out) + r * out_rs;
      kernels().row_s8(xr, cols, inv_scale, zero_point, qmin, qmax, o);
      for (int64_t j = cols; j < padded_cols; ++j) o[j] = int8_t(pad);
    }
  });
}

void dequantize(const void* q, DType q_dt, int64_t n, float scale, int32_t zero_point, float* out) {
  auto run = [&](const auto* p) {
    parallel_rows(n, n >= kParallelGrain, [&](int64_t i) { out[i] = scale * float(int32_t(p[i]) - zero_point); });
  };
  switch (q_dt) {
    case DType::Int8: return run(static_cast<const int8_t*>(q));
    case DType::UInt8: return run(static_cast<const uint8_t*>(q));
    default: return;
  }
}

}  // namespace ember::cpu
