// Module: the base of every layer and model. A module owns named parameters
// (tensors that train), buffers (tensors that do not, such as running means) and
// child modules, registered in order, so named_parameters() yields PyTorch's
// dotted names ("conv1.weight") in definition order. Conversions (to, half, ...)
// change parameters in place: every handle to a parameter sees the new data.
#pragma once

#include "kernels/base/export.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/ops.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = NamedTensors;

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input) { return forward(input); }

  // ---- what the module holds ----
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  // This module (named "") and every descendant, depth first.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();
  const std::string& type_name() const { return type_name_; }

  // ---- conversions, in place; each returns *this ----
  Module& to(Device device);
  Module& to(DType dtype);  // floating parameters and buffers only, as PyTorch
  Module& to(Device device, DType dtype);
  Module& half() { return to(kFloat16); }
  Module& bfloat16() { return to(kBFloat16); }
  Module& float32() { return to(kFloat32); }
  Module& float64() { return to(kFloat64); }

  // ---- training state ----
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  // Drops (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // ---- state ----
  // Parameters and buffers by dotted name, in registration order.
  StateDict state_dict() const;
  // Copies values into the existing parameters and buffers (converting dtype and
  // device to theirs). strict: every key must match both ways; errors name the
  // missing and unexpected keys and any shape mismatch.
  void load_state_dict(const StateDict& state, bool strict = true);

  // PyTorch's repr: "Linear(in_features=2, out_features=3, bias=True)", children indented.
  std::string str() const;
  virtual std::string extra_repr() const { return ""; }

 protected:
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_new_name(name);
    children_.emplace_back(name, module);
    return module;
  }
  // Replaces a registered child (quantization swaps Linear for its int8 version).
  void replace_module(const std::string& name, std::shared_ptr<Module> module);

  // Layers call this before computing: an input on another device than the
  // parameters raises the documented "Expected object of device type ..." error.
  void check_input_device(const Tensor& input, const char* op_name) const;

 private:
  void check_new_name(const std::string& name) const;
  void apply_to_tensors(const std::function<Tensor(const Tensor&)>& fn);

  std::string type_name_;
  bool training_ = true;
  NamedTensors params_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Replaces the data of `t` with that of `data` in place (same TensorImpl, so every
// handle sees it); autograd flags and the gradient are kept (the gradient converted).
void set_data(Tensor& t, const Tensor& data);

std::ostream& operator<<(std::ostream& os, const Module& m);

// A float as Python's repr writes it in a module's repr: 0.5, 1e-05, 0.0, 1.0.
std::string repr_float(double v);

}  // namespace ember::nn

EMBER_API_END
