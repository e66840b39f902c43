// The shared checks and their messages.
#include "tensor/checks.h"

namespace ember {

void check_same_device(const std::vector<const Tensor*>& operands) {
  const Device expected = operands.front()->device();
  for (const Tensor* t : operands)
    if (t->device() != expected)
      throw DeviceError(msg("expected device ", expected, " but got device ", t->device()));
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  if (dim < -n || dim >= n)
    throw IndexError(msg("Dimension out of range (expected to be in range of [", -n, ", ", n - 1, "], but got ", dim,
                         ")"));
  return dim < 0 ? dim + n : dim;
}

int64_t checked_numel(const Shape& shape) {
  // Zeros count as ones: an empty tensor's other sizes must multiply within int64
  // too, so that no product of any of a tensor's sizes (numel, strides, a flattened
  // dim) can overflow, in whatever order it is formed.
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t s : shape) {
    empty = empty || s == 0;
    overflow = overflow || __builtin_mul_overflow(n, s == 0 ? 1 : s, &n);
  }
  if (overflow && empty)
    throw ShapeError(msg("shape ", shape_str(shape), " has no elements, but its other sizes multiply past int64"));
  if (overflow) throw ShapeError(msg("shape ", shape_str(shape), " has more elements than int64 can count"));
  return empty ? 0 : n;
}

int64_t size_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw ShapeError(msg(what, ": sizes overflow int64 (", a, " * ", b, ")"));
  return r;
}

int64_t size_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw ShapeError(msg(what, ": sizes overflow int64 (", a, " + ", b, ")"));
  return r;
}

int64_t size_sub(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) throw ShapeError(msg(what, ": sizes overflow int64 (", a, " - ", b, ")"));
  return r;
}

void throw_no_kernel(const char* op, const Tensor& t) {
  throw NotImplementedError(msg(op, ": no kernel for device ", t.device(), " and dtype ", t.dtype()));
}

}  // namespace ember
