// Checks every op front-end shares, each raising the documented error
// (docs/errors.md): operands on one device, dims in range, and message helpers.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ember {

// Builds a message from streamable pieces.
template <class... Args>
std::string msg(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// "expected device X but got device Y", X being the first operand's device.
void check_same_device(const std::vector<const Tensor*>& operands);
inline void check_same_device(const Tensor& a, const Tensor& b) { check_same_device({&a, &b}); }

// Wraps a possibly negative dim into [0, ndim); 0-dim tensors accept -1 and 0.
int64_t wrap_dim(int64_t dim, int64_t ndim);
// The number of elements of `shape`, or ShapeError "shape {shape} has more elements
// than int64 can count" when the product overflows; zeros count as ones there, so
// an empty shape whose other sizes multiply past int64 is refused too. Every tensor
// and view is made through it, so no product of a tensor's sizes ever overflows.
int64_t checked_numel(const Shape& shape);
// a * b, a + b and a - b on sizes from outside (an op's padding, stride or dilation,
// a model's attributes or shape values): ShapeError "{what}: sizes overflow int64"
// where int64 would overflow, instead of undefined behaviour.
int64_t size_mul(int64_t a, int64_t b, const char* what);
int64_t size_add(int64_t a, int64_t b, const char* what);
int64_t size_sub(int64_t a, int64_t b, const char* what);
// Raised for an op with no kernel for this device (CUDA tensors before the CUDA backend).
[[noreturn]] void throw_no_kernel(const char* op, const Tensor& t);

}  // namespace ember
