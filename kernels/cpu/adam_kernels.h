// The instruction-set-specific half of adam_step (optim.h) for float32: the fused
// update over a range of elements, compiled once per instruction set
// (adam_<isa>.cpp from adam_impl.h), so that its two divisions and square root run
// 16 lanes wide on AVX-512 CPUs instead of the baseline's 4. Not part of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu::adam_detail {

// Adam's hyperparameters in the compute type A, derived once per step.
template <class A>
struct AdamScalars {
  A step_size, sqrt_bc2, b1, b2, eps, wd, decay, one_minus_b1, one_minus_b2;
};

// Elements [lo, hi) of float32 arrays; vmax is used (and may be null otherwise) only
// by the amsgrad entries. range[decoupled][amsgrad].
using AdamRange = void (*)(int64_t lo, int64_t hi, float* p, const float* g, float* m, float* v, float* vmax,
                           const AdamScalars<float>& c);
struct AdamKernels {
  const char* name;
  AdamRange range[2][2];
};

// nullptr when this build cannot emit that instruction set.
const AdamKernels* adam_kernels_avx512();
const AdamKernels* adam_kernels_avx2();
const AdamKernels* adam_kernels_generic();

}  // namespace ember::cpu::adam_detail
