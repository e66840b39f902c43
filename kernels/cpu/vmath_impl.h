// The contiguous float32 loops of vmath.h, written once and included by each
// vmath_<isa>.cpp inside its instruction-set region, so the compiler vectorizes the
// branch-free scalar functions of vec_math.h / vec_erf.h at that set's width. kFma
// is true where the set has fused multiply-add. Anonymous namespace: see isa.h.
#pragma once

namespace ember::cpu::vmath_detail {
namespace {

// One contiguous loop per function: F is a compile-time constant, so each
// instance inlines its function and vectorizes like a hand-written loop.
template <float (*F)(float)>
void map_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = F(x[i]);
}

template <bool kFma>
constexpr VmathKernels table(const char* name) {
  return {name, map_f32<exp_fast<kFma>>, map_f32<erf_fast<kFma>>, map_f32<tanh_fast<kFma>>,
          map_f32<sigmoid_fast<kFma>>, map_f32<gelu_fast<kFma>>, map_f32<exp_fast<kFma>>};
}

}  // namespace
}  // namespace ember::cpu::vmath_detail
