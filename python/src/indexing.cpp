// t[idx] and t[idx] = value, as PyTorch reads them. Ints select, slices slice, None
// inserts a dim and ... stands for the dims not named: all views (basic indexing).
// Tensors, lists and NumPy arrays are index tensors (int64/int32 positions, or bool
// masks): the basic part is applied first, then the C++ library's index /
// index_put_ (tensor/ops.h) with each index tensor at the dim it stands for.
// Ints apply before the index tensors (PyTorch's order, not NumPy's), so
// t[0, :, [1, 2]] has shape [t.shape[1], 2].
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

// An index item that names positions: a tensor, a list (nested) or a NumPy array;
// Python's True and False as 0-dim bool tensors.
std::optional<Tensor> index_tensor(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (PyBool_Check(h.ptr()) || py::isinstance<py::array>(h) || py::isinstance<py::list>(h) ||
      py::isinstance<py::tuple>(h)) {
    Tensor t = data_to_tensor(h);
    if (t.numel() == 0 && is_floating(t.dtype())) t = t.to(kInt64);  // t[[]]: no positions
    return t;
  }
  return std::nullopt;
}

// The basic part of an index applied (a view of t) and the index tensors, one entry
// per dim of that view they start at (undefined entries keep a dim whole).
struct Split {
  Tensor view;
  std::vector<Tensor> tensors;
};

Split split(const Tensor& t, py::handle idx) {
  py::tuple items = py::isinstance<py::tuple>(idx) ? py::reinterpret_borrow<py::tuple>(idx) : py::make_tuple(idx);
  std::vector<std::optional<Tensor>> as_tensor;
  int64_t named = 0;  // dims the items other than None and ... consume
  for (py::handle it : items) {
    as_tensor.push_back(is_int(it) || it.is_none() || it.is(py::ellipsis()) || PySlice_Check(it.ptr())
                            ? std::nullopt
                            : index_tensor(it));
    const auto& x = as_tensor.back();
    if (x) named += (x->dtype() == kBool || x->dtype() == kUInt8) ? x->dim() : 1;
    else if (!it.is_none() && !it.is(py::ellipsis())) ++named;
  }
  if (named > t.dim()) throw IndexError("too many indices for tensor of dimension " + std::to_string(t.dim()));
  Split s{t, {}};
  int64_t dim = 0, consumed = 0, covered = 0;  // covered: dims the entries of s.tensors stand for
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle it = items[i];
    if (as_tensor[i]) {
      const Tensor& x = *as_tensor[i];
      const int64_t k = (x.dtype() == kBool || x.dtype() == kUInt8) ? x.dim() : 1;
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
      s.view = s.view.slice(dim, opt_int(it.attr("start")), opt_int(it.attr("stop")),
                            step.is_none() ? 1 : step.cast<int64_t>());
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
  const Tensor src = is_scalar(value) ? full({}, to_scalar(value), {t.dtype(), kCPU})
                     : py::isinstance<Tensor>(value) ? value.cast<Tensor>()
                                                     : data_to_tensor(value);
  nogil([&] {
    if (s.tensors.empty()) s.view.copy_(src);
    else index_put_(s.view, s.tensors, src);
    return 0;
  });
}

}  // namespace ember::python
