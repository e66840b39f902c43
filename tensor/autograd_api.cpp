// The autograd methods of Tensor: requires_grad, grad, grad_fn, detach, hooks.
#include "tensor/checks.h"
#include "tensor/graph.h"

namespace ember {
namespace {
AutogradMeta& meta_of(const Tensor& t) {
  auto& m = t.impl().autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}
const Tensor& undefined_tensor() {
  static const Tensor t;
  return t;
}
}  // namespace

bool Tensor::requires_grad() const { return impl().autograd && impl().autograd->requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  if (!is_leaf()) {
    if (requires_grad) return *this;
    throw ValueError(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
        "subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  }
  if (requires_grad && !is_floating(dtype()))
    throw DTypeError(msg("only Tensors of floating point dtype can require gradients, got ", dtype()));
  meta_of(*this).requires_grad = requires_grad;
  return *this;
}

const Tensor& Tensor::grad() const { return impl().autograd ? impl().autograd->grad : undefined_tensor(); }
Tensor& Tensor::mutable_grad() { return meta_of(*this).grad; }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && (grad.shape() != shape() || grad.device() != device()))
    throw ShapeError(msg("assigned grad has data of a different size or device: expected ", shape_str(shape()), " on ",
                         device(), ", got ", shape_str(grad.shape()), " on ", grad.device()));
  meta_of(*this).grad = grad;
}

bool Tensor::is_leaf() const { return !impl().autograd || !impl().autograd->grad_fn; }

std::shared_ptr<Node> Tensor::grad_fn() const { return impl().autograd ? impl().autograd->grad_fn : nullptr; }

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(this->impl());
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

Tensor& Tensor::detach_() {
  impl().autograd = nullptr;
  return *this;
}

void Tensor::retain_grad() {
  if (!requires_grad()) throw ValueError("can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta& m = meta_of(*this);
  if (m.retains_grad) return;
  m.retains_grad = true;
  if (m.grad_fn) m.grad_fn->retained.push_back({m.output_nr, impl_ptr()});
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) {
  if (!is_leaf() || !requires_grad())
    throw ValueError("post accumulate grad hooks can only be registered on leaf tensors that require grad");
  meta_of(*this).post_accumulate_hooks.push_back(std::move(hook));
}

uint64_t Tensor::version() const { return storage() ? storage()->version() : 0; }

}  // namespace ember
