// cat and stack: the result's dtype is the promotion of all inputs; each input is
// copied (with conversion) into its slice of the output.
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("cat(): expected a non-empty list of Tensors");
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : tensors) ptrs.push_back(&t);
  check_same_device(ptrs);
  // PyTorch skips 1-D empty tensors (legacy behaviour that code relies on).
  std::vector<const Tensor*> parts;
  for (const Tensor& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(&t);
  DType dt = tensors[0].dtype();
  for (const Tensor& t : tensors) dt = promote_types(dt, t.dtype());
  if (parts.empty()) return empty({0}, {dt, tensors[0].device()});
  const Tensor& ref = *parts[0];
  if (ref.dim() == 0) throw ShapeError("zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref.dim());
  Shape shape = ref.shape();
  shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    if (t.dim() != ref.dim())
      throw ShapeError(msg("Tensors must have same number of dimensions: got ", ref.dim(), " and ", t.dim()));
    for (int64_t j = 0; j < ref.dim(); ++j)
      if (j != d && t.shape()[j] != ref.shape()[j])
        throw ShapeError(msg("Sizes of tensors must match except in dimension ", d, ". Expected size ",
                             ref.shape()[j], " but got size ", t.shape()[j], " for tensor number ", i,
                             " in the list."));
    shape[d] = size_add(shape[d], t.shape()[d], "cat()");
  }
  Tensor out = empty(shape, {dt, ref.device()});
  {
    NoGradGuard no_grad;
    int64_t offset = 0;
    for (const Tensor* t : parts) {
      out.narrow(d, offset, t->shape()[d]).copy_(*t);
      offset += t->shape()[d];
    }
  }
  if (needs_grad(tensors)) {
    auto node = record(OpId::Cat, ptrs, {&out});
    node->attrs = DimAttrs{d};
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("stack expects a non-empty TensorList");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != tensors[0].shape())
      throw ShapeError(msg("stack expects each tensor to be equal size, but got ", shape_str(tensors[0].shape()),
                           " at entry 0 and ", shape_str(tensors[i].shape()), " at entry ", i));
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

}  // namespace ember
