// The tensor operations as free functions (ember::add(a, b), ember::sum(t, {0})),
// the operator overloads, and tensor creation. Each op front-end checks devices,
// dtypes and shapes, infers the result's shape and dtype (broadcasting and type
// promotion as PyTorch), allocates, and dispatches to the kernel for the device.
#pragma once

#include "kernels/base/export.h"

#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/base/ops.def.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember {

struct TensorOptions {
  DType dtype = kFloat32;
  Device device = kCPU;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype(d) {}
  TensorOptions(Device dev) : device(dev) {}
  TensorOptions(DType d, Device dev) : dtype(d), device(dev) {}
  TensorOptions with_dtype(DType d) const { return {d, device}; }
  TensorOptions with_device(Device dev) const { return {dtype, dev}; }
};

// ---- creation ----
Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor empty_strided(const Shape& shape, const Shape& strides, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, Scalar value, TensorOptions options = {});
// full() without options takes the value's kind: bool, int64 or float32.
Tensor full(const Shape& shape, Scalar value, std::nullopt_t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
// [start, end) with step; int64 when all three are integers, float32 otherwise
// (unless options say otherwise).
Tensor arange(Scalar end);
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options);
// Uniform [0, 1) and standard normal, from `gen` (the default generator if null).
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
// From host values, with the given shape (1-D when omitted); the dtype is T's
// unless options say otherwise (as libtorch's torch::tensor keeps the C++ type).
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape = {}, TensorOptions options = TensorOptions(dtype_of_v<T>));
Tensor tensor(std::initializer_list<float> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<std::initializer_list<float>> rows, TensorOptions options = {});
// A view of caller memory; nothing is copied and the memory must outlive the
// tensor unless `deleter` frees it. Strides default to contiguous.
Tensor from_blob(void* data, const Shape& shape, DType dtype, const Shape& strides = {},
                 std::function<void(void*)> deleter = nullptr, Device device = kCPU);
// A 0-dim tensor holding a C++ number, marked as a wrapped number for promotion.
Tensor scalar_tensor(Scalar value, Device device = kCPU);

// ---- elementwise ----
#define EMBER_X(Name, name, ...) Tensor name(const Tensor& a);
EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
#define EMBER_X(Name, name, ...)                          \
  Tensor name(const Tensor& a, const Tensor& b);          \
  Tensor name(const Tensor& a, Scalar b);                 \
  Tensor name(Scalar a, const Tensor& b);                 \
  Tensor& name##_(Tensor& self, const Tensor& other);     \
  Tensor& name##_(Tensor& self, Scalar other);
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
// out = op(a, b) written into an existing tensor (PyTorch's `out=`): no allocation.
Tensor& binary_out(BinaryOp op, Tensor& out, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, Scalar a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
Tensor where(const Tensor& condition, Scalar a, Scalar b);
Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max);

// ---- reductions ----
// An empty `dims` reduces over every dimension.
Tensor sum(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor var(const Tensor& a, const Shape& dims = {}, int64_t correction = 1, bool keepdim = false);
// The vector p-norm (torch.linalg.vector_norm): p may be any number, inf or -inf.
Tensor norm(const Tensor& a, double p = 2, const Shape& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);

// ---- linear algebra and joining ----
Tensor matmul(const Tensor& a, const Tensor& b);
// beta * input + alpha * (mat1 . mat2), as torch.addmm: mat1 and mat2 2-D, input
// broadcastable to the product's shape (a Linear's or an ONNX Gemm's bias). Without
// autograd, on the CPU in float32 or float64, the bias is the GEMM's starting C
// (one pass, no temporary); otherwise it is matmul, mul and add. The two paths add
// the bias at different points of the sum (for k above one depth block, before the
// later blocks), so their results may differ in the last bits; and with alpha == 0
// the fused path, like BLAS, does not carry a NaN of mat1 or mat2 into the result.
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, double beta = 1.0, double alpha = 1.0);
// x . weight^T + bias (bias may be undefined), as torch.nn.functional.linear:
// weight [out, in], x [..., in]. On the CPU, for a 2-D x in float32, float64 or
// bfloat16, one GEMM started from the bias rows, recorded as one Linear node
// (tensor/linear.cpp; bfloat16 adds the bias to the float32 sums and rounds once);
// otherwise addmm(bias, x, weight.t()) for a 2-D x, else matmul then add.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// relu(linear(x, weight, bias)), the same values and gradients. Where linear is one
// op, relu runs on the GEMM's output in place and the node applies relu's gradient;
// otherwise it is the two ops.
Tensor linear_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- indexing by an index tensor (int64 or int32) ----
// ONNX Gather, numpy.take(t, index, axis=dim): slices of t along `dim` picked by an
// index of any shape; the result's shape is t.shape[:dim] + index.shape +
// t.shape[dim+1:] (a 0-dim index drops the dim, like select). Negative indices count
// from the end; anything outside [-size, size) raises IndexError. Not torch.take
// (flat indices) nor torch.gather (an index as large as the input).
Tensor take(const Tensor& t, int64_t dim, const Tensor& index);
// PyTorch's index_select: index is a vector (or 0-dim, read as one element), the
// result keeps `dim` with index.numel() entries; indices must lie in [0, size).
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
// PyTorch's F.embedding without padding_idx or max_norm: rows of weight
// [num_embeddings, embedding_dim] picked by indices of any shape (in [0,
// num_embeddings)); the result is indices.shape + [embedding_dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// PyTorch's advanced indexing (tensor/index.cpp), what t[i0, i1, ...] does with index
// tensors: indices[d] applies to dim d of t, an undefined Tensor keeps that dim whole
// (":"). An int64 or int32 index picks positions along its dim (negative ones count
// from the end); a bool (or uint8) mask covers as many dims as it has and picks the
// positions where it is true. The index tensors broadcast to one shape B; adjacent
// indexed dims are replaced by B where they stand, separated ones by B at the front.
// index returns a copy (differentiable, through take); index_put_ writes values,
// broadcast to index's result shape, to those positions of t and returns t; where
// an index names a position twice, the last value wins. index_put_ rebuilds the
// indexed block (its cost is t's size) and refuses an expanded t (ValueError).
Tensor index(const Tensor& t, const std::vector<Tensor>& indices);
Tensor& index_put_(Tensor& t, const std::vector<Tensor>& indices, const Tensor& values);
// The gradient of take: zeros of input_shape, then grad's slices added at the
// positions index (int64, flat, in [0, input_shape[dim]) as take saved them) names,
// in order (torch.index_add into zeros). Entries outside that range are skipped.
Tensor take_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, const Tensor& index);

// ---- operators ----
Tensor operator-(const Tensor& a);
#define EMBER_X(op, name)                                                          \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return name(a, b); } \
  inline Tensor operator op(const Tensor& a, Scalar b) { return name(a, b); }        \
  inline Tensor operator op(Scalar a, const Tensor& b) { return name(a, b); }
EMBER_X(+, add) EMBER_X(-, sub) EMBER_X(*, mul) EMBER_X(/, div)
EMBER_X(==, eq) EMBER_X(!=, ne) EMBER_X(<, lt) EMBER_X(<=, le) EMBER_X(>, gt) EMBER_X(>=, ge)
#undef EMBER_X
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return div_(a, b); }
inline Tensor& operator+=(Tensor& a, Scalar b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, Scalar b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, Scalar b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, Scalar b) { return div_(a, b); }

// ---- helpers shared by front-ends ----
// The broadcast shape of two shapes, or ShapeError with PyTorch's wording.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// PyTorch's result_type: tensors with dims beat 0-dim tensors beat wrapped numbers,
// unless a lower tier brings a higher category (bool < integral < floating).
DType result_type(const std::vector<Tensor>& operands);

}  // namespace ember

EMBER_API_END

#include "tensor/tensor_from_values.h"
