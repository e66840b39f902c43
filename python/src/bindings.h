// What the binding's files share: the init function of each part of ember._C and
// the conversions between Python values and Ember's argument types (shapes, pairs,
// scalars, dtypes, devices). Every binding only translates; the behaviour is the
// C++ library's.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <utility>

#include "ember.h"

namespace py = pybind11;

namespace ember::python {

void init_errors(py::module_& m);
void init_tensor(py::module_& m);
void init_tensor_ops(py::module_& m);
void init_factories(py::module_& m);
void init_nn(py::module_& m);
void init_functional(py::module_& m);
void init_optim(py::module_& m);
void init_data(py::module_& m);
void init_extras(py::module_& m);
void init_dist(py::module_& m);

// An int or a sequence of ints (PyTorch accepts both for sizes and dims).
Shape to_shape(py::handle obj);
// Sizes given as f(2, 3) or f((2, 3)) or f([2, 3]).
Shape shape_from_args(const py::args& args);
// An int n (meaning (n, n)) or a pair.
Pair to_pair(py::handle obj);
// A Python bool, int or float as Ember's Scalar (which keeps the kind for promotion).
Scalar to_scalar(py::handle obj);
bool is_scalar(py::handle obj);
py::object scalar_to_py(const Scalar& s);
// A dtype object, or a name such as "float32".
DType to_dtype(py::handle obj);
// A Device, a string ("cuda:0") or an int (a CUDA index, as PyTorch).
Device to_device(py::handle obj);

// ember.tensor(data): a list (nested), NumPy array, scalar or tensor as a new tensor.
Tensor data_to_tensor(py::handle data);
// t[idx] and t[idx] = value (indexing.cpp).
Tensor get_item(const Tensor& t, py::handle idx);
void set_item(Tensor& t, py::handle idx, py::handle value);

// Runs fn with the GIL released: kernels and backward let other Python threads run.
template <class F>
auto nogil(F&& fn) {
  py::gil_scoped_release release;
  return fn();
}

}  // namespace ember::python
