// The math of ember.Tensor: one method per row of the op list (kernels/base/
// ops.def.h) plus their in-place forms and operators, reductions, views and dtype
// shorthands. Kernels run with the GIL released. ember/__init__.py makes the free
// functions (ember.exp, ember.sum, ...) from these methods.
#include "bindings.h"

namespace ember::python {

namespace {

// op(a, b) where b is a tensor or a Python number.
template <class F>
Tensor binary(const Tensor& a, py::handle b, F&& fn) {
  if (is_scalar(b)) {
    const Scalar s = to_scalar(b);
    py::gil_scoped_release release;
    return fn(a, s);
  }
  const Tensor& t = b.cast<const Tensor&>();
  py::gil_scoped_release release;
  return fn(a, t);
}

// self.op_(b): the same Python object comes back, as PyTorch's in-place ops return self.
template <class F>
py::object inplace(py::object self, py::handle b, F&& fn) {
  Tensor& a = self.cast<Tensor&>();
  if (is_scalar(b)) {
    const Scalar s = to_scalar(b);
    py::gil_scoped_release release;
    fn(a, s);
  } else {
    const Tensor& t = b.cast<const Tensor&>();
    py::gil_scoped_release release;
    fn(a, t);
  }
  return self;
}

// dim=None (every dim), an int or a sequence of ints.
Shape dims_of(py::handle dim) { return dim.is_none() ? Shape{} : to_shape(dim); }

// Sizes from f(2, 3), f((2, 3)) or f(name=(2, 3)), the keyword being PyTorch's name.
Shape sizes(const py::args& args, const py::kwargs& kwargs, const char* name) {
  if (kwargs.contains(name)) {
    if (args.size() > 0 || kwargs.size() > 1) throw py::type_error(std::string("expected only ") + name + "=");
    return to_shape(kwargs[name]);
  }
  if (kwargs.size() > 0) throw py::type_error(std::string("unexpected keyword argument; this takes ") + name + "=");
  return shape_from_args(args);
}

}  // namespace

void init_tensor_ops(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));

#define EMBER_X(Name, name, ...) \
  cls.def(#name, [](const Tensor& a) { return nogil([&] { return a.name(); }); });
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X

#define EMBER_X(Name, name, ...)                                                                                   \
  cls.def(#name, [](const Tensor& a, py::handle b) {                                                               \
    return binary(a, b, [](const Tensor& x, const auto& y) { return ember::name(x, y); });                         \
  }, py::arg("other"));                                                                                            \
  cls.def(#name "_", [](py::object self, py::handle b) {                                                           \
    return inplace(self, b, [](Tensor& x, const auto& y) { ember::name##_(x, y); });                               \
  }, py::arg("other"));
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X

  // Operators. A reflected operator (2 - t) has the number first.
#define EMBER_OP(py_name, rpy_name, ipy_name, name)                                                               \
  cls.def(py_name, [](const Tensor& a, py::handle b) {                                                             \
    return binary(a, b, [](const Tensor& x, const auto& y) { return ember::name(x, y); });                         \
  });                                                                                                              \
  cls.def(rpy_name, [](const Tensor& a, py::handle b) {                                                            \
    const Scalar s = to_scalar(b);                                                                                 \
    return nogil([&] { return ember::name(s, a); });                                                               \
  });                                                                                                              \
  cls.def(ipy_name, [](py::object self, py::handle b) {                                                            \
    return inplace(self, b, [](Tensor& x, const auto& y) { ember::name##_(x, y); });                               \
  });
  EMBER_OP("__add__", "__radd__", "__iadd__", add)
  EMBER_OP("__sub__", "__rsub__", "__isub__", sub)
  EMBER_OP("__mul__", "__rmul__", "__imul__", mul)
  EMBER_OP("__truediv__", "__rtruediv__", "__itruediv__", div)
  EMBER_OP("__pow__", "__rpow__", "__ipow__", pow)
#undef EMBER_OP
#define EMBER_CMP(py_name, name)                                                                                   \
  cls.def(py_name, [](const Tensor& a, py::handle b) {                                                             \
    return binary(a, b, [](const Tensor& x, const auto& y) { return ember::name(x, y); });                         \
  });
  EMBER_CMP("__eq__", eq) EMBER_CMP("__ne__", ne) EMBER_CMP("__lt__", lt)
  EMBER_CMP("__le__", le) EMBER_CMP("__gt__", gt) EMBER_CMP("__ge__", ge)
#undef EMBER_CMP
  cls.def("__hash__", [](py::object self) { return py::hash(py::int_(reinterpret_cast<uintptr_t>(self.ptr()))); })
      .def("__neg__", [](const Tensor& a) { return nogil([&] { return -a; }); })
      .def("__abs__", [](const Tensor& a) { return nogil([&] { return a.abs(); }); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return nogil([&] { return a.matmul(b); }); })
      .def("matmul", [](const Tensor& a, const Tensor& b) { return nogil([&] { return a.matmul(b); }); },
           py::arg("other"))
      .def("mm", [](const Tensor& a, const Tensor& b) { return nogil([&] { return a.matmul(b); }); },
           py::arg("mat2"))
      .def("__bool__", [](const Tensor& a) { return nogil([&] { return a.item().to_bool(); }); })
      .def("__float__", [](const Tensor& a) { return nogil([&] { return a.item().to_double(); }); })
      .def("__int__", [](const Tensor& a) { return nogil([&] { return a.item().to_int(); }); })
      .def("clamp", [](const Tensor& a, std::optional<double> min, std::optional<double> max) {
        std::optional<Scalar> lo, hi;
        if (min) lo = Scalar(*min);
        if (max) hi = Scalar(*max);
        return nogil([&] { return a.clamp(lo, hi); });
      }, py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("fill_", [](py::object self, py::handle v) {
        const Scalar s = to_scalar(v);
        Tensor& t = self.cast<Tensor&>();
        nogil([&] { t.fill_(s); return 0; });
        return self;
      }, py::arg("value"))
      .def("zero_", [](py::object self) {
        Tensor& t = self.cast<Tensor&>();
        nogil([&] { t.zero_(); return 0; });
        return self;
      });

  // ---- reductions ----
  cls.def("sum", [](const Tensor& a, py::object dim, bool keepdim) {
        const Shape d = dims_of(dim);
        return nogil([&] { return a.sum(d, keepdim); });
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("mean", [](const Tensor& a, py::object dim, bool keepdim) {
        const Shape d = dims_of(dim);
        return nogil([&] { return a.mean(d, keepdim); });
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("var", [](const Tensor& a, py::object dim, std::optional<bool> unbiased, bool keepdim,
                     std::optional<int64_t> correction) {
        const Shape d = dims_of(dim);
        const int64_t c = correction ? *correction : (unbiased.value_or(true) ? 1 : 0);
        return nogil([&] { return a.var(d, c, keepdim); });
      }, py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false,
         py::kw_only(), py::arg("correction") = py::none())
      .def("norm", [](const Tensor& a, double p, py::object dim, bool keepdim) {
        const Shape d = dims_of(dim);
        return nogil([&] { return a.norm(p, d, keepdim); });
      }, py::arg("p") = 2.0, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("amax", [](const Tensor& a, py::object dim, bool keepdim) {
        const Shape d = dims_of(dim);
        return nogil([&] { return a.amax(d, keepdim); });
      }, py::arg("dim") = py::tuple(), py::arg("keepdim") = false)
      .def("amin", [](const Tensor& a, py::object dim, bool keepdim) {
        const Shape d = dims_of(dim);
        return nogil([&] { return a.amin(d, keepdim); });
      }, py::arg("dim") = py::tuple(), py::arg("keepdim") = false)
      // max()/min() without dim give the value; with dim, (values, indices).
      .def("max", [](const Tensor& a, py::object dim, bool keepdim) -> py::object {
        if (dim.is_none()) return py::cast(nogil([&] { return a.max(); }));
        if (py::isinstance<Tensor>(dim)) {
          const Tensor& b = dim.cast<const Tensor&>();
          return py::cast(nogil([&] { return ember::maximum(a, b); }));
        }
        const int64_t d = dim.cast<int64_t>();
        return py::cast(nogil([&] { return a.max(d, keepdim); }));
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("min", [](const Tensor& a, py::object dim, bool keepdim) -> py::object {
        if (dim.is_none()) return py::cast(nogil([&] { return a.min(); }));
        if (py::isinstance<Tensor>(dim)) {
          const Tensor& b = dim.cast<const Tensor&>();
          return py::cast(nogil([&] { return ember::minimum(a, b); }));
        }
        const int64_t d = dim.cast<int64_t>();
        return py::cast(nogil([&] { return a.min(d, keepdim); }));
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmax", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
        return nogil([&] { return a.argmax(dim, keepdim); });
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("argmin", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
        return nogil([&] { return a.argmin(dim, keepdim); });
      }, py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("softmax", [](const Tensor& a, int64_t dim) { return nogil([&] { return a.softmax(dim); }); },
           py::arg("dim"))
      .def("log_softmax", [](const Tensor& a, int64_t dim) { return nogil([&] { return a.log_softmax(dim); }); },
           py::arg("dim"));

  // ---- views (no data moves, so the GIL stays) ----
  cls.def("view", [](const Tensor& a, py::args s, py::kwargs kw) { return a.view(sizes(s, kw, "size")); })
      .def("reshape", [](const Tensor& a, py::args s, py::kwargs kw) {
        const Shape sh = sizes(s, kw, "shape");
        return nogil([&] { return a.reshape(sh); });
      })
      .def("view_as", [](const Tensor& a, const Tensor& o) { return a.view(o.shape()); }, py::arg("other"))
      .def("reshape_as", [](const Tensor& a, const Tensor& o) { return nogil([&] { return a.reshape(o.shape()); }); },
           py::arg("other"))
      .def("permute", [](const Tensor& a, py::args dims, py::kwargs kw) { return a.permute(sizes(dims, kw, "dims")); })
      .def("transpose", &Tensor::transpose, py::arg("dim0"), py::arg("dim1"))
      .def("t", &Tensor::t)
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("squeeze", [](const Tensor& a, std::optional<int64_t> dim) { return dim ? a.squeeze(*dim) : a.squeeze(); },
           py::arg("dim") = py::none())
      .def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"))
      .def("expand", [](const Tensor& a, py::args s, py::kwargs kw) { return a.expand(sizes(s, kw, "size")); })
      .def("expand_as", &Tensor::expand_as, py::arg("other"))
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"))
      .def("select", &Tensor::select, py::arg("dim"), py::arg("index"));

  // ---- dtype shorthands ----
#define EMBER_CAST(py_name, dt) \
  cls.def(py_name, [](const Tensor& a) { return nogil([&] { return a.to(dt); }); });
  EMBER_CAST("float", kFloat32) EMBER_CAST("double", kFloat64) EMBER_CAST("half", kFloat16)
  EMBER_CAST("bfloat16", kBFloat16) EMBER_CAST("long", kInt64) EMBER_CAST("int", kInt32)
  EMBER_CAST("bool", kBool) EMBER_CAST("byte", kUInt8) EMBER_CAST("char", kInt8)
#undef EMBER_CAST

  // ---- free functions that take several tensors ----
  m.def("matmul", [](const Tensor& a, const Tensor& b) { return nogil([&] { return ember::matmul(a, b); }); },
        py::arg("input"), py::arg("other"));
  m.def("cat", [](const std::vector<Tensor>& ts, int64_t dim) { return nogil([&] { return ember::cat(ts, dim); }); },
        py::arg("tensors"), py::arg("dim") = 0);
  m.def("stack", [](const std::vector<Tensor>& ts, int64_t dim) { return nogil([&] { return ember::stack(ts, dim); }); },
        py::arg("tensors"), py::arg("dim") = 0);
  m.def("where", [](const Tensor& c, py::handle a, py::handle b) {
    const bool sa = is_scalar(a), sb = is_scalar(b);
    if (sa && sb) { const Scalar x = to_scalar(a), y = to_scalar(b); return nogil([&] { return ember::where(c, x, y); }); }
    if (sa) { const Scalar x = to_scalar(a); const Tensor& y = b.cast<const Tensor&>();
              return nogil([&] { return ember::where(c, x, y); }); }
    if (sb) { const Tensor& x = a.cast<const Tensor&>(); const Scalar y = to_scalar(b);
              return nogil([&] { return ember::where(c, x, y); }); }
    const Tensor& x = a.cast<const Tensor&>();
    const Tensor& y = b.cast<const Tensor&>();
    return nogil([&] { return ember::where(c, x, y); });
  }, py::arg("condition"), py::arg("input"), py::arg("other"));
}

}  // namespace ember::python
