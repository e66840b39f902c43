// linear(x, weight, bias) = x . weight^T + bias, PyTorch's at::linear: what every
// Linear layer and ONNX Gemm with a transposed B runs.
//
// On the CPU, for a 2-D x and float32, float64 or bfloat16 operands of one dtype, it
// is one op, with or without autograd: the GEMM starts C from the bias rows and
// reads the weight through swapped strides (no transposed view, no broadcast view
// of the bias, no add pass), and a recorded call is one Linear node whose backward
// (autograd/derivatives.cpp) writes dW = g^T . x straight in the weight's [out, in]
// layout and db as one column sum. As the composite of views, matmul and add, a
// batch-100 training step of the seed network's three layers made 5 nodes and 3
// extra passes per layer, and under bfloat16 autocast a transposing copy of each
// weight gradient: 45% of the layers' time went to that glue, not to the GEMMs.
// bfloat16 sums in float32 (cpu::gemm_bf16_rounded), adds the bias to those sums,
// applies ReLU and rounds once as the GEMM stores each tile, as PyTorch's CPU addmm
// does; the composite rounded the product and then the sum. Anything else (other devices and dtypes, x of other ranks, mismatched shapes,
// for their messages) is addmm or matmul plus add.
// linear_relu applies ReLU to the GEMM's output before it is returned (or rounded)
// and records the same node with relu set, which saves the output for ReLU's
// gradient, as relu does.
#include <cstring>
#include <type_traits>

#include "kernels/base/functors.h"
#include "kernels/cpu/gemm.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

// The one-op path's conditions: one dtype the CPU GEMMs take, CPU tensors, a 2-D x,
// shapes that match (a mismatch takes the composite path for its messages).
bool one_op(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (x.dim() != 2 || w.dim() != 2 || (b.defined() && b.dim() != 1)) return false;
  const DType dt = x.dtype();
  if ((dt != kFloat32 && dt != kFloat64 && dt != kBFloat16) || w.dtype() != dt) return false;
  if (b.defined() && (b.dtype() != dt || !b.device().is_cpu())) return false;
  if (!x.device().is_cpu() || !w.device().is_cpu()) return false;
  return x.shape()[1] == w.shape()[1] && x.shape()[1] > 0 && (!b.defined() || b.shape()[0] == w.shape()[0]);
}

// C (m rows of n) = the bias in every row (b of the dtype T, contiguous), or left
// as it is for beta 0; returns the GEMM's beta.
template <class T>
T start_from_bias(const Tensor& b, T* c, int64_t m, int64_t n) {
  if (!b.defined()) return T(0);
  for (int64_t i = 0; i < m; ++i) std::memcpy(c + i * n, b.data_ptr<T>(), size_t(n) * sizeof(T));
  return T(1);
}

// relu's own functor: the same bits as the relu op (NaN kept, -0 to 0).
template <class T>
void relu_in_place(T* p, int64_t count) {
  for (int64_t i = 0; i < count; ++i) p[i] = functors::relu{}(p[i]);
}

// The product into a fresh [m, n] tensor. B = weight^T: B[kk][j] = weight[j][kk],
// so its row stride is the weight's column stride.
Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, bool relu) {
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  Tensor out = empty({m, n}, {x.dtype(), kCPU});
  if (out.numel() == 0) return out;
  const auto& xs = x.stride();
  const auto& ws = w.stride();
  const auto run = [&]<class T>(T* c, const Tensor& bias_rows) {
    const T beta = start_from_bias<T>(bias_rows, c, m, n);
    if constexpr (std::is_same_v<T, float>) {
      cpu::gemm(m, n, k, 1.0f, x.data_ptr<float>(), xs[0], xs[1], w.data_ptr<float>(), ws[1], ws[0], beta, c, n, 1);
    } else {
      cpu::gemm(m, n, k, 1.0, x.data_ptr<double>(), xs[0], xs[1], w.data_ptr<double>(), ws[1], ws[0], beta, c, n, 1);
    }
    if (relu) relu_in_place(c, m * n);
  };
  if (x.dtype() == kFloat32) {
    run(out.data_ptr<float>(), b.defined() ? b.contiguous() : b);
  } else if (x.dtype() == kFloat64) {
    run(out.data_ptr<double>(), b.defined() ? b.contiguous() : b);
  } else {  // bfloat16: float32 sums plus the bias (exact widening), ReLU, one rounding in the GEMM's store
    const Tensor bias = b.defined() ? b.to(kFloat32).contiguous() : b;
    cpu::gemm_bf16_rounded(1, m, n, k, 1.0f, x.data_ptr<BFloat16>(), 0, xs[0], xs[1], w.data_ptr<BFloat16>(), 0, ws[1],
                           ws[0], {out.data_ptr<BFloat16>(), 0, n, bias.defined() ? bias.data_ptr<float>() : nullptr, relu});
  }
  return out;
}

Tensor one_op_linear(const Tensor& x, const Tensor& w, const Tensor& b, bool relu) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = forward(x, w, b, relu);
  }
  if (needs_grad({&x, &w, &b})) {
    auto node = record(OpId::Linear, {&x, &w, &b}, {&out});
    node->save("x", x);
    node->save("weight", w);
    if (relu) node->save("y", out);
    node->attrs = LinearAttrs{b.defined(), relu};
  }
  return out;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Under autocast the bias is cast with x and weight, so y + bias stays in the lower dtype.
  if (auto r = autocast::run(autocast::Policy::lower,
                             [](const Tensor& x_, const Tensor& w_, const Tensor& b_) { return linear(x_, w_, b_); },
                             x, weight, bias))
    return *r;
  if (weight.dim() != 2) throw ShapeError(msg("linear: expected a 2-D weight, got ", shape_str(weight.shape())));
  if (one_op(x, weight, bias)) return one_op_linear(x, weight, bias, false);
  // A 2-D input with a bias is one addmm: the bias is the GEMM's starting C.
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (auto r = autocast::run(
          autocast::Policy::lower,
          [](const Tensor& x_, const Tensor& w_, const Tensor& b_) { return linear_relu(x_, w_, b_); }, x, weight,
          bias))
    return *r;
  if (weight.dim() == 2 && one_op(x, weight, bias)) return one_op_linear(x, weight, bias, true);
  return linear(x, weight, bias).relu();
}

}  // namespace ember
