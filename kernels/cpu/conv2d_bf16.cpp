// bfloat16 convolution on the bfloat16 GEMM (cpu::gemm_bf16, vdpbf16ps): the im2col
// formulas of conv2d.cpp with bfloat16 operands and float32 results, each output
// rounded to bfloat16 once at the end.
//   forward          y32[c_out, P] = bias + W . col(x)         -> y
//   input gradient   dcol32[K, P]  = W^T . gy, col2im in float32 -> grad_x
//   weight gradient  dW32 += gy . col(x)^T over the images      -> grad_weight
// Images of the forward and input-gradient passes are spread over threads (each
// image's outputs are its own); the weight gradient sums fixed image ranges into
// float32 partials added in range order, so its bits do not depend on the thread
// count. conv2d_bf16_native() says when this beats widening to the float32 kernels.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <string_view>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/scratch.h"

namespace ember::cpu {
namespace conv2d_detail {
namespace {

thread_local Scratch bf16_col, bf16_acc;

// Ranges the weight gradient's batch is cut into: fixed by the batch size alone.
constexpr int64_t kWeightRanges = 8;

// Runs body(i) for every image, over threads when there are several images and
// enough work; the first exception is rethrown after the region.
template <class Body>
void for_images(int64_t n, double macs_per_image, Body&& body) {
  const bool team = n > 1 && !omp_in_parallel() && get_num_threads() > 1 && double(n) * macs_per_image >= 2e5;
  if (!team) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for num_threads(get_num_threads()) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(ember_conv2d_bf16_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void forward(const Conv2dShape& s, const BFloat16* x, const BFloat16* w, const BFloat16* bias, BFloat16* y) {
  const Conv2dDims d(s);
  for_images(s.n, double(s.c_out) * double(d.K) * double(d.P), [&](int64_t i) {
    BFloat16* col = static_cast<BFloat16*>(bf16_col.get(sizeof(BFloat16) * size_t(d.CK * d.P)));
    float* y32 = static_cast<float*>(bf16_acc.get(sizeof(float) * size_t(d.y_img)));
    im2col(s, x + i * d.x_img, col);
    for (int64_t co = 0; co < s.c_out; ++co)
      std::fill(y32 + co * d.P, y32 + (co + 1) * d.P, bias ? float(bias[co]) : 0.f);
    for (int64_t g = 0; g < d.G; ++g)
      gemm_bf16(d.cog, d.P, d.K, 1.f, w + g * d.cog * d.K, d.K, 1, col + g * d.K * d.P, d.P, 1, 1.f,
                y32 + g * d.cog * d.P, d.P, 1);
    store_from_float(y32, y + i * d.y_img, d.y_img);
  });
}

void backward_input(const Conv2dShape& s, const BFloat16* gy, const BFloat16* w, BFloat16* gx) {
  const Conv2dDims d(s);
  for_images(s.n, double(s.c_out) * double(d.K) * double(d.P), [&](int64_t i) {
    float* buf = static_cast<float*>(bf16_acc.get(sizeof(float) * size_t(d.CK * d.P + d.x_img)));
    float* dcol = buf;
    float* gx32 = buf + d.CK * d.P;
    // W_g^T is read through swapped strides: row k of it is column k of W_g.
    for (int64_t g = 0; g < d.G; ++g)
      gemm_bf16(d.K, d.P, d.cog, 1.f, w + g * d.cog * d.K, 1, d.K, gy + i * d.y_img + g * d.cog * d.P, d.P, 1, 0.f,
                dcol + g * d.K * d.P, d.P, 1);
    std::fill(gx32, gx32 + d.x_img, 0.f);
    col2im(s, dcol, gx32);
    store_from_float(gx32, gx + i * d.x_img, d.x_img);
  });
}

void backward_weight(const Conv2dShape& s, const BFloat16* gy, const BFloat16* x, BFloat16* gw, BFloat16* gb) {
  const Conv2dDims d(s);
  const int64_t w_elems = s.c_out * d.K;
  const int64_t part = round_up(w_elems + s.c_out, 16);
  const int64_t ranges = std::clamp<int64_t>(s.n, 1, kWeightRanges);
  std::vector<float> partials(size_t(part * ranges), 0.f);
  for_images(ranges, double(s.c_out) * double(d.K) * double(d.P) * double(s.n) / double(ranges), [&](int64_t r) {
    float* pw = partials.data() + r * part;
    float* pb = pw + w_elems;
    BFloat16* col = static_cast<BFloat16*>(bf16_col.get(sizeof(BFloat16) * size_t(d.CK * d.P)));
    float* gy32 = static_cast<float*>(bf16_acc.get(sizeof(float) * size_t(d.P)));
    for (int64_t i = s.n * r / ranges; i < s.n * (r + 1) / ranges; ++i) {
      const BFloat16* gyi = gy + i * d.y_img;
      im2col(s, x + i * d.x_img, col);
      // col^T is read through swapped strides (b_rs = 1, b_cs = P).
      for (int64_t g = 0; g < d.G; ++g)
        gemm_bf16(d.cog, d.K, d.P, 1.f, gyi + g * d.cog * d.P, d.P, 1, col + g * d.K * d.P, 1, d.P, 1.f,
                  pw + g * d.cog * d.K, d.K, 1);
      if (gb)
        for (int64_t co = 0; co < s.c_out; ++co) {
          load_to_float(gyi + co * d.P, gy32, d.P);
          float sum = 0.f;
          for (int64_t p = 0; p < d.P; ++p) sum += gy32[p];
          pb[co] += sum;
        }
    }
  });
  for (int64_t r = 1; r < ranges; ++r)
    for (int64_t j = 0; j < w_elems + s.c_out; ++j) partials[size_t(j)] += partials[size_t(r * part + j)];
  store_from_float(partials.data(), gw, w_elems);
  if (gb) store_from_float(partials.data() + w_elems, gb, s.c_out);
}

}  // namespace
}  // namespace conv2d_detail

bool conv2d_bf16_native(const Conv2dShape& s) {
  if (std::string_view(gemm_bf16_kernel_name()) != "avx512_bf16") return false;
  const Conv2dDims d(s);
  // Each GEMM needs a few full 14-row tiles and a depth worth packing in pairs; the
  // small layers of the FashionMNIST net (6 and 12 output channels) stay on the
  // float32 direct kernels.
  return d.cog >= 16 && d.K >= 32 && d.P >= 16;
}

void conv2d_bf16_forward(const Conv2dShape& s, const BFloat16* x, const BFloat16* weight, const BFloat16* bias,
                         BFloat16* y) {
  if (s.n <= 0 || s.c_out <= 0 || s.h_out * s.w_out <= 0) return;
  conv2d_detail::forward(s, x, weight, bias, y);
}

void conv2d_bf16_backward_input(const Conv2dShape& s, const BFloat16* grad_y, const BFloat16* weight,
                                BFloat16* grad_x) {
  const Conv2dDims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  if (s.c_out <= 0 || d.P <= 0) {
    std::fill(grad_x, grad_x + s.n * d.x_img, BFloat16(0.f));
    return;
  }
  conv2d_detail::backward_input(s, grad_y, weight, grad_x);
}

void conv2d_bf16_backward_weight(const Conv2dShape& s, const BFloat16* grad_y, const BFloat16* x,
                                 BFloat16* grad_weight, BFloat16* grad_bias) {
  const Conv2dDims d(s);
  if (s.n <= 0 || d.P <= 0 || s.c_out <= 0) {
    std::fill(grad_weight, grad_weight + std::max<int64_t>(s.c_out * d.K, 0), BFloat16(0.f));
    if (grad_bias) std::fill(grad_bias, grad_bias + std::max<int64_t>(s.c_out, 0), BFloat16(0.f));
    return;
  }
  conv2d_detail::backward_weight(s, grad_y, x, grad_weight, grad_bias);
}

}  // namespace ember::cpu
