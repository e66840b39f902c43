// The small layers (see basic.h).
#include "nn/layers/basic.h"

#include "nn/functional.h"
#include "tensor/checks.h"

namespace ember::nn {

std::string Flatten::extra_repr() const { return msg("start_dim=", start_dim, ", end_dim=", end_dim); }

MaxPool2d::MaxPool2d(Pair k, std::optional<Pair> s, Pair p, Pair d, bool ceil)
    : Module("MaxPool2d"), kernel_size(k), stride(s.value_or(k)), padding(p), dilation(d), ceil_mode(ceil) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  return functional::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
}

// PyTorch prints square pooling windows as single numbers.
static std::string pair_str(Pair p) { return p[0] == p[1] ? std::to_string(p[0]) : msg("(", p[0], ", ", p[1], ")"); }

std::string MaxPool2d::extra_repr() const {
  return msg("kernel_size=", pair_str(kernel_size), ", stride=", pair_str(stride), ", padding=", pair_str(padding),
             ", dilation=", pair_str(dilation), ", ceil_mode=", ceil_mode ? "True" : "False");
}

AvgPool2d::AvgPool2d(Pair k, std::optional<Pair> s, Pair p, bool ceil, bool include_pad)
    : Module("AvgPool2d"), kernel_size(k), stride(s.value_or(k)), padding(p), ceil_mode(ceil),
      count_include_pad(include_pad) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  return functional::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

std::string AvgPool2d::extra_repr() const {
  return msg("kernel_size=", pair_str(kernel_size), ", stride=", pair_str(stride), ", padding=", pair_str(padding));
}

Dropout::Dropout(double p, Generator* gen) : Module("Dropout"), p(p), gen_(gen) {
  if (p < 0 || p > 1) throw ValueError(msg("dropout probability has to be between 0 and 1, but got ", p));
}

Tensor Dropout::forward(const Tensor& x) { return functional::dropout(x, p, is_training(), gen_); }

std::string Dropout::extra_repr() const { return msg("p=", repr_float(p), ", inplace=False"); }

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) add(m);
}

Sequential& Sequential::add(std::shared_ptr<Module> module, std::string name) {
  register_module(name.empty() ? std::to_string(size()) : name, std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& [n, m] : named_children()) y = m->forward(y);
  return y;
}

}  // namespace ember::nn
