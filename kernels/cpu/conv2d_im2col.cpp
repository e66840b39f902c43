// The convolution of any stride as GEMMs over the im2col matrix (see conv2d.cpp for
// the formulas): each image's col[K, P] is built in the caller's workspace, then
// cpu::gemm runs one product per group on the calling thread.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"

namespace ember::cpu::conv2d_detail {
namespace {

template <class T>
void gemm_forward(const Args<T>& a, int64_t lo, int64_t hi, T* col) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  for (int64_t i = lo; i < hi; ++i) {
    T* yi = a.out + i * d.y_img;
    im2col(s, a.x + i * d.x_img, col);
    if (a.bias)
      for (int64_t co = 0; co < s.c_out; ++co)
        std::fill(yi + co * d.P, yi + (co + 1) * d.P, a.bias[co]);
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.cog, d.P, d.K, T(1), a.w + g * d.cog * d.K, d.K, 1, col + g * d.K * d.P, d.P, 1,
           a.bias ? T(1) : T(0), yi + g * d.cog * d.P, d.P, 1);
  }
}

template <class T>
void gemm_backward_input(const Args<T>& a, int64_t lo, int64_t hi, T* col) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  for (int64_t i = lo; i < hi; ++i) {
    // W_g^T is read through swapped strides: row k of it is column k of W_g.
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.K, d.P, d.cog, T(1), a.w + g * d.cog * d.K, 1, d.K,
           a.gy + i * d.y_img + g * d.cog * d.P, d.P, 1, T(0), col + g * d.K * d.P, d.P, 1);
    T* gxi = a.out + i * d.x_img;
    std::fill(gxi, gxi + d.x_img, T(0));
    col2im(s, col, gxi);
  }
}

template <class T>
void gemm_backward_weight(const Args<T>& a, int64_t lo, int64_t hi, T* col, T* pw, T* pb, int64_t, int64_t) {
  const Conv2dShape& s = *a.s;
  const Conv2dDims& d = *a.d;
  std::fill(pw, pw + s.c_out * d.K, T(0));
  if (pb) std::fill(pb, pb + s.c_out, T(0));
  for (int64_t i = lo; i < hi; ++i) {
    const T* gyi = a.gy + i * d.y_img;
    im2col(s, a.x + i * d.x_img, col);
    // col^T is read through swapped strides (b_rs = 1, b_cs = P).
    for (int64_t g = 0; g < d.G; ++g)
      gemm(d.cog, d.K, d.P, T(1), gyi + g * d.cog * d.P, d.P, 1, col + g * d.K * d.P, 1, d.P,
           T(1), pw + g * d.cog * d.K, d.K, 1);
    if (pb)
      for (int64_t co = 0; co < s.c_out; ++co)
        for (int64_t p = 0; p < d.P; ++p) pb[co] += gyi[co * d.P + p];
  }
}

template <class T>
int64_t col_scratch(const Args<T>& a) {
  return a.d->CK * a.d->P;
}

template <class T>
int64_t one_unit(const Args<T>&) {
  return 1;
}

}  // namespace

template <class T>
const Kernels<T>& im2col_kernels() {
  static constexpr Kernels<T> k{gemm_forward<T>, gemm_backward_input<T>, gemm_backward_weight<T>,
                                col_scratch<T>,  col_scratch<T>,         col_scratch<T>,
                                one_unit<T>};
  return k;
}

template const Kernels<float>& im2col_kernels<float>();
template const Kernels<double>& im2col_kernels<double>();

}  // namespace ember::cpu::conv2d_detail
