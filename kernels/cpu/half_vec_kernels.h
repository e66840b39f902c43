// The instruction-set-specific half of half_vec.h, one table per instruction set:
// half_vec_<isa>.cpp compiles half_vec_impl.h (and, where the set has them, the
// float16 conversion instructions) for its set. Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/base/half.h"
#include "kernels/cpu/half_vec.h"

namespace ember::cpu::half_vec_detail {

struct HalfVecKernels {
  const char* name;
  void (*load_half)(const Half* src, float* dst, int64_t n);
  void (*store_half)(const float* src, Half* dst, int64_t n);
  void (*load_bf16)(const BFloat16* src, float* dst, int64_t n);
  void (*store_bf16)(const float* src, BFloat16* dst, int64_t n);
  void (*add_half)(const Half* src, float* acc, int64_t n);  // acc[i] += float(src[i])
  void (*add_bf16)(const BFloat16* src, float* acc, int64_t n);
  // out = a op b for op add, sub, mul or div (half_arith of half_vec.h), fused;
  // nullptr in the tables that leave it to the float blocks.
  HalfArith<Half> arith_half;
  HalfArith<BFloat16> arith_bf16;
};

// nullptr when this build cannot emit that instruction set.
const HalfVecKernels* half_vec_kernels_avx512();
const HalfVecKernels* half_vec_kernels_avx2();
const HalfVecKernels* half_vec_kernels_generic();

}  // namespace ember::cpu::half_vec_detail
