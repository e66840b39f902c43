// linear(x, weight, bias) = x . weight^T + bias, PyTorch's at::linear: what every
// Linear layer and ONNX Gemm with a transposed B runs. Without autograd, on the CPU
// in float32 or float64 with a 2-D x and a 1-D bias, it starts C from the bias rows
// and hands the weight to the GEMM through swapped strides: no transposed view, no
// broadcast view of the bias, no copy machinery. A batch-1 forward of the seed
// network made about 25 heap allocations per Linear layer through those views, a
// tenth of its time. Everything else is addmm or matmul plus add, as before.
// linear_relu applies relu to that output in place (the batch-1 seed network's
// two hidden layers: a relu op cost as much as fc2's GEMM).
#include <cstring>

#include "kernels/base/functors.h"
#include "kernels/cpu/gemm.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

// The direct path's conditions: nothing to record, one float dtype on the CPU,
// shapes that match (a mismatch takes the composite path for its messages).
bool direct(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (!b.defined() || x.dim() != 2 || b.dim() != 1 || needs_grad({&x, &w, &b})) return false;
  const DType dt = x.dtype();
  if ((dt != kFloat32 && dt != kFloat64) || w.dtype() != dt || b.dtype() != dt) return false;
  if (!x.device().is_cpu() || !w.device().is_cpu() || !b.device().is_cpu()) return false;
  return x.shape()[1] == w.shape()[1] && x.shape()[1] > 0 && b.shape()[0] == w.shape()[0];
}

template <class T>
void bias_then_gemm(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& out) {
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  const Tensor bc = b.contiguous();
  T* o = out.data_ptr<T>();
  for (int64_t i = 0; i < m; ++i) std::memcpy(o + i * n, bc.data_ptr<T>(), size_t(n) * sizeof(T));
  const auto& xs = x.stride();
  const auto& ws = w.stride();
  // B = weight^T: B[kk][j] = weight[j][kk], so its row stride is weight's column stride.
  cpu::gemm(m, n, k, T(1), x.data_ptr<T>(), xs[0], xs[1], w.data_ptr<T>(), ws[1], ws[0], T(1), o, n, 1);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Under autocast the bias is cast with x and weight, so y + bias stays in the lower dtype.
  if (auto r = autocast::run(autocast::Policy::lower,
                             [](const Tensor& x_, const Tensor& w_, const Tensor& b_) { return linear(x_, w_, b_); },
                             x, weight, bias))
    return *r;
  if (weight.dim() != 2) throw ShapeError(msg("linear: expected a 2-D weight, got ", shape_str(weight.shape())));
  if (direct(x, weight, bias)) {
    Tensor out = empty({x.shape()[0], weight.shape()[0]}, {x.dtype(), kCPU});
    if (out.numel() == 0) return out;
    if (x.dtype() == kFloat32) bias_then_gemm<float>(x, weight, bias, out);
    else bias_then_gemm<double>(x, weight, bias, out);
    return out;
  }
  // A 2-D input with a bias is one addmm: the bias is the GEMM's starting C.
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Only where linear itself takes its direct path (autocast would cast first).
  if (weight.dim() == 2 && !autocast::applies(autocast::Policy::lower, {&x, &weight, &bias}) &&
      direct(x, weight, bias)) {
    Tensor out = linear(x, weight, bias);
    // relu's own functor on the fresh output: the same bits as relu(out) (NaN kept, -0 to
    // 0), without a second tensor or an op dispatch.
    const auto apply = [&]<class T>(T* p) {
      for (int64_t i = 0, n = out.numel(); i < n; ++i) p[i] = functors::relu{}(p[i]);
    };
    if (out.dtype() == kFloat32) apply(out.data_ptr<float>());
    else apply(out.data_ptr<double>());
    return out;
  }
  return linear(x, weight, bias).relu();
}

}  // namespace ember
