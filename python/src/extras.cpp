// The rest of the API a training script reaches for: mixed precision (autocast
// as a context manager, GradScaler), safetensors files, gradient clipping and
// int8 dynamic quantization.
#include "bindings.h"

namespace ember::python {

namespace {

// `with ember.amp.autocast(...)`: the C++ guard lives between __enter__ and __exit__.
struct Autocast {
  DeviceType device_type;
  std::optional<DType> dtype;
  bool enabled;
  std::vector<std::unique_ptr<nn::amp::AutocastGuard>> guards;  // a stack: the object may be re-entered
};

nn::NamedTensors named_tensors(py::dict d) {
  nn::NamedTensors out;
  for (auto [k, v] : d) out.emplace_back(k.cast<std::string>(), v.cast<Tensor>());
  return out;
}

}  // namespace

void init_extras(py::module_& m) {
  py::module_ amp = m.def_submodule("amp", "mixed precision");
  py::class_<Autocast>(amp, "autocast")
      .def(py::init([](const std::string& device_type, py::object dtype, bool enabled) {
        return new Autocast{Device(device_type).type(), dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype)),
                            enabled, {}};
      }), py::arg("device_type"), py::arg("dtype") = py::none(), py::arg("enabled") = true)
      .def("__enter__", [](py::object self) {
        Autocast& a = self.cast<Autocast&>();
        a.guards.push_back(std::make_unique<nn::amp::AutocastGuard>(a.device_type, a.dtype, a.enabled));
        return self;
      })
      .def("__exit__", [](Autocast& a, py::args) {
        a.guards.pop_back();
        return false;
      });
  amp.def("is_autocast_enabled", [](const std::string& device_type) {
    return nn::amp::is_autocast_enabled(Device(device_type).type());
  }, py::arg("device_type") = "cpu");

  using nn::amp::GradScaler;
  py::class_<GradScaler>(amp, "GradScaler")
      .def(py::init([](double init_scale, double growth_factor, double backoff_factor, int64_t growth_interval,
                       bool enabled) {
        return new GradScaler(nn::amp::GradScalerOptions{init_scale, growth_factor, backoff_factor, growth_interval,
                                                         enabled});
      }), py::arg("init_scale") = 65536.0, py::arg("growth_factor") = 2.0, py::arg("backoff_factor") = 0.5,
          py::arg("growth_interval") = 2000, py::arg("enabled") = true)
      .def("scale", [](GradScaler& s, const Tensor& t) { return nogil([&] { return s.scale(t); }); },
           py::arg("outputs"))
      .def("unscale_", [](GradScaler& s, nn::optim::Optimizer& o) { nogil([&] { s.unscale_(o); return 0; }); },
           py::arg("optimizer"))
      .def("step", [](GradScaler& s, nn::optim::Optimizer& o) { return nogil([&] { return s.step(o); }); },
           py::arg("optimizer"))
      .def("update", [](GradScaler& s, py::object new_scale) {
        if (new_scale.is_none()) s.update();
        else if (py::isinstance<Tensor>(new_scale)) s.update(new_scale.cast<Tensor>());
        else s.update(new_scale.cast<double>());
      }, py::arg("new_scale") = py::none())
      .def("get_scale", &GradScaler::get_scale)
      .def("is_enabled", &GradScaler::is_enabled);

  py::module_ ser = m.def_submodule("serialization", "safetensors files");
  ser.def("save_file", [](py::dict tensors, const std::string& path, std::map<std::string, std::string> metadata) {
    const nn::NamedTensors named = named_tensors(tensors);
    nogil([&] { serialize::save_safetensors(named, path, metadata); return 0; });
  }, py::arg("tensors"), py::arg("filename"), py::arg("metadata") = std::map<std::string, std::string>{});
  ser.def("load_file", [](const std::string& path) {
    const nn::NamedTensors named = nogil([&] { return serialize::load_safetensors(path); });
    py::dict out;
    for (const auto& [k, t] : named) out[py::str(k)] = t;
    return out;
  }, py::arg("filename"));

  py::module_ utils = m.def_submodule("utils", "gradient clipping");
  utils.def("clip_grad_norm_", [](py::iterable params, double max_norm, double norm_type, bool error_if_nonfinite) {
    std::vector<Tensor> ps;
    for (py::handle p : params) ps.push_back(p.cast<Tensor>());
    return nogil([&] { return nn::utils::clip_grad_norm_(ps, max_norm, norm_type, error_if_nonfinite); });
  }, py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false);
  utils.def("clip_grad_value_", [](py::iterable params, double clip_value) {
    std::vector<Tensor> ps;
    for (py::handle p : params) ps.push_back(p.cast<Tensor>());
    nogil([&] { nn::utils::clip_grad_value_(ps, clip_value); return 0; });
  }, py::arg("parameters"), py::arg("clip_value"));

  py::module_ q = m.def_submodule("quantization", "int8 dynamic quantization");
  q.def("quantize_dynamic", [](std::shared_ptr<nn::Module> model, py::object qconfig_spec, py::object dtype) {
    std::set<std::string> types{"Linear"};
    if (!qconfig_spec.is_none()) {
      types.clear();
      for (py::handle t : qconfig_spec)
        types.insert(py::isinstance<py::str>(t) ? t.cast<std::string>() : t.attr("__name__").cast<std::string>());
    }
    const DType dt = dtype.is_none() ? kInt8 : to_dtype(dtype);
    return nogil([&] { return quant::quantize_dynamic(model, types, dt); });
  }, py::arg("model"), py::arg("qconfig_spec") = py::none(), py::arg("dtype") = py::none());
  py::class_<quant::DynamicQuantizedLinear, nn::Module, std::shared_ptr<quant::DynamicQuantizedLinear>>(
      q, "DynamicQuantizedLinear");
}

}  // namespace ember::python
