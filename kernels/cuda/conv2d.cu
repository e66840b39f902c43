// Native 2-D convolution: im2col + GEMM, the algorithm of kernels/cpu/conv2d.cpp's
// general path. With K = (c_in/groups)*kh*kw, P = h_out*w_out and CK = c_in*kh*kw, an
// image's column matrix col[CK][P] holds at (ci,ky,kx), p the input pixel that tap
// meets at output pixel p (zero in the padding); per image and group g
//   forward          y_g[cog][P]  = W_g[cog][K] . col_g[K][P]          (+ bias)
//   input gradient   dcol_g[K][P] = W_g^T . gy_g, then col2im
//   weight gradient  dW_g[cog][K] = sum over images of gy_g . col_g^T
// The column matrix of a whole batch can be large, so images go in chunks whose
// columns fit kMaxColumnBytes of scratch memory.
//
// col2im is written as a gather: one thread per input pixel sums the column entries
// that came from it (at most kh*kw of them), so no atomics, and the result does not
// depend on thread timing. For the weight gradient the chunk's columns are laid out
// [CK][images][P] and grad_y is copied to [c_out][images][P], so that the sum over the
// chunk's images is part of one GEMM's k (= images * P), batched over the groups;
// chunks after the first add with beta = 1.
//
// Also the two small kernels of the cuDNN path's half-type bias (conv2d_widen,
// conv2d_add_bias_round), since cudnn_conv.cpp is host code.
#include <algorithm>
#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

constexpr int64_t kMaxColumnBytes = int64_t(256) << 20;

// Columns of images [0, nb) of x: col[b][row][p] (rows_outer false) or
// col[row][b][p] (rows_outer true), row = (ci*kh + ky)*kw + kx.
template <class T>
__global__ void im2col_kernel(Conv2dShape s, int64_t nb, bool rows_outer, const T* __restrict__ x,
                              T* __restrict__ col) {
  const int64_t P = s.h_out * s.w_out, CK = s.c_in * s.kh * s.kw, total = nb * CK * P;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i % P, r = i / P;
    const int64_t row = rows_outer ? r / nb : r % CK, b = rows_outer ? r % nb : r / CK;
    const int64_t kx = row % s.kw, ky = (row / s.kw) % s.kh, ci = row / (s.kw * s.kh);
    const int64_t oy = p / s.w_out, ox = p % s.w_out;
    const int64_t iy = oy * s.stride_h - s.pad_h + ky * s.dil_h;
    const int64_t ix = ox * s.stride_w - s.pad_w + kx * s.dil_w;
    col[i] = (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
                 ? x[((b * s.c_in + ci) * s.h + iy) * s.w + ix]
                 : T(0.f);
  }
}

// gx[b][ci][iy][ix] = sum of dcol[b][(ci,ky,kx)][(oy,ox)] over the taps whose output
// position lands on (iy, ix): iy = oy*stride - pad + ky*dil for an integer oy.
template <class T>
__global__ void col2im_kernel(Conv2dShape s, int64_t nb, const T* __restrict__ dcol,
                              T* __restrict__ gx) {
  const int64_t P = s.h_out * s.w_out, CK = s.c_in * s.kh * s.kw;
  const int64_t total = nb * s.c_in * s.h * s.w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ix = i % s.w, iy = (i / s.w) % s.h, ci = (i / (s.w * s.h)) % s.c_in;
    const int64_t b = i / (s.w * s.h * s.c_in);
    acc_t<T> sum = 0;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t ty = iy + s.pad_h - ky * s.dil_h;
      if (ty < 0 || ty % s.stride_h != 0 || ty / s.stride_h >= s.h_out) continue;
      const int64_t oy = ty / s.stride_h;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t tx = ix + s.pad_w - kx * s.dil_w;
        if (tx < 0 || tx % s.stride_w != 0 || tx / s.stride_w >= s.w_out) continue;
        const int64_t row = (ci * s.kh + ky) * s.kw + kx;
        sum += to_acc(dcol[(b * CK + row) * P + oy * s.w_out + tx / s.stride_w]);
      }
    }
    gx[i] = from_acc<T>(sum);
  }
}

// y[b][c][p] = bias[c] for images [0, nb): the GEMM then adds onto it with beta = 1,
// so the half types round once.
template <class T>
__global__ void fill_bias_kernel(int64_t total, int64_t c_out, int64_t P, const T* __restrict__ bias,
                                 T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bias[(i / P) % c_out];
}

// out[i] = float(in[i]): exact for the half types.
template <class T>
__global__ void widen_kernel(int64_t count, const T* __restrict__ in, float* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = to_acc(in[i]);
}

// y[b][c][p] = T(acc[b][c][p] + bias[c]): the sum in float, one rounding.
template <class T>
__global__ void add_bias_round_kernel(int64_t total, int64_t c_out, int64_t P, const float* __restrict__ acc,
                                      const T* __restrict__ bias, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(acc[i] + to_acc(bias[(i / P) % c_out]));
}

template <class F>
void dispatch_half(DType dt, const char* op, F&& f) {
  if (dt == DType::Float16) return f.template operator()<Half>();
  if (dt == DType::BFloat16) return f.template operator()<BFloat16>();
  throw NotImplementedError(std::string(op) + ": not implemented for dtype " + dtype_name(dt) + " on cuda");
}

// out[c][b][p] = gy[b][c][p] for images [0, nb).
template <class T>
__global__ void channels_outer_kernel(int64_t nb, int64_t c_out, int64_t P, const T* __restrict__ gy,
                                      T* __restrict__ out) {
  const int64_t total = nb * c_out * P;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i % P, b = (i / P) % nb, c = i / (P * nb);
    out[i] = gy[(b * c_out + c) * P + p];
  }
}

// One block per channel: gb[c] = sum over images and pixels of gy[., c, .], in a fixed
// order (strided per thread, then a shuffle tree and a shared-memory tree).
template <class T>
__global__ void bias_grad_kernel(int64_t n, int64_t c_out, int64_t P, const T* __restrict__ gy,
                                 T* __restrict__ gb) {
  using A = acc_t<T>;
  __shared__ A partial[kBlockThreads / kWarp];
  const int64_t c = blockIdx.x;
  A sum = 0;
  for (int64_t j = threadIdx.x; j < n * P; j += blockDim.x)
    sum += to_acc(gy[((j / P) * c_out + c) * P + j % P]);
  sum = warp_sum(sum);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = sum;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    A v = threadIdx.x < kBlockThreads / kWarp ? partial[threadIdx.x] : A(0);
    v = warp_sum(v);
    if (threadIdx.x == 0) gb[c] = from_acc<T>(v);
  }
}

// One operand of the per-(image, group) GEMMs: matrix (b, g) starts at
// ptr + b*image + g*group (elements).
struct Mat {
  const void* ptr;
  int64_t image, group, rs, cs;
};

const void* offset(const void* p, int64_t elems, size_t esize) {
  return static_cast<const char*>(p) + elems * int64_t(esize);
}

// C(b,g) = A(b,g) . B(b,g) (+ beta C) for images b < nb and groups g < G, batched over
// the longer of the two (one stride can describe images or groups, not both).
void image_group_gemm(DType dt, int64_t nb, int64_t G, int64_t m, int64_t n, int64_t k,
                      const Mat& A, const Mat& B, double beta, const Mat& C, cudaStream_t stream) {
  const size_t es = dtype_size(dt);
  auto call = [&](int64_t batch, int64_t a_off, int64_t b_off, int64_t c_off, int64_t a_bs,
                  int64_t b_bs, int64_t c_bs) {
    gemm(dt, batch, m, n, k, 1.0, offset(A.ptr, a_off, es), a_bs, A.rs, A.cs,
         offset(B.ptr, b_off, es), b_bs, B.rs, B.cs, beta,
         const_cast<void*>(offset(C.ptr, c_off, es)), c_bs, C.rs, C.cs, stream);
  };
  if (G == 1 || nb >= G) {
    for (int64_t g = 0; g < G; ++g)
      call(nb, g * A.group, g * B.group, g * C.group, A.image, B.image, C.image);
  } else {
    for (int64_t b = 0; b < nb; ++b)
      call(G, b * A.image, b * B.image, b * C.image, A.group, B.group, C.group);
  }
}

int64_t chunk_for(int64_t per_image_bytes, int64_t n) {
  return std::clamp<int64_t>(kMaxColumnBytes / std::max<int64_t>(per_image_bytes, 1), 1, n);
}

}  // namespace

void conv2d_check_dtype(DType dt, const char* op) {
  if (!is_floating(dt))
    throw NotImplementedError(std::string(op) + ": not implemented for dtype " + dtype_name(dt) +
                              " on cuda");
}

void conv2d_bias_grad(DType dt, const Conv2dShape& s, const void* grad_y, void* grad_bias,
                      cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_backward_weight");
  if (s.c_out <= 0) return;
  dispatch_floating(dt, "conv2d_backward_weight", "cuda", [&]<class T>() {
    bias_grad_kernel<T><<<unsigned(s.c_out), kBlockThreads, 0, stream>>>(
        s.n, s.c_out, s.h_out * s.w_out, static_cast<const T*>(grad_y), static_cast<T*>(grad_bias));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void conv2d_widen(DType dt, int64_t count, const void* in, float* out, cudaStream_t stream) {
  dispatch_half(dt, "conv2d_widen", [&]<class T>() {
    launch_1d(count, stream, widen_kernel<T>, count, static_cast<const T*>(in), out);
  });
}

void conv2d_add_bias_round(DType dt, const Conv2dShape& s, const float* acc, const void* bias, void* y,
                           cudaStream_t stream) {
  const int64_t P = s.h_out * s.w_out, total = s.n * s.c_out * P;
  dispatch_half(dt, "conv2d_add_bias_round", [&]<class T>() {
    launch_1d(total, stream, add_bias_round_kernel<T>, total, s.c_out, P, acc, static_cast<const T*>(bias),
              static_cast<T*>(y));
  });
}

void conv2d_forward_native(DType dt, const Conv2dShape& s, const void* x, const void* weight,
                           const void* bias, void* y, cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_forward");
  const Conv2dDims d(s);
  if (s.n <= 0 || d.P <= 0 || s.c_out <= 0) return;
  const size_t es = dtype_size(dt);
  const int64_t chunk = chunk_for(d.CK * d.P * int64_t(es), s.n);
  ScratchBuffer col(size_t(chunk * d.CK * d.P) * es, current_device_index(), stream);
  dispatch_floating(dt, "conv2d_forward", "cuda", [&]<class T>() {
    for (int64_t b0 = 0; b0 < s.n; b0 += chunk) {
      const int64_t nb = std::min(chunk, s.n - b0);
      const T* xb = static_cast<const T*>(x) + b0 * d.x_img;
      T* yb = static_cast<T*>(y) + b0 * d.y_img;
      launch_1d(nb * d.CK * d.P, stream, im2col_kernel<T>, s, nb, false, xb, col.as<T>());
      if (bias)
        launch_1d(nb * d.y_img, stream, fill_bias_kernel<T>, nb * d.y_img, s.c_out, d.P,
                  static_cast<const T*>(bias), yb);
      image_group_gemm(dt, nb, d.G, d.cog, d.P, d.K, Mat{weight, 0, d.cog * d.K, d.K, 1},
                       Mat{col.get(), d.CK * d.P, d.K * d.P, d.P, 1}, bias ? 1.0 : 0.0,
                       Mat{yb, d.y_img, d.cog * d.P, d.P, 1}, stream);
    }
  });
}

void conv2d_backward_input_native(DType dt, const Conv2dShape& s, const void* grad_y,
                                  const void* weight, void* grad_x, cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_backward_input");
  const Conv2dDims d(s);
  if (s.n <= 0 || d.x_img <= 0) return;
  const size_t es = dtype_size(dt);
  if (d.P <= 0 || s.c_out <= 0) {  // no output reaches any input: the gradient is zero
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_x, 0, size_t(s.n * d.x_img) * es, stream));
    return;
  }
  const int64_t chunk = chunk_for(d.CK * d.P * int64_t(es), s.n);
  ScratchBuffer dcol(size_t(chunk * d.CK * d.P) * es, current_device_index(), stream);
  dispatch_floating(dt, "conv2d_backward_input", "cuda", [&]<class T>() {
    for (int64_t b0 = 0; b0 < s.n; b0 += chunk) {
      const int64_t nb = std::min(chunk, s.n - b0);
      // W_g^T is W_g read through swapped strides: row kk of it is column kk of W_g.
      image_group_gemm(dt, nb, d.G, d.K, d.P, d.cog, Mat{weight, 0, d.cog * d.K, 1, d.K},
                       Mat{static_cast<const T*>(grad_y) + b0 * d.y_img, d.y_img, d.cog * d.P, d.P, 1},
                       0.0, Mat{dcol.get(), d.CK * d.P, d.K * d.P, d.P, 1}, stream);
      launch_1d(nb * d.x_img, stream, col2im_kernel<T>, s, nb, dcol.as<T>(),
                static_cast<T*>(grad_x) + b0 * d.x_img);
    }
  });
}

void conv2d_backward_weight_native(DType dt, const Conv2dShape& s, const void* grad_y,
                                   const void* x, void* grad_weight, void* grad_bias,
                                   cudaStream_t stream) {
  conv2d_check_dtype(dt, "conv2d_backward_weight");
  const Conv2dDims d(s);
  const size_t es = dtype_size(dt);
  if (grad_bias) conv2d_bias_grad(dt, s, grad_y, grad_bias, stream);  // zeros when n*P == 0
  if (s.c_out <= 0 || d.K <= 0) return;
  if (s.n <= 0 || d.P <= 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad_weight, 0, size_t(s.c_out * d.K) * es, stream));
    return;
  }
  const int64_t chunk = chunk_for((d.CK + s.c_out) * d.P * int64_t(es), s.n);
  ScratchBuffer col(size_t(chunk * d.CK * d.P) * es, current_device_index(), stream);
  ScratchBuffer gyt(size_t(chunk * s.c_out * d.P) * es, current_device_index(), stream);
  dispatch_floating(dt, "conv2d_backward_weight", "cuda", [&]<class T>() {
    for (int64_t b0 = 0; b0 < s.n; b0 += chunk) {
      const int64_t nb = std::min(chunk, s.n - b0), span = nb * d.P;
      launch_1d(nb * d.CK * d.P, stream, im2col_kernel<T>, s, nb, true,
                static_cast<const T*>(x) + b0 * d.x_img, col.as<T>());
      launch_1d(nb * s.c_out * d.P, stream, channels_outer_kernel<T>, nb, s.c_out, d.P,
                static_cast<const T*>(grad_y) + b0 * d.y_img, gyt.as<T>());
      // dW_g[cog][K] = gy_g[cog][span] . col_g[K][span]^T, batched over groups.
      gemm(dt, d.G, d.cog, d.K, span, 1.0, gyt.get(), d.cog * span, span, 1, col.get(),
           d.K * span, 1, span, b0 == 0 ? 0.0 : 1.0, grad_weight, d.cog * d.K, d.K, 1, stream);
    }
  });
}

}  // namespace ember::cuda
