// Tensor accessors: sizes, strides, contiguity, raw data, item().
#include "tensor/tensor.h"

#include "kernels/base/dispatch.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember {

TensorImpl& Tensor::impl() const {
  if (!impl_) throw ValueError("the tensor is undefined (default-constructed)");
  return *impl_;
}

int64_t Tensor::size(int64_t dim) const { return shape()[wrap_dim(dim, this->dim())]; }
int64_t Tensor::stride(int64_t dim) const { return stride()[wrap_dim(dim, this->dim())]; }

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : impl().sizes) n *= s;
  return n;
}

// Contiguous in PyTorch's sense: strides are row-major, ignoring dims of size 1.
bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const auto& sz = shape();
  const auto& st = stride();
  for (int64_t d = static_cast<int64_t>(sz.size()) - 1; d >= 0; --d) {
    if (sz[d] == 0) return true;
    if (sz[d] != 1 && st[d] != expected) return false;
    expected *= sz[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  const TensorImpl& i = impl();
  if (i.device.is_meta()) throw DeviceError("cannot access the data of a tensor on device meta");
  if (!i.storage->data()) return nullptr;
  return static_cast<char*>(i.storage->data()) + i.offset * static_cast<int64_t>(dtype_size(i.dtype));
}

Scalar Tensor::item() const {
  if (numel() != 1) throw ValueError(ember::msg("a Tensor with ", numel(), " elements cannot be converted to Scalar"));
  if (device().is_meta()) throw DeviceError("cannot access the data of a tensor on device meta");
  Tensor host = cpu();
  return dispatch(dtype(), [&]<class T>() -> Scalar { return Scalar(*static_cast<const T*>(host.data_ptr())); });
}

// Row-major strides. A shape whose element count overflows int64 gets strides that
// saturate at INT64_MAX instead of overflowing (undefined behaviour): no such tensor
// can be allocated, and the size check that follows raises for it.
Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[d], 1), &s)) s = INT64_MAX;
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: {
      std::ostringstream os;
      os << d_;
      return os.str();
    }
  }
  return "?";
}

}  // namespace ember
