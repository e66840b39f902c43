// Copies and conversions: copy_ (broadcasting, dtype conversion), contiguous,
// clone, to(device/dtype), fill_, and the new_* constructors that inherit dtype
// and device.
#include "kernels/cpu/elementwise.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"
#include "tensor/strided_loop.h"

namespace ember {
namespace {

// In-place writes cannot rebase a leaf that requires grad or a view of one.
void check_inplace_allowed(const Tensor& self) {
  if (!grad_mode_enabled()) return;
  if (self.requires_grad() && self.is_leaf())
    throw Error("a leaf Variable that requires grad is being used in an in-place operation.");
  if (self.impl().autograd && self.impl().autograd->is_view_of_grad_tensor)
    throw NotImplementedError(
        "in-place operation on a view of a tensor that requires grad is not supported; clone the view first");
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  if (needs_grad({this, &src})) {
    // The tensor becomes a differentiable copy of src: record src -> (dtype) ->
    // (broadcast) and take that node as this tensor's grad_fn.
    check_inplace_allowed(*this);
    Tensor r = src.to(device(), dtype());
    if (r.shape() != shape()) r = r.expand(shape());
    {
      NoGradGuard no_grad;
      copy_(r);
    }
    impl().autograd = r.impl().autograd;
    return *this;
  }
  const Shape shape = broadcast_shapes(this->shape(), src.shape());
  if (shape != this->shape())
    throw ShapeError(msg("output with shape ", shape_str(this->shape()), " doesn't match the broadcast shape ",
                         shape_str(shape)));
  if (device() != src.device() && !src.is_wrapped_number()) {
    if (src.device().is_meta()) throw DeviceError("Cannot copy out of meta tensor; no data!");
    if (device().is_meta()) return *this;  // meta has no data to receive
    throw_no_kernel("copy_", device().is_cuda() ? *this : src);
  }
  if (!runs_on_cpu("copy_", *this)) return *this;
  Tensor from = src;
  // Reading a region while writing an overlapping one would read new values.
  if (from.storage() == storage() && !(from.storage_offset() == storage_offset() && from.stride() == stride() &&
                                       from.shape() == this->shape() && from.dtype() == dtype()))
    from = from.clone();
  if (from.is_same(*this)) return *this;
  bump_version(*this);
  cpu::copy(dtype(), from.dtype(), make_loop(this->shape(), {this, &from}));
  return *this;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), {dtype(), device()});
  {
    NoGradGuard no_grad;
    out.copy_(*this);
  }
  if (needs_grad({this})) record(OpId::Clone, {this}, {&out});
  return out;
}

Tensor Tensor::to(Device device, DType dtype) const {
  if (device.is_cuda() && device.index() < 0) device = Device(DeviceType::CUDA, 0);
  if (device == this->device() && dtype == this->dtype()) return *this;
  Tensor out = empty(shape(), {dtype, device});
  {
    NoGradGuard no_grad;
    if (device != this->device()) {
      // Convert on the source device first so only the final dtype crosses devices.
      Tensor converted = to(this->device(), dtype);
      out.copy_(converted);
    } else {
      out.copy_(*this);
    }
  }
  if (needs_grad({this}) && is_floating(dtype)) record(OpId::ToCopy, {this}, {&out});
  return out;
}

Tensor Tensor::to(Device device, bool /*non_blocking: synchronous until the CUDA backend*/) const {
  return to(device, dtype());
}
Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }
Tensor Tensor::cpu() const { return to(kCPU); }
Tensor Tensor::cuda() const { return to(Device(DeviceType::CUDA, -1)); }

Tensor& Tensor::fill_(Scalar value) {
  if (requires_grad() && grad_mode_enabled()) {
    check_inplace_allowed(*this);
    impl().autograd = nullptr;  // now a constant: no gradient flows to what it was computed from
  }
  bump_version(*this);
  if (!runs_on_cpu("fill_", *this)) return *this;
  if (is_contiguous()) {
    // Integers truncate a floating value; bool is "nonzero" (0.5 -> true), as copy_ converts.
    const int64_t ivalue = dtype() == kBool ? value.to_bool()
                           : value.is_floating() ? static_cast<int64_t>(value.to_double())
                                                 : value.to_int();
    cpu::fill(dtype(), data_ptr(), numel(), value.to_double(), ivalue);
    return *this;
  }
  return copy_(scalar_tensor(value));
}

Tensor Tensor::new_empty(const Shape& shape) const { return empty(shape, {dtype(), device()}); }
Tensor Tensor::new_zeros(const Shape& shape) const { return zeros(shape, {dtype(), device()}); }
Tensor Tensor::new_ones(const Shape& shape) const { return ones(shape, {dtype(), device()}); }
Tensor Tensor::new_full(const Shape& shape, Scalar value) const { return full(shape, value, {dtype(), device()}); }

}  // namespace ember
