// The float32 transcendentals of the elementwise ops (exp, erf, tanh, sigmoid,
// gelu) over contiguous runs, one copy per instruction set (vmath_<isa>.cpp compiles
// vmath_impl.h for its set); vmath.cpp picks one at run time. The math itself is
// kernels/base/vec_math.h and vec_erf.h. Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/base/ops.def.h"

namespace ember::cpu {
namespace vmath_detail {

// y[i] = f(x[i]) for i in [0, n); y may be x.
using UnaryF32 = void (*)(const float* x, float* y, int64_t n);

// y[i] = f(x[i]) on the 16-bit patterns of float16 or bfloat16 values: 16 at a time
// widened, computed and rounded back in registers. The block path (widen a block
// into a float buffer, run the float32 kernel, narrow it) makes two more passes
// through L1, which held the float16 exp to 0.54 of the copy floor. Same widening,
// same 16-lane functions and same rounding: the block path's bits.
using UnaryHalfBits = void (*)(const uint16_t* x, uint16_t* y, int64_t n);
struct HalfBitsKernels {
  UnaryHalfBits exp = nullptr, erf = nullptr, tanh = nullptr, sigmoid = nullptr, gelu = nullptr;
};

struct VmathKernels {
  const char* name;
  UnaryF32 exp, erf, tanh, sigmoid, gelu;
  // exp for values that will be rounded to float16 or bfloat16: relative error below
  // 1e-5 instead of 1 ulp of float32 (the AVX-512 table's, exp16_half; on the block
  // path it made float16 runs 1.3x faster, bfloat16 1.15x; the other tables use their
  // exp).
  UnaryF32 exp_half;
  // The one-pass half kernels; all nullptr in tables without them (the generic and
  // AVX2 ones), whose half runs take the block path.
  HalfBitsKernels f16 = {}, bf16 = {};
};

// nullptr when this build cannot emit that instruction set.
const VmathKernels* vmath_kernels_avx512();
const VmathKernels* vmath_kernels_avx2();
const VmathKernels* vmath_kernels_generic();

}  // namespace vmath_detail

// The table of the active instruction set (isa.h).
const vmath_detail::VmathKernels& vmath();

// The active table's contiguous float32 kernel for `op`, or nullptr when the op has
// none (it then runs its scalar functor).
vmath_detail::UnaryF32 vmath_for(UnaryOp op);

// The kernel for `op` on float32 blocks widened from float16 or bfloat16 and rounded
// back: vmath_for's, except exp_half for exp. Contiguous and strided half runs both
// use it, so a half exp has the same bits in every layout.
vmath_detail::UnaryF32 vmath_half_for(UnaryOp op);

// The active table's one-pass kernel for `op` on contiguous float16 (bfloat16 when
// `bfloat16`) runs, or nullptr (the caller takes the block path with
// vmath_half_for's kernel, which gives the same bits).
vmath_detail::UnaryHalfBits vmath_half_bits_for(UnaryOp op, bool bfloat16);

}  // namespace ember::cpu
