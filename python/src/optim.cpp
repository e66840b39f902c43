// ember.optim: SGD, Adam, AdamW and StepLR over nn/optim/optimizer.h, with
// torch.optim's keyword arguments. An optimizer holds handles to the parameters,
// so its step() updates the tensors the model holds; step runs without the GIL.
#include "bindings.h"

namespace ember::python {

namespace {

std::vector<Tensor> params_of(py::handle params) {
  std::vector<Tensor> out;
  for (py::handle p : params) {
    if (py::isinstance<py::dict>(p))
      throw ValueError("parameter groups (dicts) are not supported: pass the parameters themselves");
    out.push_back(p.cast<Tensor>());
  }
  return out;
}

std::pair<double, double> betas_of(py::handle betas) {
  const py::tuple t = py::tuple(py::reinterpret_borrow<py::object>(betas));
  return {t[0].cast<double>(), t[1].cast<double>()};
}

}  // namespace

void init_optim(py::module_& m) {
  namespace optim = nn::optim;
  py::module_ o = m.def_submodule("optim", "optimizers");
  py::class_<optim::Optimizer>(o, "Optimizer")
      .def("step", [](optim::Optimizer& opt, py::object closure) {
        if (!closure.is_none()) throw ValueError("step(closure) is not supported");
        nogil([&] { opt.step(); return 0; });
      }, py::arg("closure") = py::none())
      .def("zero_grad", &optim::Optimizer::zero_grad, py::arg("set_to_none") = true)
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr)
      .def_property_readonly("params", [](const optim::Optimizer& opt) { return opt.params(); })
      .def("state_dict", [](const optim::Optimizer& opt) {
        py::object od = py::module_::import("collections").attr("OrderedDict")();
        for (const auto& [n, t] : opt.state_dict()) od[py::str(n)] = t;
        return od;
      })
      .def("load_state_dict", [](optim::Optimizer& opt, py::dict state) {
        nn::StateDict sd;
        for (auto [k, v] : state) sd.emplace_back(k.cast<std::string>(), v.cast<Tensor>());
        opt.load_state_dict(sd);
      }, py::arg("state_dict"));

  py::class_<optim::SGD, optim::Optimizer>(o, "SGD")
      .def(py::init([](py::handle params, double lr, double momentum, double dampening, double weight_decay,
                       bool nesterov) {
        return new optim::SGD(params_of(params), lr, optim::SGDOptions{momentum, dampening, weight_decay, nesterov});
      }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
          py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::Adam, optim::Optimizer>(o, "Adam")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay, bool amsgrad) {
        const auto [b1, b2] = betas_of(betas);
        return new optim::Adam(params_of(params), lr, optim::AdamOptions{b1, b2, eps, weight_decay, amsgrad});
      }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
          py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false);
  py::class_<optim::AdamW, optim::Adam>(o, "AdamW")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay, bool amsgrad) {
        const auto [b1, b2] = betas_of(betas);
        return new optim::AdamW(params_of(params), lr, optim::AdamOptions{b1, b2, eps, weight_decay, amsgrad});
      }), py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
          py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2, py::arg("amsgrad") = false);

  // StepLR keeps its optimizer alive (it holds a reference to it).
  py::class_<optim::StepLR>(o, "StepLR")
      .def(py::init<optim::Optimizer&, int64_t, double>(), py::keep_alive<1, 2>(), py::arg("optimizer"),
           py::arg("step_size"), py::arg("gamma") = 0.1)
      .def("step", &optim::StepLR::step)
      .def("get_last_lr", [](const optim::StepLR& s) { return std::vector<double>{s.get_last_lr()}; })
      .def_property_readonly("last_epoch", &optim::StepLR::last_epoch);
}

}  // namespace ember::python
