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
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) {
    if (s == 0) return 0;  // an empty shape has no elements, whatever its other sizes
    overflow = overflow || __builtin_mul_overflow(n, s, &n);
  }
  if (overflow) throw ShapeError(msg("shape ", shape_str(shape), " has more elements than int64 can count"));
  return n;
}

void throw_no_kernel(const char* op, const Tensor& t) {
  throw NotImplementedError(msg(op, ": no kernel for device ", t.device(), " and dtype ", t.dtype()));
}

}  // namespace ember
