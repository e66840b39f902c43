// PyTorch's advanced indexing, t[i0, i1, ...] with index tensors (ATen's index and
// index_put_), built on take. The index tensors are read on the host once: masks
// become the positions where they are true, negative positions wrap, every
// position is checked, and the indexed dims' positions fold into one flat position
// into those dims merged (row-major). Reading is then one take along the merged
// dim; writing gathers, for every position of the merged dim, the value that the
// last index entry naming it brings (or keeps the old one) and copies the block
// back through the view, so duplicates resolve deterministically: the last wins.
// A scalar written through one mask (x[x < 0] = 0) is a single where instead.
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

#include <algorithm>

namespace ember {
namespace {

// The indexed dims, their positions broadcast to one shape and folded into flat
// positions into the merged dims, and where the result puts them.
struct Plan {
  Shape dims;                  // the indexed dims of t, in order
  Shape broadcast;             // the index tensors' common shape B
  std::vector<int64_t> flat;   // numel(B) positions into the merged dims
  int64_t extent = 1;          // the merged dims' size
  int64_t at = 0;              // where B (and the merged dim) goes
  Shape perm;                  // t's dims with the indexed ones moved to `at`
};

Tensor host_int64(const Tensor& t) {
  NoGradGuard no_grad;
  return t.to(kCPU, kInt64).contiguous();
}

Plan plan_of(const char* op, const Tensor& t, const std::vector<Tensor>& indices) {
  // Masks become one int64 index per dim they cover.
  std::vector<Tensor> per_dim;  // one entry per dim of t covered so far (undefined: whole)
  for (const Tensor& ix : indices) {
    if (!ix.defined()) {
      per_dim.push_back(Tensor());
      continue;
    }
    const DType dt = ix.dtype();
    if (dt == kBool || dt == kUInt8) {
      if (ix.dim() == 0) throw IndexError(msg(op, ": a 0-dim bool index (True or False) is not supported"));
      const int64_t d0 = static_cast<int64_t>(per_dim.size());
      if (d0 + ix.dim() > t.dim()) throw IndexError(msg("too many indices for tensor of dimension ", t.dim()));
      for (int64_t j = 0; j < ix.dim(); ++j)
        if (ix.size(j) != t.size(d0 + j))
          throw IndexError(msg("The shape of the mask ", shape_str(ix.shape()), " at index ", j,
                               " does not match the shape of the indexed tensor ", shape_str(t.shape()), " at index ",
                               d0 + j));
      const Tensor m = host_int64(ix);
      const int64_t* mp = m.data_ptr<int64_t>();
      std::vector<std::vector<int64_t>> coords(static_cast<size_t>(ix.dim()));
      for (int64_t i = 0; i < m.numel(); ++i) {
        if (!mp[i]) continue;
        for (int64_t j = ix.dim() - 1, rest = i; j >= 0; --j) {
          coords[size_t(j)].push_back(rest % ix.size(j));
          rest /= ix.size(j);
        }
      }
      for (auto& c : coords) {
        const int64_t n = static_cast<int64_t>(c.size());
        per_dim.push_back(tensor(c, {n}));
      }
    } else if (dt == kInt64 || dt == kInt32) {
      if (static_cast<int64_t>(per_dim.size()) >= t.dim())
        throw IndexError(msg("too many indices for tensor of dimension ", t.dim()));
      per_dim.push_back(ix);
    } else {
      throw IndexError("tensors used as indices must be long, int, byte or bool tensors");
    }
  }
  if (static_cast<int64_t>(per_dim.size()) > t.dim())  // whole dims past the last one
    throw IndexError(msg("too many indices for tensor of dimension ", t.dim()));
  Plan p;
  std::vector<Tensor> idx;
  for (int64_t d = 0; d < static_cast<int64_t>(per_dim.size()); ++d)
    if (per_dim[size_t(d)].defined()) {
      p.dims.push_back(d);
      idx.push_back(per_dim[size_t(d)]);
    }
  if (idx.empty()) throw IndexError(msg(op, ": no index tensor given"));
  for (const Tensor& ix : idx) {
    Shape b;
    try {
      b = broadcast_shapes(p.broadcast, ix.shape());
    } catch (const ShapeError&) {
      std::string shapes;
      for (const Tensor& j : idx) shapes += (shapes.empty() ? "" : ", ") + shape_str(j.shape());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes);
    }
    p.broadcast = b;
  }
  // Adjacent indexed dims keep their place; separated ones go to the front.
  const int64_t m = static_cast<int64_t>(p.dims.size());
  p.at = p.dims.back() - p.dims.front() == m - 1 ? p.dims.front() : 0;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (std::find(p.dims.begin(), p.dims.end(), d) == p.dims.end()) p.perm.push_back(d);
  p.perm.insert(p.perm.begin() + p.at, p.dims.begin(), p.dims.end());
  // Flat positions: each index expanded to B, wrapped, checked, then folded.
  int64_t count = 1;
  for (int64_t s : p.broadcast) count *= s;
  p.flat.assign(static_cast<size_t>(count), 0);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t d = p.dims[size_t(i)], size = t.size(d);
    const Tensor h = host_int64(idx[size_t(i)]).expand(p.broadcast).contiguous();
    const int64_t* hp = h.data_ptr<int64_t>();
    for (int64_t k = 0; k < count; ++k) {
      const int64_t v = hp[k], w = v < 0 ? v + size : v;
      if (w < 0 || w >= size)
        throw IndexError(msg("index ", v, " is out of bounds for dimension ", d, " with size ", size));
      p.flat[size_t(k)] = p.flat[size_t(k)] * size + w;
    }
    p.extent *= size;
  }
  return p;
}

// t permuted as the plan says, its indexed dims merged into one: [.., extent, ..].
Shape merged_shape(const Tensor& permuted, const Plan& p) {
  const int64_t m = static_cast<int64_t>(p.dims.size());
  Shape s(permuted.shape().begin(), permuted.shape().begin() + p.at);
  s.push_back(p.extent);
  s.insert(s.end(), permuted.shape().begin() + p.at + m, permuted.shape().end());
  return s;
}

// t[mask] = scalar, the common form (x[x < 0] = 0), with dims left whole around the
// one mask: a single where over t, no positions, no host read (on CUDA, no wait).
// Returns false for any other form, and for a mask that does not fit (the general
// path raises the error).
bool put_scalar_through_mask(Tensor& t, const std::vector<Tensor>& indices, const Tensor& values) {
  if (values.numel() != 1) return false;
  int64_t lead = 0, defined = 0;
  const Tensor* mask = nullptr;
  for (const Tensor& ix : indices) {
    if (ix.defined()) {
      mask = &ix;
      ++defined;
    } else if (!mask) {
      ++lead;
    }
  }
  if (defined != 1 || (mask->dtype() != kBool && mask->dtype() != kUInt8) || mask->dim() == 0 ||
      static_cast<int64_t>(indices.size()) - 1 + mask->dim() > t.dim())
    return false;
  for (int64_t j = 0; j < mask->dim(); ++j)
    if (mask->size(j) != t.size(lead + j)) return false;
  Shape spread(static_cast<size_t>(lead), 1);
  spread.insert(spread.end(), mask->shape().begin(), mask->shape().end());
  spread.resize(static_cast<size_t>(t.dim()), 1);
  const Tensor m = (mask->dtype() == kBool ? *mask : ne(*mask, 0)).to(t.device()).reshape(spread);
  t.copy_(where(m, values.to(t.device(), t.dtype()).reshape({}), t));
  return true;
}

}  // namespace

Tensor index(const Tensor& t, const std::vector<Tensor>& indices) {
  const Plan p = plan_of("index", t, indices);
  const Tensor permuted = t.permute(p.perm);
  const Tensor merged = permuted.reshape(merged_shape(permuted, p));
  const int64_t count = static_cast<int64_t>(p.flat.size());
  return take(merged, p.at, tensor(p.flat, {count}).reshape(p.broadcast).to(t.device()));
}

Tensor& index_put_(Tensor& t, const std::vector<Tensor>& indices, const Tensor& values) {
  // An expanded tensor (a stride of 0 over a dim of 2 or more) would take several
  // values into one element; whichever was written last would silently win.
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1)
      throw ValueError("unsupported operation: more than one element of the written-to tensor refers to a single "
                       "memory location. Please clone() the tensor before performing the operation.");
  if (put_scalar_through_mask(t, indices, values)) return t;
  const Plan p = plan_of("index_put_", t, indices);
  const Tensor permuted = t.permute(p.perm);
  const Shape merged = merged_shape(permuted, p);
  // The indexing result's shape, which values must broadcast to.
  const int64_t m = static_cast<int64_t>(p.dims.size());
  Shape result(permuted.shape().begin(), permuted.shape().begin() + p.at);
  result.insert(result.end(), p.broadcast.begin(), p.broadcast.end());
  result.insert(result.end(), permuted.shape().begin() + p.at + m, permuted.shape().end());
  bool fits = values.dim() <= static_cast<int64_t>(result.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i) {
    const int64_t v = values.size(-i), r = result[result.size() - size_t(i)];
    fits = v == r || v == 1;
  }
  if (!fits)
    throw ShapeError(msg("shape mismatch: value tensor of shape ", shape_str(values.shape()),
                         " cannot be broadcast to indexing result of shape ", shape_str(result)));
  // For each position of the merged dim, the last entry of the index naming it.
  std::vector<int64_t> source(static_cast<size_t>(p.extent), -1);
  for (size_t k = 0; k < p.flat.size(); ++k) source[size_t(p.flat[k])] = static_cast<int64_t>(k);
  std::vector<int64_t> from(source.size());
  for (size_t j = 0; j < source.size(); ++j) from[j] = std::max<int64_t>(source[j], 0);
  Shape one(merged.size(), 1);
  one[size_t(p.at)] = p.extent;
  Tensor hit = ne(tensor(source, {p.extent}), -1).reshape(one).to(t.device());
  // values laid out as the result with B flattened: [.., numel(B), ..].
  Shape flat_result(result.begin(), result.begin() + p.at);
  flat_result.push_back(static_cast<int64_t>(p.flat.size()));
  flat_result.insert(flat_result.end(), result.begin() + p.at + static_cast<int64_t>(p.broadcast.size()), result.end());
  const Tensor v = values.to(t.device(), t.dtype()).expand(result).reshape(flat_result);
  Tensor gathered = p.flat.empty() ? permuted.reshape(merged) : take(v, p.at, tensor(from, {p.extent}).to(t.device()));
  // Written into t itself (not through a permuted view): autograd treats it as any
  // in-place copy_ into t.
  Shape inverse(p.perm.size());
  for (size_t i = 0; i < p.perm.size(); ++i) inverse[size_t(p.perm[i])] = static_cast<int64_t>(i);
  t.copy_(where(hit, gathered, permuted.reshape(merged)).reshape(permuted.shape()).permute(inverse));
  return t;
}

}  // namespace ember
