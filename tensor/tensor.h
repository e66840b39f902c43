// Tensor: a strided view (sizes, strides, offset, dtype) onto a shared Storage.
// Copying a Tensor copies a handle, not data, as in PyTorch: views made by view(),
// transpose(), slice() and friends share the storage of the tensor they came from.
// The math lives in free functions (tensor/ops.h); the methods here forward to them.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <initializer_list>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/base/ops.def.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/scalar.h"
#include "tensor/storage.h"

EMBER_API_BEGIN

namespace ember {

using Shape = std::vector<int64_t>;

struct AutogradMeta;  // tensor/graph.h
struct Node;
class Tensor;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Shape strides;       // in elements
  DType dtype = DType::Float32;
  Device device;
  // A tensor made from a C++ number in `a + 2`: it yields to real tensors in type
  // promotion, as PyTorch's wrapped numbers do.
  bool wrapped_number = false;
  // Autograd state (requires_grad, grad, grad_fn); null for tensors that never
  // took part in autograd.
  std::shared_ptr<AutogradMeta> autograd;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().sizes; }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& stride() const { return impl().strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t numel() const;
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().device; }
  int64_t storage_offset() const { return impl().offset; }
  size_t element_size() const { return dtype_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  bool is_wrapped_number() const { return impl().wrapped_number; }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  TensorImpl& impl() const;
  // Same storage and same view: the identity PyTorch's `is` would give.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // Address of the first element (storage + offset). Raises on meta tensors.
  void* data_ptr() const;
  template <class T> T* data_ptr() const;

  // The value of a one-element tensor, on any device.
  Scalar item() const;
  template <class T> T item() const { return item().to<T>(); }
  // The elements in row-major order, copied to the host. T must match dtype().
  template <class T> std::vector<T> to_vector() const;

  // ---- views: no data is copied ----
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(const Shape& shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor as_strided(const Shape& sizes, const Shape& strides, std::optional<int64_t> offset = std::nullopt) const;

  // ---- copies and conversions ----
  Tensor contiguous() const;
  Tensor clone() const;
  // Copies src (broadcast, converted) into this tensor, across devices too. With
  // non_blocking a host-to-device copy returns once the host data is staged in
  // pinned memory (the source may be reused at once); device-to-host copies always
  // wait, since the data must be in host memory on return.
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const;
  Tensor cuda() const;
  Tensor new_empty(const Shape& shape) const;
  Tensor new_zeros(const Shape& shape) const;
  Tensor new_ones(const Shape& shape) const;
  Tensor new_full(const Shape& shape, Scalar value) const;
  Tensor& fill_(Scalar value);
  Tensor& zero_() { return fill_(0); }

  // ---- math (see tensor/ops.h for the free-function forms) ----
  // One method per row of kernels/base/ops.def.h.
#define EMBER_X(Name, name, ...) Tensor name() const;
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
#define EMBER_X(Name, name, ...)                 \
  Tensor name(const Tensor& other) const;        \
  Tensor name(Scalar other) const;               \
  Tensor& name##_(const Tensor& other);          \
  Tensor& name##_(Scalar other);
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);

  Tensor sum(const Shape& dims = {}, bool keepdim = false) const;
  Tensor mean(const Shape& dims = {}, bool keepdim = false) const;
  Tensor var(const Shape& dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(double p = 2, const Shape& dims = {}, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(const Shape& dims = {}, bool keepdim = false) const;
  Tensor amin(const Shape& dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor matmul(const Tensor& other) const;

  std::string str() const;  // PyTorch-style printing

  // ---- autograd (tensor/autograd_api.cpp; the engine is in autograd/) ----
  bool requires_grad() const;
  // Marks a leaf as needing gradients; only floating tensors can.
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient of a leaf (or of a tensor that called retain_grad()).
  const Tensor& grad() const;
  Tensor& mutable_grad();
  void set_grad(const Tensor& grad);
  bool is_leaf() const;
  // The node that produced this tensor; null for leaves. name() gives "AddBackward0".
  std::shared_ptr<Node> grad_fn() const;
  // The same data, cut from the graph: shares storage, requires no grad.
  Tensor detach() const;
  Tensor& detach_();
  void retain_grad();
  // Runs after this leaf's gradient has been accumulated in a backward pass.
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook);
  // Reverse-mode differentiation from this tensor (autograd/engine.cpp). A scalar
  // may omit `gradient`; retain_graph keeps saved tensors for another backward.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // The storage's in-place write counter.
  uint64_t version() const;
  std::shared_ptr<TensorImpl> impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Contiguous (row-major) strides for a shape.
Shape contiguous_strides(const Shape& shape);
// "[2, 3]"
std::string shape_str(const Shape& shape);

template <class T>
T* Tensor::data_ptr() const {
  if (dtype_of_v<T> != dtype())
    throw DTypeError(std::string("data_ptr: expected dtype ") + dtype_name(dtype_of_v<T>) + " but the tensor has dtype " +
                     dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if (dtype_of_v<T> != dtype())
    throw DTypeError(std::string("to_vector: expected dtype ") + dtype_name(dtype_of_v<T>) + " but the tensor has dtype " +
                     dtype_name(dtype()));
  Tensor c = cpu().contiguous();
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}

}  // namespace ember

EMBER_API_END
