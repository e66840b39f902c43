// t[idx] and t[idx] = value, as PyTorch reads them. Ints select, slices slice, None
// inserts a dim and ... stands for the dims not named: all views (basic indexing).
// Tensors, lists and NumPy arrays are index tensors (int64/int32 positions, or bool
// masks): the basic part is applied first, then the C++ library's index /
// index_put_ (tensor/ops.h) with each index tensor at the dim it stands for.
// Ints (and 0-dim integer tensors) apply before the index tensors (PyTorch's order,
// not NumPy's), so t[0, :, [1, 2]] has shape [t.shape[1], 2].
#include <pybind11/numpy.h>

#include "bindings.h"

namespace ember::python {
namespace {

std::optional<int64_t> opt_int(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<int64_t>();
}

// An int, or an object that is one (NumPy's integer scalars), but not a bool.
bool is_int(py::handle h) {
  if (PyBool_Check(h.ptr())) return false;
  if (PyLong_Check(h.ptr())) return true;
  return PyIndex_Check(h.ptr()) && !py::isinstance<Tensor>(h) && !py::isinstance<py::array>(h);
}

// An index item that names positions: a tensor, a list (nested) or a NumPy array.
std::optional<Tensor> index_tensor(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (py::isinstance<py::array>(h)) {
    // Integers of any width are positions (PyTorch reads them as int64); uint8 and
    // bool arrays are masks.
    py::array a = py::reinterpret_borrow<py::array>(h);
    const char kind = a.dtype().kind();
    if ((kind == 'i' || kind == 'u') && !(kind == 'u' && a.itemsize() == 1)) a = a.attr("astype")("int64");
    return data_to_tensor(a);
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    Tensor t = data_to_tensor(h);
    if (t.numel() == 0 && is_floating(t.dtype())) t = t.to(kInt64);  // t[[]]: no positions
    return t;
  }
  return std::nullopt;
}

bool is_mask(const Tensor& x) { return x.dtype() == kBool || x.dtype() == kUInt8; }

// A 0-dim integer index (not a mask) is an int: PyTorch selects with it (a view).
bool is_int_tensor(const Tensor& x) { return x.dim() == 0 && !is_floating(x.dtype()) && x.dtype() != kBool; }

// PyTorch 1.13 reads a short list holding a sequence, tensor, slice, ... or None as
// a tuple of indices (t[[[0, 1], [1, 2]]] is t[[0, 1], [1, 2]]), as NumPy once did.
bool list_as_tuple(py::handle idx) {
  if (!py::isinstance<py::list>(idx) || py::len(idx) >= 32) return false;
  for (py::handle it : idx)
    if (py::isinstance<Tensor>(it) || py::isinstance<py::list>(it) || py::isinstance<py::tuple>(it) ||
        py::isinstance<py::array>(it) || PySlice_Check(it.ptr()) || it.is(py::ellipsis()) || it.is_none())
      return true;
  return false;
}

// The basic part of an index applied (a view of t) and the index tensors, one entry
// per dim of that view they start at (undefined entries keep a dim whole).
struct Split {
  Tensor view;
  std::vector<Tensor> tensors;
};

Split split(const Tensor& t, py::handle idx) {
  py::tuple items = py::isinstance<py::tuple>(idx) ? py::reinterpret_borrow<py::tuple>(idx)
                    : list_as_tuple(idx)           ? py::tuple(py::reinterpret_borrow<py::list>(idx))
                                                   : py::make_tuple(idx);
  std::vector<std::optional<Tensor>> as_tensor;
  int64_t named = 0, ellipses = 0;  // dims the items other than None, ... and bools consume
  for (py::handle it : items) {
    as_tensor.push_back(is_int(it) || it.is_none() || it.is(py::ellipsis()) || PySlice_Check(it.ptr()) ||
                                PyBool_Check(it.ptr())
                            ? std::nullopt
                            : index_tensor(it));
    const auto& x = as_tensor.back();
    if (x) named += is_mask(*x) ? x->dim() : 1;
    else if (it.is(py::ellipsis())) ++ellipses;
    else if (!it.is_none() && !PyBool_Check(it.ptr())) ++named;
  }
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')");
  bool advanced = false;
  for (size_t i = 0; i < items.size(); ++i)
    advanced = advanced || (as_tensor[i] && !is_int_tensor(*as_tensor[i])) || PyBool_Check(items[i].ptr());
  if (named > t.dim()) throw IndexError("too many indices for tensor of dimension " + std::to_string(t.dim()));
  Split s{t, {}};
  int64_t dim = 0, consumed = 0, covered = 0;  // covered: dims the entries of s.tensors stand for
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle it = items[i];
    if (as_tensor[i] && is_int_tensor(*as_tensor[i])) {
      const Tensor& x = *as_tensor[i];
      s.view = s.view.select(dim, nogil([&] { return x.item().to_int(); }));
      ++consumed;
    } else if (PyBool_Check(it.ptr())) {
      // True adds a dim of size 1 and picks it, False one of size 0 (PyTorch).
      s.view = s.view.unsqueeze(dim);
      for (; covered < dim; ++covered) s.tensors.push_back(Tensor());
      s.tensors.push_back(it.ptr() == Py_True ? zeros({1}, kInt64) : zeros({0}, kInt64));
      ++covered;
      ++dim;
    } else if (as_tensor[i]) {
      const Tensor& x = *as_tensor[i];
      const int64_t k = is_mask(x) ? x.dim() : 1;
      for (; covered < dim; ++covered) s.tensors.push_back(Tensor());
      s.tensors.push_back(x);
      covered += k;
      dim += k;
      consumed += k;
    } else if (it.is_none()) {
      s.view = s.view.unsqueeze(dim++);
    } else if (it.is(py::ellipsis())) {
      // The dims of the view from `dim` on are the original ones not yet indexed;
      // the items still to come take the last of them.
      dim += (s.view.dim() - dim) - (named - consumed);
    } else if (is_int(it)) {
      s.view = s.view.select(dim, it.cast<int64_t>());
      ++consumed;
    } else if (PySlice_Check(it.ptr())) {
      const py::object step = it.attr("step");
      const int64_t st = step.is_none() ? 1 : step.cast<int64_t>();
      // Beside index tensors a whole dim (:) makes no view, so y[:, idx] = v on a
      // tensor that requires grad is an in-place op on y itself, which autograd
      // takes (it refuses in-place ops on views of such tensors).
      if (!advanced || !it.attr("start").is_none() || !it.attr("stop").is_none() || st != 1)
        s.view = s.view.slice(dim, opt_int(it.attr("start")), opt_int(it.attr("stop")), st);
      ++dim;
      ++consumed;
    } else {
      throw py::type_error("ember indexes with ints, slices, None, ..., tensors, lists and NumPy arrays; "
                           "indexing with " + std::string(py::str(py::type::of(it).attr("__name__"))) +
                           " is not supported");
    }
  }
  return s;
}

}  // namespace

Tensor get_item(const Tensor& t, py::handle idx) {
  Split s = split(t, idx);
  if (s.tensors.empty()) return s.view;
  return nogil([&] { return index(s.view, s.tensors); });
}

void set_item(Tensor& t, py::handle idx, py::handle value) {
  Split s = split(t, idx);
  if (s.tensors.empty() && is_scalar(value)) {
    const Scalar v = to_scalar(value);
    nogil([&] { s.view.fill_(v); return 0; });
    return;
  }
  Tensor src = is_scalar(value) ? full({}, to_scalar(value), {t.dtype(), kCPU})
               : py::isinstance<Tensor>(value) ? value.cast<Tensor>()
                                               : data_to_tensor(value);
  // Leading dims of size 1 of the value are dropped first (PyTorch's setitem), so
  // t[0] = ones(1, n) writes a row of n.
  while (src.dim() > 0 && src.size(0) == 1) src = src.select(0, 0);
  nogil([&] {
    if (s.tensors.empty()) s.view.copy_(src);
    else index_put_(s.view, s.tensors, src);
    return 0;
  });
}

}  // namespace ember::python
