// Python values to Ember's argument types (bindings.h): shapes, pairs, scalars,
// dtypes and devices, accepted in the forms PyTorch accepts.
#include "bindings.h"

namespace ember::python {

Shape to_shape(py::handle obj) {
  if (py::isinstance<py::int_>(obj)) return {obj.cast<int64_t>()};
  Shape s;
  for (py::handle h : obj) s.push_back(h.cast<int64_t>());
  return s;
}

Shape shape_from_args(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return to_shape(args[0]);
  Shape s;
  for (py::handle h : args) s.push_back(h.cast<int64_t>());
  return s;
}

Pair to_pair(py::handle obj) {
  if (py::isinstance<py::int_>(obj)) {
    const int64_t v = obj.cast<int64_t>();
    return {v, v};
  }
  const Shape s = to_shape(obj);
  if (s.size() != 2) throw ValueError("expected an int or a pair of ints, got " + std::to_string(s.size()) + " values");
  return {s[0], s[1]};
}

bool is_scalar(py::handle obj) {
  return PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr());
}

Scalar to_scalar(py::handle obj) {
  if (PyBool_Check(obj.ptr())) return Scalar(obj.ptr() == Py_True);
  if (PyLong_Check(obj.ptr())) return Scalar(obj.cast<int64_t>());
  if (PyFloat_Check(obj.ptr())) return Scalar(PyFloat_AS_DOUBLE(obj.ptr()));
  // NumPy scalars and anything else with __float__/__index__.
  if (PyIndex_Check(obj.ptr())) return Scalar(obj.cast<int64_t>());
  return Scalar(obj.cast<double>());
}

py::object scalar_to_py(const Scalar& s) {
  if (s.is_bool()) return py::bool_(s.to_bool());
  if (s.is_integral()) return py::int_(s.to_int());
  return py::float_(s.to_double());
}

DType to_dtype(py::handle obj) {
  if (py::isinstance<py::str>(obj)) return parse_dtype(obj.cast<std::string>());
  return obj.cast<DType>();
}

Device to_device(py::handle obj) {
  if (py::isinstance<py::str>(obj)) return Device(obj.cast<std::string>());
  if (py::isinstance<py::int_>(obj)) return Device(DeviceType::CUDA, obj.cast<int>());
  return obj.cast<Device>();
}

}  // namespace ember::python
