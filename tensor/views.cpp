// Views: new sizes/strides/offset over the same storage, never a copy (reshape
// copies only when no view can express the result, as in PyTorch).
#include <algorithm>
#include <numeric>

#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

Tensor make_view(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  (void)checked_numel(sizes);  // expand({1 << 40, 1 << 40}) and the like: ShapeError
  auto impl = std::make_shared<TensorImpl>(t.impl());
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->wrapped_number = false;
  impl->autograd = nullptr;  // a view has its own place in the graph (see record_view)
  return Tensor(std::move(impl));
}

// Records a view op when `base` requires grad; the view remembers that it aliases
// such a tensor, so in-place writes to it can be refused (see binary_out).
Tensor record_view(OpId op, const Tensor& base, Tensor view, OpAttrs attrs = {}) {
  if (!needs_grad({&base})) return view;
  Tensor out = view;
  auto node = record(op, {&base}, {&out});
  node->attrs = std::move(attrs);
  out.impl().autograd->is_view_of_grad_tensor = true;
  return out;
}

// Resolves one -1 in `shape` against numel.
Shape infer_size(const Shape& shape, int64_t numel) {
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw ShapeError("only one dimension can be inferred");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ShapeError(msg("invalid shape dimension ", shape[i]));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      // No tensor has that many elements, so the shape cannot match this one.
      throw ShapeError(msg("shape '", shape_str(shape), "' is invalid for input of size ", numel));
    }
  }
  if (infer >= 0 && known != 0 && numel % known == 0) {
    out[infer] = numel / known;
    return out;
  }
  if (infer < 0 && known == numel) return out;
  throw ShapeError(msg("shape '", shape_str(shape), "' is invalid for input of size ", numel));
}

// Strides for viewing (sizes, strides) as `shape` without a copy, if possible:
// PyTorch's computeStride. Each run of old dims that is contiguous in memory
// ("a chunk") may be re-split freely; a new dim may not straddle two chunks.
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides, const Shape& shape) {
  const int64_t numel = std::accumulate(old_sizes.begin(), old_sizes.end(), int64_t{1}, std::multiplies<>());
  Shape out(shape.size());
  if (old_sizes.empty()) return contiguous_strides(shape);  // a scalar: every new dim is 1
  if (numel == 0) {
    if (old_sizes == shape) return old_strides;
    return contiguous_strides(shape);
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    if (d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  const Shape sizes = infer_size(shape, numel());
  auto st = view_strides(this->shape(), stride(), sizes);
  if (!st)
    throw ShapeError(
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead.");
  return record_view(OpId::View, *this, make_view(*this, sizes, *st, storage_offset()));
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape sizes = infer_size(shape, numel());
  if (auto st = view_strides(this->shape(), stride(), sizes))
    return record_view(OpId::View, *this, make_view(*this, sizes, *st, storage_offset()));
  return contiguous().view(sizes);
}

Tensor Tensor::permute(const Shape& dims) const {
  const int64_t n = dim();
  if (static_cast<int64_t>(dims.size()) != n)
    throw ShapeError(msg("permute(): number of dims don't match in permute: the tensor has ", n,
                         " dims but ", dims.size(), " were given"));
  Shape sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n);
    if (seen[d]) throw ShapeError("permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = shape()[d];
    strides[i] = stride()[d];
  }
  Shape wrapped(n);
  for (int64_t i = 0; i < n; ++i) wrapped[i] = wrap_dim(dims[i], n);
  return record_view(OpId::Permute, *this, make_view(*this, sizes, strides, storage_offset()), PermuteAttrs{wrapped});
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const int64_t n = dim();
  if (n == 0) {
    wrap_dim(dim0, 0);
    wrap_dim(dim1, 0);
    return record_view(OpId::View, *this, make_view(*this, shape(), stride(), storage_offset()));
  }
  const int64_t a = wrap_dim(dim0, n), b = wrap_dim(dim1, n);
  Shape perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::swap(perm[a], perm[b]);
  return permute(perm);
}

Tensor Tensor::t() const {
  if (dim() > 2) throw ShapeError(msg("t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D"));
  return dim() < 2 ? record_view(OpId::View, *this, make_view(*this, shape(), stride(), storage_offset()))
                    : transpose(0, 1);
}

Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  if (this->dim() == 0) throw IndexError("slice() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(dim, this->dim());
  if (step <= 0) throw ValueError("slice step must be positive");
  const int64_t size = shape()[d];
  auto clampi = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  const int64_t s = start ? clampi(*start) : 0;
  const int64_t e = std::max(s, end ? clampi(*end) : size);
  Shape sizes = shape(), strides = stride();
  sizes[d] = (e - s + step - 1) / step;
  strides[d] *= step;
  return record_view(OpId::Slice, *this, make_view(*this, sizes, strides, storage_offset() + s * stride()[d]),
                     SliceAttrs{d, s, step});
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  if (this->dim() == 0) throw IndexError("narrow() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(dim, this->dim());
  const int64_t size = shape()[d];
  if (start < -size || start > size)
    throw IndexError(msg("start out of range (expected to be in range of [", -size, ", ", size, "], but got ", start,
                         ")"));
  if (start < 0) start += size;
  if (length < 0) throw ValueError("narrow(): length must be non-negative.");
  if (start + length > size)
    throw IndexError(msg("start (", start, ") + length (", length, ") exceeds dimension size (", size, ")."));
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  if (this->dim() == 0) throw IndexError("select() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(dim, this->dim());
  const int64_t size = shape()[d];
  if (index < -size || index >= size)
    throw IndexError(msg("select(): index ", index, " out of range for tensor of size ", shape_str(shape()),
                         " at dimension ", dim));
  if (index < 0) index += size;
  Shape sizes = shape(), strides = stride();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return record_view(OpId::Select, *this, make_view(*this, sizes, strides, storage_offset() + index * stride()[d]),
                     SelectAttrs{d, index});
}

Tensor Tensor::expand(const Shape& target) const {
  const int64_t n = static_cast<int64_t>(target.size()), self_n = dim();
  if (n < self_n)
    throw ShapeError(msg("expand: the number of sizes provided (", n,
                         ") must be greater or equal to the number of dimensions in the tensor (", self_n, ")"));
  Shape sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t si = i - (n - self_n);
    const int64_t want = target[i];
    if (si < 0) {
      if (want < 0) throw ShapeError(msg("The expanded size of the tensor (", want,
                                         ") isn't allowed in a leading, non-existing dimension ", i));
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    const int64_t have = shape()[si];
    if (want == -1 || want == have) {
      sizes[i] = have;
      strides[i] = stride()[si];
    } else if (have == 1 && want >= 0) {
      sizes[i] = want;
      strides[i] = 0;
    } else {
      throw ShapeError(msg("The expanded size of the tensor (", want, ") must match the existing size (", have,
                           ") at non-singleton dimension ", i, ".  Target sizes: ", shape_str(target),
                           ".  Tensor sizes: ", shape_str(shape())));
    }
  }
  return record_view(OpId::Expand, *this, make_view(*this, sizes, strides, storage_offset()));
}

Tensor Tensor::squeeze() const {
  Shape sizes, strides;
  for (int64_t i = 0; i < dim(); ++i)
    if (shape()[i] != 1) {
      sizes.push_back(shape()[i]);
      strides.push_back(stride()[i]);
    }
  return record_view(OpId::View, *this, make_view(*this, sizes, strides, storage_offset()));
}

Tensor Tensor::squeeze(int64_t dim) const {
  const int64_t d = wrap_dim(dim, this->dim());
  if (this->dim() == 0 || shape()[d] != 1)
    return record_view(OpId::View, *this, make_view(*this, shape(), stride(), storage_offset()));
  Shape sizes = shape(), strides = stride();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return record_view(OpId::View, *this, make_view(*this, sizes, strides, storage_offset()));
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  const int64_t d = wrap_dim(dim, this->dim() + 1);
  Shape sizes = shape(), strides = stride();
  const int64_t st = d < this->dim() ? stride()[d] * shape()[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return record_view(OpId::View, *this, make_view(*this, sizes, strides, storage_offset()));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = wrap_dim(start_dim, dim()), e = wrap_dim(end_dim, dim());
  if (s > e) throw ValueError("flatten() has invalid args: start_dim cannot come after end_dim");
  Shape sizes(shape().begin(), shape().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= shape()[i];
  sizes.push_back(n);
  sizes.insert(sizes.end(), shape().begin() + e + 1, shape().end());
  return reshape(sizes);
}

// The one view that can point anywhere: every element it can reach is checked
// against the storage, so a bad call raises instead of reading past the end.
Tensor Tensor::as_strided(const Shape& sizes, const Shape& strides, std::optional<int64_t> offset) const {
  if (sizes.size() != strides.size())
    throw ShapeError(msg("mismatch in length of strides and shape: ", sizes.size(), " sizes, ", strides.size(),
                         " strides"));
  const int64_t off = offset.value_or(storage_offset());
  int64_t hi = off;
  bool empty_view = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) throw ValueError("as_strided: negative sizes or strides are not supported");
    int64_t span = 0;
    if (sizes[i] == 0) empty_view = true;
    else if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) || __builtin_add_overflow(hi, span, &hi))
      throw IndexError("as_strided: the view reaches past the last element int64 can index");
  }
  const int64_t capacity = static_cast<int64_t>(storage()->nbytes() / element_size());
  if (off < 0 || (!empty_view && hi >= capacity))
    throw IndexError(msg("as_strided: the view reaches element ", hi, " but the storage holds ", capacity,
                         " elements"));
  if (needs_grad({this}))
    throw NotImplementedError(
        "as_strided: differentiating through as_strided is not supported; use it on a detached tensor or under "
        "NoGradGuard");
  return make_view(*this, sizes, strides, off);
}

}  // namespace ember
