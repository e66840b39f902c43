// Copies and conversions: copy_ (broadcasting, dtype conversion), contiguous,
// clone, to(device/dtype), fill_, and the new_* constructors that inherit dtype
// and device.
#include "kernels/cpu/elementwise.h"
#include "tensor/backend.h"
#include "tensor/copy_device.h"
#include "tensor/cuda.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"
#include "tensor/strided_loop.h"

#include "tensor/cuda_kernels.h"

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

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
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
    bump_version(*this);
    copy_between_devices(*this, src, non_blocking);
    return *this;
  }
  const OpBackend backend = backend_of("copy_", *this);
  if (backend == Backend::None) return *this;
  Tensor from = src;
  // Reading a region while writing an overlapping one would read new values.
  if (from.storage() == storage() && !(from.storage_offset() == storage_offset() && from.stride() == stride() &&
                                       from.shape() == this->shape() && from.dtype() == dtype()))
    from = from.clone();
  if (from.is_same(*this)) return *this;
  bump_version(*this);
  // A wrapped number (the 2 in t.fill_(2)) stays on the host, in its own dtype:
  // make_loop passes it to the kernel by value, and the kernel converts it.
  const StridedLoop loop = make_loop(this->shape(), {this, &from});
  if (backend == Backend::CPU) cpu::copy(dtype(), from.dtype(), loop);
  else EMBER_CUDA(cuda::copy(dtype(), from.dtype(), loop, stream_of(*this)));
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

namespace {

// to() with every option: the one place that moves and converts.
Tensor to_impl(const Tensor& self, Device device, DType dtype, bool non_blocking) {
  if (device.has_index() && device.index() < 0 && (!device.is_cuda() || cuda::is_available()))
    device = resolve_device(device);
  if (device == self.device() && dtype == self.dtype()) return self;
  Tensor out = empty(self.shape(), {dtype, device});
  {
    NoGradGuard no_grad;
    if (device != self.device()) {
      // Convert on the source device first so only the final dtype crosses devices.
      Tensor converted = to_impl(self, self.device(), dtype, non_blocking);
      out.copy_(converted, non_blocking);
    } else {
      out.copy_(self);
    }
  }
  if (needs_grad({&self}) && is_floating(dtype)) record(OpId::ToCopy, {&self}, {&out});
  return out;
}

}  // namespace

Tensor Tensor::to(Device device, DType dtype) const { return to_impl(*this, device, dtype, false); }

Tensor Tensor::to(Device device, bool non_blocking) const { return to_impl(*this, device, dtype(), non_blocking); }
Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }
Tensor Tensor::cpu() const { return to(kCPU); }
Tensor Tensor::cuda() const { return to(Device(DeviceType::CUDA, -1)); }

Tensor& Tensor::fill_(Scalar value) {
  // Integers truncate a floating value; bool is "nonzero" (0.5 -> true), as copy_ converts.
  // A floating value an int64 cannot hold (inf, NaN, 1e30) is refused for an integer
  // tensor, as PyTorch refuses it, before anything changes; for a floating tensor the
  // integer is not used.
  int64_t ivalue = 0;
  if (dtype() == kBool) {
    ivalue = value.to_bool();
  } else if (!value.is_floating()) {
    ivalue = value.to_int();
  } else if (!is_floating(dtype())) {
    const double v = value.to_double();
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
      throw ValueError(msg("fill_: value ", v, " cannot be converted to ", dtype(), " without overflow"));
    ivalue = static_cast<int64_t>(v);
  }
  if (requires_grad() && grad_mode_enabled()) {
    check_inplace_allowed(*this);
    impl().autograd = nullptr;  // now a constant: no gradient flows to what it was computed from
  }
  bump_version(*this);
  const OpBackend backend = backend_of("fill_", *this);
  if (backend == Backend::None) return *this;
  if (is_contiguous()) {
    if (backend == Backend::CPU) cpu::fill(dtype(), data_ptr(), numel(), value.to_double(), ivalue);
    else EMBER_CUDA(cuda::fill(dtype(), data_ptr(), numel(), value.to_double(), ivalue, stream_of(*this)));
    return *this;
  }
  return copy_(scalar_tensor(value));
}

Tensor Tensor::new_empty(const Shape& shape) const { return empty(shape, {dtype(), device()}); }
Tensor Tensor::new_zeros(const Shape& shape) const { return zeros(shape, {dtype(), device()}); }
Tensor Tensor::new_ones(const Shape& shape) const { return ones(shape, {dtype(), device()}); }
Tensor Tensor::new_full(const Shape& shape, Scalar value) const { return full(shape, value, {dtype(), device()}); }

}  // namespace ember
