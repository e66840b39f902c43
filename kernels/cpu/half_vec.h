// Vectorized conversions between the 16-bit float types and float32, for the CPU
// loops that compute half-precision data in float32 (elementwise, reductions,
// softmax, the gradient unscale). Converting one element at a time through
// half.h's portable code runs at about 1 GB/s; these use the F16C / AVX-512
// instructions (vcvtph2ps, vcvtps2ph) for float16, chosen once at run time, and
// plain shifts, which the compiler vectorizes, for bfloat16. Results are bit for bit
// those of half.h (round to nearest even; NaN, Inf and subnormals kept).
#pragma once

#include <cstdint>

#include "kernels/base/half.h"

namespace ember::cpu {

// Loops convert at most this many elements at a time into a float buffer on the stack.
inline constexpr int64_t kHalfBlock = 256;

void load_to_float(const Half* src, float* dst, int64_t n);
void load_to_float(const BFloat16* src, float* dst, int64_t n);
void store_from_float(const float* src, Half* dst, int64_t n);
void store_from_float(const float* src, BFloat16* dst, int64_t n);

// acc[i] += float(src[i]) for i in [0, n): the widening and the add in one pass, for
// sums of half data (a column sum adds whole rows; a full sum adds blocks into
// lanes).
void add_to_float(const Half* src, float* acc, int64_t n);
void add_to_float(const BFloat16* src, float* acc, int64_t n);

// Which table the conversions use now: "avx512", "avx2" or "generic" (for the
// benchmark notes).
const char* half_conversion_path();

}  // namespace ember::cpu
