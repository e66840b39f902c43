// The contiguous float32 loops of vmath.h, written once and included by each
// vmath_<isa>.cpp inside its instruction-set region, so the compiler vectorizes the
// branch-free scalar functions of vec_math.h / vec_erf.h at that set's width. kFma
// is true where the set has fused multiply-add. Anonymous namespace: see isa.h.
#pragma once

namespace ember::cpu::vmath_detail {
namespace {

template <bool kFma>
void exp_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_fast<kFma>(x[i]);
}

template <bool kFma>
void erf_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = erf_fast<kFma>(x[i]);
}

template <bool kFma>
void tanh_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = tanh_fast<kFma>(x[i]);
}

template <bool kFma>
void sigmoid_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoid_fast<kFma>(x[i]);
}

template <bool kFma>
void gelu_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_fast<kFma>(x[i]);
}

template <bool kFma>
constexpr VmathKernels table(const char* name) {
  return {name, exp_f32<kFma>, erf_f32<kFma>, tanh_f32<kFma>, sigmoid_f32<kFma>, gelu_f32<kFma>};
}

}  // namespace
}  // namespace ember::cpu::vmath_detail
