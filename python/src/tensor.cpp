// ember.Tensor, ember.dtype and ember.device: the class, its properties, device
// and dtype conversion, NumPy export (sharing memory), tolist, indexing and the
// autograd methods. The math methods and operators are in tensor_ops.cpp.
#include <pybind11/numpy.h>

#include "bindings.h"

namespace ember::python {

namespace {

const char* numpy_name(DType d) {
  switch (d) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::BFloat16: break;
  }
  throw py::type_error("Got unsupported ScalarType BFloat16");  // PyTorch's message: NumPy has no bfloat16
}

// NumPy's view of a CPU tensor: same memory; the array's base keeps the storage alive.
py::array to_numpy(const Tensor& t) {
  if (t.requires_grad())
    throw py::type_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  if (!t.device().is_cpu())
    throw py::type_error("can't convert " + t.device().str() +
                         " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
  py::dtype dt(numpy_name(t.dtype()));
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.stride()) strides.push_back(static_cast<py::ssize_t>(s * static_cast<int64_t>(t.element_size())));
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, strides, t.numel() ? t.data_ptr() : nullptr, base);
}

template <class T>
py::object nested_list(const T* data, const Shape& shape, size_t dim, int64_t& pos) {
  if (dim == shape.size()) {
    const T v = data[pos++];
    if constexpr (std::is_same_v<T, bool>) return py::bool_(v);
    else if constexpr (std::is_integral_v<T>) return py::int_(static_cast<int64_t>(v));
    else return py::float_(static_cast<double>(v));
  }
  py::list out(shape[dim]);
  for (int64_t i = 0; i < shape[dim]; ++i) out[static_cast<size_t>(i)] = nested_list(data, shape, dim + 1, pos);
  return out;
}

py::object tolist(const Tensor& t) {
  Tensor c = t.detach().cpu();
  if (c.dtype() == kFloat16 || c.dtype() == kBFloat16) c = c.to(kFloat32);
  c = c.contiguous();
  int64_t pos = 0;
  switch (c.dtype()) {
    case DType::Float32: return nested_list(c.data_ptr<float>(), c.shape(), 0, pos);
    case DType::Float64: return nested_list(c.data_ptr<double>(), c.shape(), 0, pos);
    case DType::Int8: return nested_list(c.data_ptr<int8_t>(), c.shape(), 0, pos);
    case DType::UInt8: return nested_list(c.data_ptr<uint8_t>(), c.shape(), 0, pos);
    case DType::Int32: return nested_list(c.data_ptr<int32_t>(), c.shape(), 0, pos);
    case DType::Int64: return nested_list(c.data_ptr<int64_t>(), c.shape(), 0, pos);
    case DType::Bool: return nested_list(c.data_ptr<bool>(), c.shape(), 0, pos);
    case DType::Float16: case DType::BFloat16: break;
  }
  throw DTypeError("tolist: unexpected dtype");
}

Tensor to_with_args(const Tensor& t, const py::args& args, const py::kwargs& kwargs) {
  std::optional<Device> device;
  std::optional<DType> dtype;
  bool non_blocking = false;
  for (py::handle a : args) {
    if (py::isinstance<Tensor>(a)) {
      const Tensor& o = a.cast<const Tensor&>();
      device = o.device();
      dtype = o.dtype();
    } else if (py::isinstance<DType>(a)) {
      dtype = a.cast<DType>();
    } else if (py::isinstance<py::bool_>(a)) {
      non_blocking = a.cast<bool>();
    } else {
      device = to_device(a);
    }
  }
  if (kwargs.contains("device") && !kwargs["device"].is_none()) device = to_device(kwargs["device"]);
  if (kwargs.contains("dtype") && !kwargs["dtype"].is_none()) dtype = to_dtype(kwargs["dtype"]);
  if (kwargs.contains("non_blocking")) non_blocking = kwargs["non_blocking"].cast<bool>();
  py::gil_scoped_release release;
  if (device && dtype) return t.to(*device, *dtype);
  if (device) return t.to(*device, non_blocking);
  if (dtype) return t.to(*dtype);
  return t;
}

}  // namespace

void init_tensor(py::module_& m) {
  py::enum_<DType> dtype(m, "dtype");
#define EMBER_DTYPE(Name, name) dtype.value(name, DType::Name);
  EMBER_DTYPE(Float32, "float32") EMBER_DTYPE(Float64, "float64") EMBER_DTYPE(Float16, "float16")
  EMBER_DTYPE(BFloat16, "bfloat16") EMBER_DTYPE(Int8, "int8") EMBER_DTYPE(UInt8, "uint8")
  EMBER_DTYPE(Int32, "int32") EMBER_DTYPE(Int64, "int64") EMBER_DTYPE(Bool, "bool")
#undef EMBER_DTYPE
  // Assigned rather than def'd: py::enum_'s own __repr__/__str__ would win an overload.
  const py::cpp_function name([](DType d) { return "ember." + std::string(dtype_name(d)); }, py::is_method(dtype));
  dtype.attr("__repr__") = name;
  dtype.attr("__str__") = name;
  dtype.def_property_readonly("is_floating_point", [](DType d) { return is_floating(d); })
      .def_property_readonly("itemsize", [](DType d) { return dtype_size(d); });

  py::class_<Device>(m, "device")
      .def(py::init([](py::object spec) { return to_device(spec); }), py::arg("type"))
      .def(py::init([](const std::string& type, int index) { return Device(type + ":" + std::to_string(index)); }),
           py::arg("type"), py::arg("index"))
      .def_property_readonly("type", [](const Device& d) { return std::string(device_type_name(d.type())); })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object { if (d.index() < 0) return py::none(); return py::int_(d.index()); })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) {
        return "device(type='" + std::string(device_type_name(d.type())) + "'" +
               (d.index() >= 0 ? ", index=" + std::to_string(d.index()) : "") + ")";
      })
      .def("__eq__", [](const Device& a, py::object b) { return py::isinstance<Device>(b) || py::isinstance<py::str>(b)
                                                                   ? a == to_device(b) : false; })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.str())); });

  py::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", [](const Node& n) { return std::string(n.name()); })
      .def("__repr__", [](const Node& n) { return "<" + std::string(n.name()) + ">"; });

  py::class_<Tensor> cls(m, "Tensor");
  cls.def(py::init([](const Tensor& t) { return t; }), py::arg("data"),
          "A new handle onto the same tensor (what ember.nn.Parameter builds on).")
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def("size", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return py::tuple(py::cast(t.shape()));
        return py::int_(t.size(dim.cast<int64_t>()));
      }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return py::tuple(py::cast(t.stride()));
        return py::int_(t.stride(dim.cast<int64_t>()));
      }, py::arg("dim") = py::none())
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::dim)
      .def_property_readonly("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("T", [](const Tensor& t) { return t.dim() < 2 ? t : t.permute([&] {
        Shape d; for (int64_t i = t.dim() - 1; i >= 0; --i) d.push_back(i); return d; }()); })
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.size(0);
      })
      .def("__repr__", [](const Tensor& t) { return nogil([&] { return t.str(); }); })
      // ---- conversions ----
      .def("to", &to_with_args)
      .def("cpu", [](const Tensor& t) { return nogil([&] { return t.cpu(); }); })
      .def("cuda", [](const Tensor& t, py::object device) {
        const Device d = device.is_none() ? Device("cuda") : to_device(device);
        return nogil([&] { return t.to(d); });
      }, py::arg("device") = py::none())
      .def("type_as", [](const Tensor& t, const Tensor& o) { return nogil([&] { return t.to(o.dtype()); }); })
      .def("contiguous", [](const Tensor& t) { return nogil([&] { return t.contiguous(); }); })
      .def("clone", [](const Tensor& t) { return nogil([&] { return t.clone(); }); })
      .def("copy_", [](Tensor& t, const Tensor& src, bool non_blocking) {
        nogil([&] { t.copy_(src, non_blocking); return 0; });
        return t;
      }, py::arg("src"), py::arg("non_blocking") = false)
      .def("item", [](const Tensor& t) { return scalar_to_py(nogil([&] { return t.item(); })); })
      .def("tolist", &tolist)
      .def("numpy", &to_numpy)
      .def("__array__", [](const Tensor& t, py::object dtype) {
        py::array a = to_numpy(t);
        return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
      }, py::arg("dtype") = py::none())
      .def("__getitem__", &get_item)
      .def("__setitem__", &set_item)
      // ---- autograd ----
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool r) { t.requires_grad_(r); })
      .def("requires_grad_", [](Tensor& t, bool r) { t.requires_grad_(r); return t; },
           py::arg("requires_grad") = true)
      .def_property("grad", [](const Tensor& t) -> py::object {
        const Tensor& g = t.grad();
        return g.defined() ? py::cast(g) : py::none();
      }, [](Tensor& t, py::object g) { t.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property_readonly("grad_fn", &Tensor::grad_fn)
      .def_property("data", [](const Tensor& t) { return t.detach(); },
                    [](Tensor& t, const Tensor& d) { nn::set_data(t, d); })
      .def("detach", &Tensor::detach)
      .def("detach_", [](Tensor& t) { t.detach_(); return t; })
      .def("retain_grad", &Tensor::retain_grad)
      .def("backward", [](const Tensor& t, py::object gradient, bool retain_graph) {
        const Tensor g = gradient.is_none() ? Tensor() : gradient.cast<Tensor>();
        nogil([&] { t.backward(g, retain_graph); return 0; });
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = false)
      .def("register_post_accumulate_grad_hook", [](Tensor& t, py::function hook) {
        // The hook runs inside backward (GIL released) and may be freed there when
        // the tensor goes: both take the GIL.
        std::shared_ptr<py::function> fn(new py::function(std::move(hook)), [](py::function* f) {
          py::gil_scoped_acquire gil;
          delete f;
        });
        t.register_post_accumulate_grad_hook([fn](const Tensor& leaf) {
          py::gil_scoped_acquire gil;
          (*fn)(leaf);
        });
      }, py::arg("hook"));
}

}  // namespace ember::python
