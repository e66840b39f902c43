// Front-ends of the elementwise ops: unary functors, binary functors with
// broadcasting and type promotion (out-of-place, in-place and `out=`), where, clamp.
#include "kernels/cpu/elementwise.h"

#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/ops.h"
#include "tensor/strided_loop.h"

namespace ember {
namespace {

// Wrapped numbers (the 2 in a + 2) live on the CPU and may join tensors on any device.
void check_devices(const std::vector<const Tensor*>& ts) {
  std::vector<const Tensor*> real;
  for (const Tensor* t : ts)
    if (!t->is_wrapped_number()) real.push_back(t);
  if (real.size() > 1) check_same_device(real);
}

Device device_of(const std::vector<const Tensor*>& ts) {
  for (const Tensor* t : ts)
    if (!t->is_wrapped_number()) return t->device();
  return ts.front()->device();
}

// Whether writing `out` while reading `in` could read an element already written.
bool overlaps(const Tensor& out, const Tensor& in) {
  if (out.device().is_meta() || in.storage() != out.storage() || in.numel() == 0) return false;
  const bool same_view = in.storage_offset() == out.storage_offset() && in.shape() == out.shape() &&
                         in.stride() == out.stride() && in.dtype() == out.dtype();
  return !same_view;
}

DType binary_compute_type(BinaryOp op, const Tensor& a, const Tensor& b) {
  DType common = result_type({a, b});
  if (kind_of(op) == BinaryKind::truediv && !is_floating(common)) common = kDefaultFloat;
  if (op == BinaryOp::sub && common == kBool)
    throw DTypeError(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
        "operator instead.");
  return common;
}

// An input as the kernel on `device` reads it: in dtype `dt` and on that device. A
// wrapped number (the 2 in t + 2) is converted on the host and stays there: make_loop
// passes it to the kernel by value, so it never costs a copy into device memory (nor,
// on CUDA, a wait for the copy).
Tensor kernel_input(const Tensor& t, Device device, DType dt) {
  return t.is_wrapped_number() ? t.to(dt) : t.to(device, dt);
}

// Runs the kernel for out = op(a, b); out already has the broadcast shape and the
// result dtype of `compute` (or bool for comparisons).
void run_binary(BinaryOp op, DType compute, const Tensor& out, const Tensor& a, const Tensor& b) {
  const OpBackend backend = backend_of(name_of(op), out);
  if (backend == Backend::None) return;
  Tensor x = kernel_input(a, out.device(), compute), y = kernel_input(b, out.device(), compute);
  if (overlaps(out, x)) x = x.clone();
  if (overlaps(out, y)) y = y.clone();
  const StridedLoop loop = make_loop(out.shape(), {&out, &x, &y});
  if (backend == Backend::CPU) cpu::binary(op, compute, loop);
  else EMBER_CUDA(cuda::binary(op, compute, loop, stream_of(out)));
}

// The autograd op id of an elementwise op: the Name column of its row.
OpId op_id(UnaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, ...) case UnaryOp::name: return OpId::Name;
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return OpId::Neg;
}

// Comparisons produce bool and record nothing.
std::optional<OpId> op_id(BinaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, ...) case BinaryOp::name: return OpId::Name;
    EMBER_ARITH_OPS(EMBER_X)
#undef EMBER_X
#define EMBER_X(Name, name, ...) case BinaryOp::name: return std::nullopt;
    EMBER_COMPARE_OPS(EMBER_X)
#undef EMBER_X
  }
  return std::nullopt;
}

void record_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const auto id = op_id(op);
  if (!id || !needs_grad({&a, &b})) return;
  auto node = record(*id, {&a, &b}, {&out});
  const Saves saves = saves_of(op);  // the row's column, read by the rule under these names
  if (saves == Saves::inputs || saves == Saves::inputs_output) {
    node->save("a", a);
    node->save("b", b);
  }
  if (saves == Saves::inputs_output) node->save("y", out);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(msg("The size of tensor a (", da, ") must match the size of tensor b (", db,
                           ") at non-singleton dimension ", i));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// PyTorch's ResultTypeState: three tiers, combined so that a lower tier only wins
// when it brings a higher category (bool < integral < floating).
DType result_type(const std::vector<Tensor>& operands) {
  std::optional<DType> tier[3];
  for (const Tensor& t : operands) {
    const int k = t.is_wrapped_number() ? 2 : (t.dim() == 0 ? 1 : 0);
    DType d = t.dtype();
    if (k == 2 && is_floating(d)) d = kDefaultFloat;
    tier[k] = tier[k] ? promote_types(*tier[k], d) : d;
  }
  auto combine = [](std::optional<DType> higher, std::optional<DType> lower) -> std::optional<DType> {
    if (!higher) return lower;
    if (!lower) return higher;
    if (is_floating(*higher)) return higher;
    if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
    return higher;
  };
  return *combine(tier[0], combine(tier[1], tier[2]));
}

Tensor unary_op(UnaryOp op, const Tensor& a) {
  if (autocast_of(op) == AutocastPolicy::fp32)  // the row's autocast column
    if (auto r = autocast::run(autocast::Policy::fp32, [&](const Tensor& x) { return unary_op(op, x); }, a)) return *r;
  DType dt = a.dtype();
  if (kind_of(op) == UnaryKind::floating && !is_floating(dt)) dt = kDefaultFloat;
  if (dt == kBool) {
    if (op == UnaryOp::neg)
      throw DTypeError(
          "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
          "the `~` or `logical_not()` operator instead.");
    throw NotImplementedError(msg(name_of(op), ": not implemented for dtype bool"));
  }
  Tensor out = empty(a.shape(), {dt, a.device()});
  if (const OpBackend backend = backend_of(name_of(op), out); backend != Backend::None) {
    Tensor x = a.to(dt);
    const StridedLoop loop = make_loop(out.shape(), {&out, &x});
    if (backend == Backend::CPU) cpu::unary(op, dt, loop);
    else EMBER_CUDA(cuda::unary(op, dt, loop, stream_of(out)));
  }
  if (needs_grad({&a})) {
    auto node = record(op_id(op), {&a}, {&out});
    if (saves_of(op) == Saves::input) node->save("x", a);  // the row's saves column
    if (saves_of(op) == Saves::output) node->save("y", out);
  }
  return out;
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (autocast_of(op) == AutocastPolicy::fp32)  // the row's autocast column
    if (auto r = autocast::run(autocast::Policy::fp32,
                               [&](const Tensor& x, const Tensor& y) { return binary_op(op, x, y); }, a, b))
      return *r;
  check_devices({&a, &b});
  const DType compute = binary_compute_type(op, a, b);
  const DType out_dt = kind_of(op) == BinaryKind::compare ? kBool : compute;
  Tensor out = empty(broadcast_shapes(a.shape(), b.shape()), {out_dt, device_of({&a, &b})});
  {
    NoGradGuard no_grad;  // dtype conversions inside are part of this op
    run_binary(op, compute, out, a, b);
  }
  record_binary(op, a, b, out);
  return out;
}

// In-place ops under autograd: the result is computed out of place from a copy of
// the old value that keeps the tensor's place in the graph, then written back, and
// the tensor takes the new node as its grad_fn. (A leaf that requires grad, or a
// view of a tensor that requires grad, cannot be rebased this way and is refused.)
Tensor& inplace_with_grad(BinaryOp op, Tensor& self, const Tensor& other) {
  if (self.requires_grad() && self.is_leaf())
    throw Error("a leaf Variable that requires grad is being used in an in-place operation.");
  if (self.impl().autograd && self.impl().autograd->is_view_of_grad_tensor)
    throw NotImplementedError(
        "in-place operation on a view of a tensor that requires grad is not supported; clone the view first");
  Tensor old;
  {
    NoGradGuard no_grad;
    old = self.clone();
  }
  old.impl().autograd = self.impl().autograd;
  Tensor result = binary_op(op, old, other);
  if (!can_cast(result.dtype(), self.dtype()))
    throw DTypeError(msg("result type ", result.dtype(), " can't be cast to the desired output type ", self.dtype()));
  {
    NoGradGuard no_grad;
    self.copy_(result);
  }
  self.impl().autograd = result.impl().autograd;
  return self;
}

Tensor& binary_out(BinaryOp op, Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.is_same(a) && needs_grad({&a, &b}) && op_id(op)) return inplace_with_grad(op, out, b);
  if (needs_grad({&a, &b}) && op_id(op))
    throw Error(msg(name_of(op), "(): functions with out=... arguments don't support automatic differentiation, but "
                                 "one of the arguments requires grad."));
  check_devices({&out, &a, &b});
  const DType compute = binary_compute_type(op, a, b);
  const DType result = kind_of(op) == BinaryKind::compare ? kBool : compute;
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  if (shape != out.shape())
    throw ShapeError(msg("output with shape ", shape_str(out.shape()), " doesn't match the broadcast shape ",
                         shape_str(shape)));
  if (!can_cast(result, out.dtype()))
    throw DTypeError(msg("result type ", result, " can't be cast to the desired output type ", out.dtype()));
  bump_version(out);
  if (result == out.dtype()) {
    run_binary(op, compute, out, a, b);
  } else {
    Tensor tmp = empty(shape, {result, out.device()});
    run_binary(op, compute, tmp, a, b);
    out.copy_(tmp);
  }
  return out;
}

#define EMBER_X(Name, name, ...)                                                                 \
  Tensor name(const Tensor& a) { return unary_op(UnaryOp::name, a); }                           \
  Tensor Tensor::name() const { return ember::name(*this); }
EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X

#define EMBER_X(Name, name, ...)                                                                           \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::name, a, b); }               \
  Tensor name(const Tensor& a, Scalar b) { return binary_op(BinaryOp::name, a, scalar_tensor(b)); }      \
  Tensor name(Scalar a, const Tensor& b) { return binary_op(BinaryOp::name, scalar_tensor(a), b); }      \
  Tensor& name##_(Tensor& self, const Tensor& other) { return binary_out(BinaryOp::name, self, self, other); } \
  Tensor& name##_(Tensor& self, Scalar other) {                                                           \
    return binary_out(BinaryOp::name, self, self, scalar_tensor(other));                                  \
  }                                                                                                       \
  Tensor Tensor::name(const Tensor& other) const { return ember::name(*this, other); }                   \
  Tensor Tensor::name(Scalar other) const { return ember::name(*this, other); }                          \
  Tensor& Tensor::name##_(const Tensor& other) { return ember::name##_(*this, other); }                  \
  Tensor& Tensor::name##_(Scalar other) { return ember::name##_(*this, other); }
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X

Tensor operator-(const Tensor& a) { return neg(a); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_devices({&condition, &a, &b});
  if (condition.dtype() != kBool)
    throw DTypeError(msg("where expected condition to be a boolean tensor, but got a tensor with dtype ",
                         condition.dtype()));
  const DType dt = result_type({a, b});
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.shape(), a.shape()), b.shape());
  Tensor out = empty(shape, {dt, device_of({&condition, &a, &b})});
  if (const OpBackend backend = backend_of("where", out); backend != Backend::None) {
    NoGradGuard no_grad;
    Tensor x = kernel_input(a, out.device(), dt), y = kernel_input(b, out.device(), dt);
    Tensor c = kernel_input(condition, out.device(), kBool);
    const StridedLoop loop = make_loop(shape, {&out, &c, &x, &y});
    if (backend == Backend::CPU) cpu::where(dt, loop);
    else EMBER_CUDA(cuda::where(dt, loop, stream_of(out)));
  }
  if (needs_grad({&a, &b})) {
    auto node = record(OpId::Where, {&a, &b}, {&out});
    node->save("condition", condition);
  }
  return out;
}
Tensor where(const Tensor& c, Scalar a, const Tensor& b) { return where(c, scalar_tensor(a), b); }
Tensor where(const Tensor& c, const Tensor& a, Scalar b) { return where(c, a, scalar_tensor(b)); }
Tensor where(const Tensor& c, Scalar a, Scalar b) { return where(c, scalar_tensor(a), scalar_tensor(b)); }

// clamp composes maximum and minimum; with min > max every element becomes max, as in PyTorch.
Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max) {
  if (!min && !max) throw ValueError("clamp: at least one of 'min' or 'max' must not be None");
  Tensor r = min ? maximum(a, *min) : a;
  return max ? minimum(r, *max) : r;
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const { return ember::clamp(*this, min, max); }
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  return copy_(ember::clamp(*this, min, max));
}

}  // namespace ember
