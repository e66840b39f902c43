// ember.nn.functional: nn/functional.h under PyTorch's names, arguments and
// defaults (F.relu, F.conv2d, F.max_pool2d, F.cross_entropy, ...).
#include "bindings.h"

namespace ember::python {

namespace {

Reduction reduction_of(const std::string& r) {
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  throw ValueError(r + " is not a valid value for reduction");
}

Tensor opt(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }

// Arguments of PyTorch's losses that Ember has no counterpart for must keep their defaults.
void check_unsupported_loss_args(py::handle weight, double label_smoothing) {
  if (!weight.is_none()) throw ValueError("cross_entropy/nll_loss: class weights are not supported");
  if (label_smoothing != 0.0) throw ValueError("cross_entropy: label_smoothing is not supported");
}

}  // namespace

void init_functional(py::module_& m) {
  namespace F = nn::functional;
  py::module_ f = m.attr("nn").cast<py::module_>().def_submodule("functional", "functional layer ops");
#define EMBER_UNARY_F(name)                                                                  \
  f.def(#name, [](const Tensor& x, bool) { return nogil([&] { return F::name(x); }); },     \
        py::arg("input"), py::arg("inplace") = false);
  EMBER_UNARY_F(relu)
#undef EMBER_UNARY_F
  f.def("gelu", [](const Tensor& x) { return nogil([&] { return F::gelu(x); }); }, py::arg("input"));
  f.def("sigmoid", [](const Tensor& x) { return nogil([&] { return F::sigmoid(x); }); }, py::arg("input"));
  f.def("tanh", [](const Tensor& x) { return nogil([&] { return F::tanh(x); }); }, py::arg("input"));
  f.def("softmax", [](const Tensor& x, int64_t dim) { return nogil([&] { return F::softmax(x, dim); }); },
        py::arg("input"), py::arg("dim"));
  f.def("log_softmax", [](const Tensor& x, int64_t dim) { return nogil([&] { return F::log_softmax(x, dim); }); },
        py::arg("input"), py::arg("dim"));
  f.def("flatten", &F::flatten, py::arg("input"), py::arg("start_dim") = 1, py::arg("end_dim") = -1);
  f.def("linear", [](const Tensor& x, const Tensor& w, py::handle b) {
    const Tensor bias = opt(b);
    return nogil([&] { return F::linear(x, w, bias); });
  }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none());
  f.def("conv2d", [](const Tensor& x, const Tensor& w, py::handle b, py::handle stride, py::handle padding,
                     py::handle dilation, int64_t groups) {
    const Tensor bias = opt(b);
    const Pair s = to_pair(stride), p = to_pair(padding), d = to_pair(dilation);
    return nogil([&] { return F::conv2d(x, w, bias, s, p, d, groups); });
  }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
     py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  f.def("max_pool2d", [](const Tensor& x, py::handle kernel, py::handle stride, py::handle padding,
                         py::handle dilation, bool ceil_mode, bool return_indices) {
    if (return_indices) throw ValueError("max_pool2d: return_indices=True is not supported");
    const Pair k = to_pair(kernel), p = to_pair(padding), d = to_pair(dilation);
    std::optional<Pair> s;
    if (!stride.is_none()) s = to_pair(stride);
    return nogil([&] { return F::max_pool2d(x, k, s, p, d, ceil_mode); });
  }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  f.def("avg_pool2d", [](const Tensor& x, py::handle kernel, py::handle stride, py::handle padding, bool ceil_mode,
                         bool count_include_pad) {
    const Pair k = to_pair(kernel), p = to_pair(padding);
    std::optional<Pair> s;
    if (!stride.is_none()) s = to_pair(stride);
    return nogil([&] { return F::avg_pool2d(x, k, s, p, ceil_mode, count_include_pad); });
  }, py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  f.def("dropout", [](const Tensor& x, double p, bool training, bool) {
    return nogil([&] { return F::dropout(x, p, training); });
  }, py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true, py::arg("inplace") = false);
  f.def("batch_norm", [](const Tensor& x, Tensor running_mean, Tensor running_var, py::handle weight,
                         py::handle bias, bool training, double momentum, double eps) {
    const Tensor w = opt(weight), b = opt(bias);
    return nogil([&] { return F::batch_norm(x, running_mean, running_var, w, b, training, momentum, eps); });
  }, py::arg("input"), py::arg("running_mean"), py::arg("running_var"), py::arg("weight") = py::none(),
     py::arg("bias") = py::none(), py::arg("training") = false, py::arg("momentum") = 0.1, py::arg("eps") = 1e-5);
  f.def("cross_entropy", [](const Tensor& x, const Tensor& target, py::handle weight, py::handle, int64_t ignore_index,
                            py::handle, const std::string& reduction, double label_smoothing) {
    check_unsupported_loss_args(weight, label_smoothing);
    const Reduction r = reduction_of(reduction);
    return nogil([&] { return F::cross_entropy(x, target, r, ignore_index); });
  }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
     py::arg("ignore_index") = -100, py::arg("reduce") = py::none(), py::arg("reduction") = "mean",
     py::arg("label_smoothing") = 0.0);
  f.def("nll_loss", [](const Tensor& x, const Tensor& target, py::handle weight, py::handle, int64_t ignore_index,
                       py::handle, const std::string& reduction) {
    check_unsupported_loss_args(weight, 0.0);
    const Reduction r = reduction_of(reduction);
    return nogil([&] { return F::nll_loss(x, target, r, ignore_index); });
  }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
     py::arg("ignore_index") = -100, py::arg("reduce") = py::none(), py::arg("reduction") = "mean");
  f.def("mse_loss", [](const Tensor& x, const Tensor& target, py::handle, py::handle, const std::string& reduction) {
    const Reduction r = reduction_of(reduction);
    return nogil([&] { return F::mse_loss(x, target, r); });
  }, py::arg("input"), py::arg("target"), py::arg("size_average") = py::none(), py::arg("reduce") = py::none(),
     py::arg("reduction") = "mean");
}

}  // namespace ember::python
