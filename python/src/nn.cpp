// ember.nn's C++ side: Module (subclassable from Python through a trampoline
// whose forward calls the Python method) and the layers with PyTorch's keyword
// arguments. ember/nn/modules.py adds the Python half of Module: __setattr__
// registering layers and Parameters, and __call__ for Python forwards.
#include "bindings.h"

namespace ember::python {

namespace {

// A Module written in Python: C++ callers (Sequential, DDP, quantize_dynamic)
// reach its Python forward and extra_repr through these overrides.
class PyModule : public nn::Module {
 public:
  using nn::Module::Module;
  Tensor forward(const Tensor& x) override { PYBIND11_OVERRIDE_PURE(Tensor, nn::Module, forward, x); }
  std::string extra_repr() const override { PYBIND11_OVERRIDE(std::string, nn::Module, extra_repr, ); }
};

// Module's registration calls are protected (a C++ subclass registers in its
// constructor); a Python subclass registers through these.
struct Access : nn::Module {
  using nn::Module::register_buffer;
  using nn::Module::register_parameter;
  using nn::Module::replace_module;
  static void add_module(nn::Module& self, const std::string& name, std::shared_ptr<nn::Module> child) {
    using Register = std::shared_ptr<nn::Module> (nn::Module::*)(const std::string&, std::shared_ptr<nn::Module>);
    const Register reg = &Access::register_module<nn::Module>;
    (self.*reg)(name, std::move(child));
  }
};

py::object named_list(const nn::NamedTensors& items) {
  py::list out;
  for (const auto& [n, t] : items) out.append(py::make_tuple(n, t));
  return out;
}

py::object maybe(const Tensor& t) { return t.defined() ? py::cast(t) : py::none(); }

// module.to(...) accepts what Tensor.to accepts: a device, a dtype, or both.
void module_to(nn::Module& m, const py::args& args, const py::kwargs& kwargs) {
  std::optional<Device> device;
  std::optional<DType> dtype;
  for (py::handle a : args) {
    if (py::isinstance<DType>(a)) dtype = a.cast<DType>();
    else if (py::isinstance<Tensor>(a)) { device = a.cast<const Tensor&>().device(); dtype = a.cast<const Tensor&>().dtype(); }
    else device = to_device(a);
  }
  if (kwargs.contains("device") && !kwargs["device"].is_none()) device = to_device(kwargs["device"]);
  if (kwargs.contains("dtype") && !kwargs["dtype"].is_none()) dtype = to_dtype(kwargs["dtype"]);
  py::gil_scoped_release release;
  if (device && dtype) m.to(*device, *dtype);
  else if (device) m.to(*device);
  else if (dtype) m.to(*dtype);
}

std::optional<Pair> opt_pair(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_pair(h);
}

}  // namespace

void init_nn(py::module_& m) {
  py::module_ nn = m.def_submodule("nn", "layers and Module");
  using nn::Module;
  py::class_<Module, PyModule, std::shared_ptr<Module>> mod(nn, "Module");
  mod.def(py::init<std::string>(), py::arg("type_name"))
      .def("forward", &Module::forward, py::arg("input"))
      .def("__call__", [](Module& self, const Tensor& x) { return nogil([&] { return self.forward(x); }); },
           py::arg("input"))
      .def("parameters", [](const Module& self, bool recurse) { return py::iter(py::cast(self.parameters(recurse))); },
           py::arg("recurse") = true)
      .def("named_parameters", [](const Module& self, const std::string& prefix, bool recurse) {
        nn::NamedTensors items = self.named_parameters(recurse);
        if (!prefix.empty()) for (auto& [n, _] : items) n = prefix + "." + n;
        return py::iter(named_list(items));
      }, py::arg("prefix") = "", py::arg("recurse") = true)
      .def("buffers", [](const Module& self, bool recurse) {
        py::list out;
        for (const auto& [_, t] : self.named_buffers(recurse)) out.append(t);
        return py::iter(out);
      }, py::arg("recurse") = true)
      .def("named_buffers", [](const Module& self, bool recurse) { return py::iter(named_list(self.named_buffers(recurse))); },
           py::arg("recurse") = true)
      .def("named_children", [](const Module& self) { return py::iter(py::cast(self.named_children())); })
      .def("children", [](const Module& self) {
        py::list out;
        for (const auto& [_, c] : self.named_children()) out.append(c);
        return py::iter(out);
      })
      .def("named_modules", [](Module& self) { return py::iter(py::cast(self.named_modules())); })
      .def("modules", [](Module& self) {
        py::list out;
        for (const auto& [_, c] : self.named_modules()) out.append(c);
        return py::iter(out);
      })
      .def("state_dict", [](const Module& self) {
        py::object od = py::module_::import("collections").attr("OrderedDict")();
        for (const auto& [n, t] : self.state_dict()) od[py::str(n)] = t;
        return od;
      })
      .def("load_state_dict", [](Module& self, py::dict state, bool strict) {
        nn::StateDict sd;
        for (auto [k, v] : state) sd.emplace_back(k.cast<std::string>(), v.cast<Tensor>());
        nogil([&] { self.load_state_dict(sd, strict); return 0; });
      }, py::arg("state_dict"), py::arg("strict") = true)
      .def("to", [](py::object self, py::args args, py::kwargs kwargs) {
        module_to(self.cast<Module&>(), args, kwargs);
        return self;
      })
      .def("cpu", [](py::object self) {
        Module& m = self.cast<Module&>();
        nogil([&] { m.to(kCPU); return 0; });
        return self;
      })
      .def("cuda", [](py::object self, py::object device) {
        const Device d = device.is_none() ? Device("cuda") : to_device(device);
        Module& m = self.cast<Module&>();
        nogil([&] { m.to(d); return 0; });
        return self;
      }, py::arg("device") = py::none())
#define EMBER_MODULE_CAST(py_name, dt) \
      .def(py_name, [](py::object self) {                                                        \
        Module& m = self.cast<Module&>();                                                         \
        nogil([&] { m.to(dt); return 0; });                                                       \
        return self;                                                                              \
      })
      EMBER_MODULE_CAST("half", kFloat16) EMBER_MODULE_CAST("float", kFloat32)
      EMBER_MODULE_CAST("double", kFloat64) EMBER_MODULE_CAST("bfloat16", kBFloat16)
#undef EMBER_MODULE_CAST
      .def("train", [](py::object self, bool mode) { self.cast<Module&>().train(mode); return self; },
           py::arg("mode") = true)
      .def("eval", [](py::object self) { self.cast<Module&>().eval(); return self; })
      .def_property_readonly("training", &Module::is_training)
      .def("zero_grad", &Module::zero_grad, py::arg("set_to_none") = true)
      .def("extra_repr", &Module::extra_repr)
      .def("__repr__", &Module::str)
      .def("_type_name", &Module::type_name)
      .def("register_parameter", [](Module& self, const std::string& name, py::object param) {
        (self.*(&Access::register_parameter))(name, param.is_none() ? Tensor() : param.cast<Tensor>(), true);
      }, py::arg("name"), py::arg("param"))
      .def("register_buffer", [](Module& self, const std::string& name, py::object tensor) {
        (self.*(&Access::register_buffer))(name, tensor.is_none() ? Tensor() : tensor.cast<Tensor>());
      }, py::arg("name"), py::arg("tensor"))
      .def("add_module", &Access::add_module, py::arg("name"), py::arg("module"))
      .def("register_module", &Access::add_module, py::arg("name"), py::arg("module"))
      .def("_replace_module", [](Module& self, const std::string& name, std::shared_ptr<Module> child) {
        (self.*(&Access::replace_module))(name, std::move(child));
      });

  py::class_<nn::Linear, Module, std::shared_ptr<nn::Linear>>(nn, "Linear")
      .def(py::init<int64_t, int64_t, bool>(), py::arg("in_features"), py::arg("out_features"),
           py::arg("bias") = true)
      .def_property_readonly("weight", [](const nn::Linear& l) { return maybe(l.weight); })
      .def_property_readonly("bias", [](const nn::Linear& l) { return maybe(l.bias); })
      .def_readonly("in_features", &nn::Linear::in_features)
      .def_readonly("out_features", &nn::Linear::out_features);

  py::class_<nn::Conv2d, Module, std::shared_ptr<nn::Conv2d>>(nn, "Conv2d")
      .def(py::init([](int64_t in, int64_t out, py::handle kernel, py::handle stride, py::handle padding,
                       py::handle dilation, int64_t groups, bool bias, const std::string& padding_mode) {
        if (padding_mode != "zeros")
          throw ValueError("Conv2d: padding_mode '" + padding_mode + "' is not supported (only 'zeros')");
        return std::make_shared<nn::Conv2d>(in, out, to_pair(kernel),
                                            nn::Conv2dOptions{to_pair(stride), to_pair(padding), to_pair(dilation),
                                                              groups, bias});
      }), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
          py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("bias") = true,
          py::arg("padding_mode") = "zeros")
      .def_property_readonly("weight", [](const nn::Conv2d& l) { return maybe(l.weight); })
      .def_property_readonly("bias", [](const nn::Conv2d& l) { return maybe(l.bias); })
      .def_readonly("in_channels", &nn::Conv2d::in_channels)
      .def_readonly("out_channels", &nn::Conv2d::out_channels)
      .def_property_readonly("kernel_size", [](const nn::Conv2d& l) { return py::make_tuple(l.kernel_size[0], l.kernel_size[1]); });

  py::class_<nn::BatchNorm2d, Module, std::shared_ptr<nn::BatchNorm2d>>(nn, "BatchNorm2d")
      .def(py::init<int64_t, double, double, bool, bool>(), py::arg("num_features"), py::arg("eps") = 1e-5,
           py::arg("momentum") = 0.1, py::arg("affine") = true, py::arg("track_running_stats") = true)
      .def_property_readonly("weight", [](const nn::BatchNorm2d& l) { return maybe(l.weight); })
      .def_property_readonly("bias", [](const nn::BatchNorm2d& l) { return maybe(l.bias); })
      .def_property_readonly("running_mean", [](const nn::BatchNorm2d& l) { return maybe(l.running_mean); })
      .def_property_readonly("running_var", [](const nn::BatchNorm2d& l) { return maybe(l.running_var); });

  // inplace= is accepted for PyTorch's signature; Ember's ReLU and Dropout always
  // return a new tensor (the value is the same).
  py::class_<nn::ReLU, Module, std::shared_ptr<nn::ReLU>>(nn, "ReLU")
      .def(py::init([](bool) { return std::make_shared<nn::ReLU>(); }), py::arg("inplace") = false);
  py::class_<nn::Flatten, Module, std::shared_ptr<nn::Flatten>>(nn, "Flatten")
      .def(py::init<int64_t, int64_t>(), py::arg("start_dim") = 1, py::arg("end_dim") = -1);
  py::class_<nn::MaxPool2d, Module, std::shared_ptr<nn::MaxPool2d>>(nn, "MaxPool2d")
      .def(py::init([](py::handle kernel, py::handle stride, py::handle padding, py::handle dilation,
                       bool return_indices, bool ceil_mode) {
        if (return_indices) throw ValueError("MaxPool2d: return_indices=True is not supported");
        return std::make_shared<nn::MaxPool2d>(to_pair(kernel), opt_pair(stride), to_pair(padding), to_pair(dilation),
                                               ceil_mode);
      }), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0, py::arg("dilation") = 1,
          py::arg("return_indices") = false, py::arg("ceil_mode") = false);
  py::class_<nn::AvgPool2d, Module, std::shared_ptr<nn::AvgPool2d>>(nn, "AvgPool2d")
      .def(py::init([](py::handle kernel, py::handle stride, py::handle padding, bool ceil_mode,
                       bool count_include_pad) {
        return std::make_shared<nn::AvgPool2d>(to_pair(kernel), opt_pair(stride), to_pair(padding), ceil_mode,
                                               count_include_pad);
      }), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
          py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  py::class_<nn::Dropout, Module, std::shared_ptr<nn::Dropout>>(nn, "Dropout")
      .def(py::init([](double p, bool) { return std::make_shared<nn::Dropout>(p); }), py::arg("p") = 0.5,
           py::arg("inplace") = false)
      .def_readonly("p", &nn::Dropout::p);
  // Sequential keeps each Python child alive as long as itself (keep_alive), so a
  // child written in Python keeps its Python forward.
  py::class_<nn::Sequential, Module, std::shared_ptr<nn::Sequential>>(nn, "Sequential")
      .def(py::init<>())
      .def("append", [](py::object self, std::shared_ptr<Module> child) {
        self.cast<nn::Sequential&>().add(std::move(child));
        return self;
      }, py::keep_alive<1, 2>(), py::arg("module"))
      .def("__len__", &nn::Sequential::size)
      .def("__getitem__", [](const nn::Sequential& s, int64_t i) {
        const auto children = s.named_children();
        const auto n = static_cast<int64_t>(children.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) throw py::index_error("index " + std::to_string(i) + " is out of range");
        return children[static_cast<size_t>(i)].second;
      });
  // The seed network of the C++ examples (nn/models/network.h), for comparisons.
  py::class_<nn::Network, Module, std::shared_ptr<nn::Network>>(nn, "Network")
      .def(py::init<>());

  nn.def("set_data", [](Tensor& t, const Tensor& data) { nn::set_data(t, data); });

  // ember.nn.init: in place, under no_grad, returning the tensor (torch.nn.init).
  py::module_ init = nn.def_submodule("init", "parameter initialisation");
  init.def("uniform_", [](py::object t, double a, double b) {
    Tensor& x = t.cast<Tensor&>();
    nogil([&] { NoGradGuard g; nn::init::uniform_(x, a, b); return 0; });
    return t;
  }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("b") = 1.0);
  init.def("normal_", [](py::object t, double mean, double std) {
    Tensor& x = t.cast<Tensor&>();
    nogil([&] { NoGradGuard g; nn::init::normal_(x, mean, std); return 0; });
    return t;
  }, py::arg("tensor"), py::arg("mean") = 0.0, py::arg("std") = 1.0);
  init.def("zeros_", [](py::object t) {
    Tensor& x = t.cast<Tensor&>();
    nogil([&] { NoGradGuard g; nn::init::zeros_(x); return 0; });
    return t;
  }, py::arg("tensor"));
  init.def("ones_", [](py::object t) {
    Tensor& x = t.cast<Tensor&>();
    nogil([&] { NoGradGuard g; nn::init::ones_(x); return 0; });
    return t;
  }, py::arg("tensor"));
  // Ember's kaiming_uniform_ is PyTorch's default mode and nonlinearity (what layers use).
  init.def("kaiming_uniform_", [](py::object t, double a, const std::string& mode, const std::string& nonlinearity) {
    if (mode != "fan_in" || nonlinearity != "leaky_relu")
      throw ValueError("kaiming_uniform_: only mode='fan_in' and nonlinearity='leaky_relu' are supported");
    Tensor& x = t.cast<Tensor&>();
    nogil([&] { NoGradGuard g; nn::init::kaiming_uniform_(x, a); return 0; });
    return t;
  }, py::arg("tensor"), py::arg("a") = 0.0, py::arg("mode") = "fan_in", py::arg("nonlinearity") = "leaky_relu");
}

}  // namespace ember::python
