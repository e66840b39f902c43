// Front-ends of the ops that pick slices of a tensor by an index tensor: take (the
// ONNX Gather / numpy.take form: any index shape, negative indices wrap),
// index_select (PyTorch's: a vector index), embedding (rows of a table), and
// take_backward, their shared gradient (a scatter-add into zeros). All record one
// node, Take, which saves the index as checked int64 positions and the dim.
#include "kernels/cpu/take.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

// The index as flat int64 positions in [0, size) on `device`. Negative entries
// count from the end when `wrap` (take), and are out of bounds otherwise (as
// PyTorch's index_select and embedding). The check reads the index on the host, so
// a CUDA index is copied to the CPU once (a synchronizing copy).
Tensor checked_index(const char* op, const Tensor& index, int64_t dim, int64_t size, bool wrap,
                     const Device& device) {
  if (index.dtype() != kInt64 && index.dtype() != kInt32)
    throw DTypeError(msg(op, "(): expected index of dtype int64 or int32, got ", index.dtype()));
  if (index.device().is_meta()) return empty({index.numel()}, {kInt64, device});
  NoGradGuard no_grad;
  Tensor host = index.to(kCPU, kInt64).contiguous().reshape({-1});
  if (host.storage() == index.storage()) host = host.clone();  // normalised in place below
  int64_t* p = host.data_ptr<int64_t>();
  for (int64_t k = 0; k < host.numel(); ++k) {
    const int64_t v = p[k];
    const int64_t w = (wrap && v < 0) ? v + size : v;
    if (w < 0 || w >= size)
      throw IndexError(msg(op, "(): index ", v, " is out of bounds for dimension ", dim, " with size ", size));
    p[k] = w;
  }
  return host.to(device);
}

Tensor take_impl(const char* op, const Tensor& t, int64_t dim, const Tensor& index, bool wrap) {
  check_same_device(t, index);
  if (t.dim() == 0) throw IndexError(msg(op, "() cannot be applied to a 0-dim tensor."));
  const int64_t d = wrap_dim(dim, t.dim());
  const int64_t size = t.shape()[d];
  Tensor idx = checked_index(op, index, d, size, wrap, t.device());
  Shape out_shape(t.shape().begin(), t.shape().begin() + d);
  out_shape.insert(out_shape.end(), index.shape().begin(), index.shape().end());
  out_shape.insert(out_shape.end(), t.shape().begin() + d + 1, t.shape().end());
  Tensor out = empty(out_shape, {t.dtype(), t.device()});
  if (const OpBackend backend = backend_of(op, t); backend != Backend::None && out.numel() > 0) {
    NoGradGuard no_grad;
    Tensor x = t.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= t.shape()[i];
    for (int64_t i = d + 1; i < t.dim(); ++i) inner *= t.shape()[i];
    if (backend == Backend::CPU)
      cpu::take(t.element_size(), outer, size, inner, idx.data_ptr<int64_t>(), idx.numel(), x.data_ptr(),
                out.data_ptr());
    else
      EMBER_CUDA(cuda::take(t.element_size(), outer, size, inner, idx.data_ptr<int64_t>(), idx.numel(), x.data_ptr(),
                            out.data_ptr(), stream_of(t)));
  }
  if (needs_grad({&t})) {
    auto node = record(OpId::Take, {&t}, {&out});
    node->save("index", idx);
    node->save("given_index", index);  // as passed (shape, negatives): onnx::save writes Gather from it
    node->attrs = DimAttrs{d};
  }
  return out;
}

}  // namespace

Tensor take(const Tensor& t, int64_t dim, const Tensor& index) { return take_impl("take", t, dim, index, true); }

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  if (index.dim() > 1) throw IndexError("index_select(): Index is supposed to be a vector");
  return take_impl("index_select", t, dim, index.reshape({-1}), false);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  if (weight.dim() != 2)
    throw ShapeError(msg("embedding(): expected a 2-D weight [num_embeddings, embedding_dim], got ",
                         shape_str(weight.shape())));
  return take_impl("embedding", weight, 0, indices, false);
}

Tensor take_backward(const Tensor& grad, const Shape& input_shape, int64_t dim, const Tensor& index) {
  if (is_half(grad.dtype()))  // summed in float32, rounded once
    return take_backward(grad.to(kFloat32), input_shape, dim, index).to(grad.dtype());
  check_same_device(grad, index);
  if (index.dtype() != kInt64)
    throw DTypeError(msg("take_backward(): expected index of dtype int64, got ", index.dtype()));
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(input_shape.size()));
  Tensor gx = empty(input_shape, {grad.dtype(), grad.device()});
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= input_shape[i];
  for (int64_t i = d + 1; i < static_cast<int64_t>(input_shape.size()); ++i) inner *= input_shape[i];
  const int64_t n_index = index.numel();
  if (grad.numel() != outer * n_index * inner)
    throw ShapeError(msg("take_backward(): grad of shape ", shape_str(grad.shape()), " does not match input shape ",
                         shape_str(input_shape), " with ", n_index, " indices along dim ", d));
  if (const OpBackend backend = backend_of("take_backward", grad); backend != Backend::None && gx.numel() > 0) {
    NoGradGuard no_grad;
    Tensor g = grad.contiguous(), idx = index.contiguous();
    if (backend == Backend::CPU)
      cpu::take_backward(grad.dtype(), outer, input_shape[d], inner, idx.data_ptr<int64_t>(), n_index, g.data_ptr(),
                         gx.data_ptr());
    else
      EMBER_CUDA(cuda::take_backward(grad.dtype(), outer, input_shape[d], inner, idx.data_ptr<int64_t>(), n_index,
                                     g.data_ptr(), gx.data_ptr(), stream_of(grad)));
  }
  return gx;
}

}  // namespace ember
