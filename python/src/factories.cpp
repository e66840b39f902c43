// Creating tensors from Python: zeros/ones/full/empty/rand/randn/arange with
// PyTorch's signatures, ember.tensor from nested lists, from_numpy (no copy: the
// tensor views the array's memory and keeps the array alive), as_tensor; and the
// process state a user sets from Python: manual_seed, grad mode, threads, CUDA.
#include <pybind11/numpy.h>

#include "bindings.h"

namespace ember::python {

namespace {

TensorOptions options(py::object dtype, py::object device, DType default_dtype = kFloat32) {
  return TensorOptions(dtype.is_none() ? default_dtype : to_dtype(dtype),
                       device.is_none() ? kCPU : to_device(device));
}

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

DType dtype_of_numpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return kFloat32;
  if (kind == 'f' && size == 8) return kFloat64;
  if (kind == 'f' && size == 2) return kFloat16;
  if (kind == 'i' && size == 1) return kInt8;
  if (kind == 'u' && size == 1) return kUInt8;
  if (kind == 'i' && size == 4) return kInt32;
  if (kind == 'i' && size == 8) return kInt64;
  if (kind == 'b') return kBool;
  throw py::type_error("can't convert np.ndarray of type numpy." + py::str(dt.attr("name")).cast<std::string>() +
                       ". The only supported types are: float64, float32, float16, int64, int32, int8, uint8, and bool.");
}

// A tensor viewing the array's memory; the array stays alive until the storage goes.
Tensor from_numpy(py::array arr) {
  if (!arr.dtype().attr("isnative").cast<bool>())
    throw py::value_error("given numpy array has byte order different from the native byte order. Conversion "
                          "between byte orders is currently not supported.");
  const DType dt = dtype_of_numpy(arr.dtype());
  Shape shape, strides;
  const auto item = arr.itemsize();
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
    shape.push_back(arr.shape(i));
    if (arr.strides(i) < 0)
      throw py::value_error("At least one stride in the given numpy array is negative; copy the array first "
                            "(array.copy()).");
    if (arr.strides(i) % item != 0)
      throw py::value_error("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                            "array to reallocate the memory.");
    strides.push_back(arr.strides(i) / item);
  }
  PyObject* owner = arr.ptr();
  Py_INCREF(owner);
  // The deleter may run on a thread without the GIL (a storage freed inside a
  // kernel or backward); it takes the GIL to drop the array.
  auto release = [owner](void*) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(owner);
  };
  return from_blob(arr.mutable_data(), shape, dt, strides, release);
}

// Nested lists (or tuples) of numbers: their shape, their values and the widest kind.
struct Gathered {
  Shape shape;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  Scalar::Kind kind = Scalar::Kind::Bool;
  bool any = false;
};

void gather(py::handle obj, size_t depth, Gathered& g) {
  if (is_scalar(obj) || py::isinstance<Tensor>(obj)) {
    if (depth != g.shape.size() && g.any) throw ValueError("ember.tensor: nested lists of unequal lengths");
    const Scalar s = py::isinstance<Tensor>(obj) ? obj.cast<const Tensor&>().item() : to_scalar(obj);
    if (!g.any) g.shape.resize(depth);
    g.any = true;
    if (s.kind() > g.kind) g.kind = s.kind();
    g.floats.push_back(s.to_double());
    g.ints.push_back(s.to_int());
    return;
  }
  // A string is a sequence of strings (of itself, at length 1): not data.
  if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) || !PySequence_Check(obj.ptr()))
    throw py::type_error("ember.tensor: invalid data type '" +
                         std::string(py::str(py::type::of(obj).attr("__name__"))) + "'");
  const py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  const auto n = static_cast<int64_t>(py::len(seq));
  if (!g.any && g.shape.size() == depth) g.shape.push_back(n);
  else if (depth >= g.shape.size() || g.shape[depth] != n)
    throw ValueError("ember.tensor: expected sequence of length " +
                     std::to_string(depth < g.shape.size() ? g.shape[depth] : 0) + " at dim " + std::to_string(depth) +
                     " (got " + std::to_string(n) + ")");
  for (py::handle item : seq) gather(item, depth + 1, g);
}

Tensor tensor_from_data(py::handle data, py::object dtype, py::object device, bool requires_grad) {
  Tensor t;
  if (py::isinstance<Tensor>(data)) {
    const Tensor& src = data.cast<const Tensor&>();
    t = nogil([&] { return src.detach().clone(); });
    if (!dtype.is_none() || !device.is_none()) {
      const TensorOptions o = options(dtype, device, t.dtype());
      t = t.to(o.device, o.dtype);
    }
  } else if (py::isinstance<py::array>(data)) {
    py::array a = py::array::ensure(data);
    if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
    t = from_numpy(a).clone();
    if (!dtype.is_none() || !device.is_none()) {
      const TensorOptions o = options(dtype, device, t.dtype());
      t = t.to(o.device, o.dtype);
    }
  } else if (is_scalar(data)) {
    const Scalar s = to_scalar(data);
    const DType natural = s.is_bool() ? kBool : s.is_integral() ? kInt64 : kFloat32;
    t = full({}, s, options(dtype, device, natural));
  } else {
    Gathered g;
    gather(data, 0, g);
    if (!g.any) {
      g.kind = Scalar::Kind::Float;  // torch.tensor([]) is float32
      if (g.shape.empty()) g.shape.push_back(0);
    }
    const DType natural = g.kind == Scalar::Kind::Bool ? kBool : g.kind == Scalar::Kind::Int ? kInt64 : kFloat32;
    const TensorOptions o = options(dtype, device, natural);
    if (g.kind == Scalar::Kind::Float) t = tensor(g.floats, g.shape, o);
    else t = tensor(g.ints, g.shape, o);
    if (g.shape.empty()) t = t.reshape({});
  }
  return finish(t, requires_grad);
}

}  // namespace

Tensor data_to_tensor(py::handle data) { return tensor_from_data(data, py::none(), py::none(), false); }

void init_factories(py::module_& m) {
  const auto kw = [](const char* n) { return py::arg(n); };
#define EMBER_SHAPED(py_name, call)                                                                  \
  m.def(py_name, [](py::args size, py::object size_kw, py::object dtype, py::object device,          \
                    bool requires_grad) {                                                            \
    const Shape s = size_kw.is_none() ? shape_from_args(size) : to_shape(size_kw);                  \
    const TensorOptions o = options(dtype, device);                                                  \
    return finish(nogil([&] { return call; }), requires_grad);                                       \
  }, py::kw_only(), kw("size") = py::none(), kw("dtype") = py::none(), kw("device") = py::none(),   \
     kw("requires_grad") = false);
  EMBER_SHAPED("zeros", ember::zeros(s, o))
  EMBER_SHAPED("ones", ember::ones(s, o))
  EMBER_SHAPED("empty", ember::empty(s, o))
  EMBER_SHAPED("rand", ember::rand(s, o))
  EMBER_SHAPED("randn", ember::randn(s, o))
#undef EMBER_SHAPED
  m.def("full", [](py::object size, py::handle value, py::object dtype, py::object device, bool requires_grad) {
    const Shape s = to_shape(size);
    const Scalar v = to_scalar(value);
    Tensor t;
    if (dtype.is_none() && device.is_none()) {
      t = nogil([&] { return ember::full(s, v, std::nullopt); });
    } else {
      const TensorOptions o = options(dtype, device, v.is_bool() ? kBool : v.is_integral() ? kInt64 : kFloat32);
      t = nogil([&] { return ember::full(s, v, o); });
    }
    return finish(t, requires_grad);
  }, py::arg("size"), py::arg("fill_value"), py::kw_only(), kw("dtype") = py::none(), kw("device") = py::none(),
     kw("requires_grad") = false);
#define EMBER_LIKE(py_name, call)                                                                    \
  m.def(py_name, [](const Tensor& t, py::object dtype, py::object device, bool requires_grad) {     \
    Tensor r = nogil([&] { return call; });                                                          \
    if (!dtype.is_none() || !device.is_none()) {                                                     \
      const TensorOptions o = options(dtype, device, r.dtype());                                     \
      r = r.to(device.is_none() ? r.device() : o.device, o.dtype);                                   \
    }                                                                                                \
    return finish(r, requires_grad);                                                                 \
  }, py::arg("input"), py::kw_only(), kw("dtype") = py::none(), kw("device") = py::none(),         \
     kw("requires_grad") = false);
  EMBER_LIKE("zeros_like", ember::zeros_like(t))
  EMBER_LIKE("ones_like", ember::ones_like(t))
  EMBER_LIKE("empty_like", ember::empty_like(t))
#undef EMBER_LIKE
  // arange(end), arange(start, end), arange(start, end, step), as PyTorch.
  m.def("arange", [](py::handle a, py::object b, py::handle step, py::object dtype, py::object device,
                     bool requires_grad) {
    const Scalar start = b.is_none() ? Scalar(int64_t{0}) : to_scalar(a);
    const Scalar end = b.is_none() ? to_scalar(a) : to_scalar(b);
    const Scalar st = to_scalar(step);
    Tensor t;
    if (dtype.is_none() && device.is_none()) {
      t = nogil([&] { return ember::arange(start, end, st); });
    } else {
      const bool integral = start.is_integral() && end.is_integral() && st.is_integral();
      const TensorOptions o = options(dtype, device, integral ? kInt64 : kFloat32);
      t = nogil([&] { return ember::arange(start, end, st, o); });
    }
    return finish(t, requires_grad);
  }, py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(), kw("dtype") = py::none(),
     kw("device") = py::none(), kw("requires_grad") = false);
  m.def("tensor", &tensor_from_data, py::arg("data"), py::kw_only(), kw("dtype") = py::none(),
        kw("device") = py::none(), kw("requires_grad") = false);
  m.def("from_numpy", &from_numpy, py::arg("ndarray"));
  // as_tensor: shares memory with a CPU NumPy array or tensor when no conversion is asked.
  m.def("as_tensor", [](py::handle data, py::object dtype, py::object device) -> Tensor {
    Tensor t;
    if (py::isinstance<Tensor>(data)) t = data.cast<Tensor>();
    else if (py::isinstance<py::array>(data)) t = from_numpy(py::reinterpret_borrow<py::array>(data));
    else return tensor_from_data(data, dtype, device, false);
    const TensorOptions o = options(dtype, device, t.dtype());
    const Device target = device.is_none() ? t.device() : o.device;
    if (o.dtype == t.dtype() && target == t.device()) return t;
    return nogil([&] { return t.to(target, o.dtype); });
  }, py::arg("data"), py::arg("dtype") = py::none(), py::arg("device") = py::none());

  // ---- process and thread state ----
  m.def("manual_seed", [](uint64_t seed) { ember::manual_seed(seed); }, py::arg("seed"));
  m.def("is_grad_enabled", &grad_mode_enabled);
  m.def("_set_grad_enabled", &set_grad_mode, py::arg("mode"));
  m.def("set_num_threads", &set_num_threads, py::arg("n"));
  m.def("get_num_threads", &get_num_threads);
  // The CPU memory limit (tensor/cpu_allocator.h): 0 means none.
  m.def("set_cpu_memory_limit", [](size_t bytes) { cpu_set_memory_limit(bytes); }, py::arg("bytes"));
  m.def("cpu_memory_limit", [] { return cpu_memory_limit(); });
  m.def("cpu_memory_allocated", [] { return cpu_memory_allocated(); });
  m.def("cuda_is_available", &cuda::is_available);
  m.def("cuda_device_count", &cuda::device_count);
  m.def("cuda_synchronize", [](int device) { nogil([&] { cuda::synchronize(device); return 0; }); },
        py::arg("device") = -1);
}

}  // namespace ember::python
