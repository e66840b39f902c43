// The front-end of ReLU's backward pass (tensor/nn_ops.h): the one-pass CPU kernel
// when nothing records and the operands allow it, the differentiable composite
// otherwise.
#include "kernels/cpu/relu_backward.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {

Tensor relu_backward(const Tensor& grad_y, const Tensor& y) {
  const bool fused = !needs_grad({&grad_y, &y}) && grad_y.device().is_cpu() && y.device() == grad_y.device() &&
                     grad_y.dtype() == y.dtype() && is_floating(grad_y.dtype()) && grad_y.shape() == y.shape();
  if (!fused) return where(y > 0, grad_y, Scalar(0));
  const Tensor gc = grad_y.contiguous(), yc = y.contiguous();
  Tensor out = empty(grad_y.shape(), {grad_y.dtype(), grad_y.device()});
  cpu::relu_backward(grad_y.dtype(), out.numel(), gc.data_ptr(), yc.data_ptr(), out.data_ptr());
  return out;
}

}  // namespace ember
