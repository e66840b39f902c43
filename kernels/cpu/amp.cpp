// CPU kernels of the gradient scaler (see amp.h). The inf/NaN test looks at the
// exponent bits (all ones means inf or NaN in every float format), which is
// branch-free, so the loop vectorizes: the check and the multiply share one pass.
#include "kernels/cpu/amp.h"

#include <omp.h>

#include <cmath>
#include <cstring>

#include "kernels/base/half.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/half_vec.h"

namespace ember::cpu {
namespace {

// One float32 gradient element: x *= inv; returns 1 when its exponent bits are all
// ones (inf or NaN).
[[gnu::always_inline]] inline unsigned unscale_one(float& x, float inv) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  x *= inv;
  return (bits & 0x7f800000u) == 0x7f800000u;
}

// The loops below enter OpenMP only when the gradient is big enough for a team: a
// region whose `if` clause is false still costs about 1.6 us in libgomp, and a
// network's small gradients (the seed net has ten) would pay it each.
bool unscale_f32(float* p, int64_t n, float inv) {
  unsigned bad = 0;
  if (n >= kParallelGrain && get_num_threads() > 1) {
#pragma omp parallel for simd num_threads(get_num_threads()) reduction(| : bad) schedule(static)
    for (int64_t i = 0; i < n; ++i) bad |= unscale_one(p[i], inv);
  } else {
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; ++i) bad |= unscale_one(p[i], inv);
  }
  return bad != 0;
}

// 16-bit types: the check reads the bits; the multiply goes through float in blocks
// converted by the vector helpers of half_vec.h.
template <class H>
unsigned unscale_block_16(H* p, int64_t len, float inv) {
  constexpr uint16_t exp_mask = std::is_same_v<H, Half> ? 0x7c00u : 0x7f80u;
  unsigned bad = 0;
  float buf[kHalfBlock];
  for (int64_t i = 0; i < len; ++i) bad |= (p[i].bits & exp_mask) == exp_mask;
  load_to_float(p, buf, len);
  for (int64_t i = 0; i < len; ++i) buf[i] *= inv;
  store_from_float(buf, p, len);
  return bad;
}

template <class H>
bool unscale_16(H* p, int64_t n, float inv) {
  unsigned bad = 0;
  const int64_t blocks = (n + kHalfBlock - 1) / kHalfBlock;
  auto block = [&](int64_t b) {
    const int64_t i0 = b * kHalfBlock;
    return unscale_block_16(p + i0, std::min<int64_t>(kHalfBlock, n - i0), inv);
  };
  if (n >= kParallelGrain && get_num_threads() > 1) {
#pragma omp parallel for num_threads(get_num_threads()) reduction(| : bad) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) bad |= block(b);
  } else {
    for (int64_t b = 0; b < blocks; ++b) bad |= block(b);
  }
  return bad != 0;
}

}  // namespace

void amp_unscale_grads(const GradBuffer* grads, int count, const float* scale, float* found_inf) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  bool bad = false;
  for (int i = 0; i < count; ++i) {
    const GradBuffer& g = grads[i];
    switch (g.dtype) {
      case DType::Float32: bad |= unscale_f32(static_cast<float*>(g.data), g.numel, inv); break;
      case DType::Float16: bad |= unscale_16(static_cast<Half*>(g.data), g.numel, inv); break;
      case DType::BFloat16: bad |= unscale_16(static_cast<BFloat16*>(g.data), g.numel, inv); break;
      case DType::Float64: case DType::Int8: case DType::UInt8: case DType::Int32: case DType::Int64:
      case DType::Bool:
        break;  // the front-end only passes the three types above
    }
  }
  if (bad) *found_inf = 1.0f;
}

void amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf, double growth_factor,
                      double backoff_factor, int64_t growth_interval) {
  if (*found_inf != 0.0f) {
    *scale = static_cast<float>(*scale * backoff_factor);
    *growth_tracker = 0;
    return;
  }
  const int64_t successful = static_cast<int64_t>(*growth_tracker) + 1;
  if (successful == growth_interval) {
    const float grown = static_cast<float>(*scale * growth_factor);
    if (std::isfinite(grown)) *scale = grown;  // never grow past float32's range to inf
    *growth_tracker = 0;
  } else {
    *growth_tracker = static_cast<int32_t>(successful);
  }
}

}  // namespace ember::cpu
