// ember::tensor<T>(values, shape): a tensor copied from host values. Kept apart from
// ops.h because it is a template and needs the definitions inline.
#pragma once

#include "kernels/base/export.h"

#include <cstring>

#include "tensor/ops.h"

EMBER_API_BEGIN

namespace ember {

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, TensorOptions options) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  if (n != static_cast<int64_t>(values.size()))
    throw ShapeError("tensor: " + std::to_string(values.size()) + " values cannot fill shape " + shape_str(s));
  // The host copy always has T's dtype; to() then converts dtype and device if asked.
  Tensor host = empty(s, TensorOptions(dtype_of_v<T>, kCPU));
  if (n) {
    if constexpr (std::is_same_v<T, bool>) {
      bool* p = host.data_ptr<bool>();
      for (int64_t i = 0; i < n; ++i) p[i] = values[i];
    } else {
      std::memcpy(host.data_ptr(), values.data(), n * sizeof(T));
    }
  }
  return host.to(options.device, options.dtype);
}

}  // namespace ember

EMBER_API_END
