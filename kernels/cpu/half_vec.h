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

// out[i] = a[i * a_step] op b[i * b_step] for i in [0, n) on contiguous half runs
// (each step 0 or 1, not both 0: a step of 0 broadcasts one value), op one of add,
// sub, mul, div: widened, computed in float32 and rounded once, like the float
// blocks, but in one pass with no block in between. Same bits as the blocks, except
// which operand's payload NaN op NaN keeps. Returns false, doing nothing, where the active instruction
// set has no such loop (the caller then uses the blocks).
enum class HalfArithOp : unsigned char { add, sub, mul, div };
template <class T>
using HalfArith = void (*)(HalfArithOp op, const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n);
bool half_arith(HalfArithOp op, const Half* a, int64_t a_step, const Half* b, int64_t b_step, Half* out, int64_t n);
bool half_arith(HalfArithOp op, const BFloat16* a, int64_t a_step, const BFloat16* b, int64_t b_step, BFloat16* out,
                int64_t n);

// Which table the conversions use now: "avx512", "avx2" or "generic" (for the
// benchmark notes).
const char* half_conversion_path();

}  // namespace ember::cpu
