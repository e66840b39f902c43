// Module: registration, traversal, conversion, state dicts and printing.
#include "nn/module.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "tensor/checks.h"
#include "tensor/graph.h"

namespace ember::nn {

void set_data(Tensor& t, const Tensor& data) {
  TensorImpl& dst = t.impl();
  const TensorImpl& src = data.impl();
  Tensor grad = t.grad();
  dst.storage = src.storage;
  dst.offset = src.offset;
  dst.sizes = src.sizes;
  dst.strides = src.strides;
  dst.dtype = src.dtype;
  dst.device = src.device;
  if (grad.defined()) t.mutable_grad() = grad.to(data.device(), data.dtype());
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw ValueError(msg("module attribute name must be non-empty and contain no '.', got '", name, "'"));
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    throw ValueError(msg("attribute '", name, "' already exists in ", type_name_));
}

Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  if (value.defined() && requires_grad) value.requires_grad_(true);
  params_.emplace_back(name, value);
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  buffers_.emplace_back(name, value);
  return buffers_.back().second;
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  for (auto& [n, m] : children_)
    if (n == name) {
      m = std::move(module);
      return;
    }
  throw ValueError(msg(type_name_, " has no submodule named '", name, "'"));
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  for (const auto& [n, t] : params_)
    if (t.defined()) out.emplace_back(n, t);
  if (recurse)
    for (const auto& [cn, child] : children_)
      for (auto& [n, t] : child->named_parameters(true)) out.emplace_back(cn + "." + n, t);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  for (const auto& [n, t] : buffers_)
    if (t.defined()) out.emplace_back(n, t);
  if (recurse)
    for (const auto& [cn, child] : children_)
      for (auto& [n, t] : child->named_buffers(true)) out.emplace_back(cn + "." + n, t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  // A module not owned by a shared_ptr (one on the stack) is listed through a
  // non-owning handle rather than failing with std::bad_weak_ptr.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  out.emplace_back("", std::move(self));
  for (auto& [cn, child] : children_)
    for (auto& [n, m] : child->named_modules()) out.emplace_back(n.empty() ? cn : cn + "." + n, m);
  return out;
}

void Module::apply_to_tensors(const std::function<Tensor(const Tensor&)>& fn) {
  NoGradGuard no_grad;
  for (auto& [n, t] : params_)
    if (t.defined()) set_data(t, fn(t));
  for (auto& [n, t] : buffers_)
    if (t.defined()) set_data(t, fn(t));
  for (auto& [n, child] : children_) child->apply_to_tensors(fn);
}

Module& Module::to(Device device) {
  apply_to_tensors([&](const Tensor& t) { return t.to(device); });
  return *this;
}

Module& Module::to(DType dtype) {
  if (!is_floating(dtype)) throw DTypeError(msg("Module.to only accepts floating point dtypes, but got ", dtype));
  apply_to_tensors([&](const Tensor& t) { return is_floating(t.dtype()) ? t.to(dtype) : t; });
  return *this;
}

Module& Module::to(Device device, DType dtype) {
  to(dtype);
  return to(device);
}

Module& Module::train(bool on) {
  training_ = on;
  for (auto& [n, child] : children_) child->train(on);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      p.mutable_grad().zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [n, t] : params_)
    if (t.defined()) out.emplace_back(n, t.detach());
  for (auto& [n, t] : buffers_)
    if (t.defined()) out.emplace_back(n, t.detach());
  for (const auto& [cn, child] : children_)
    for (auto& [n, t] : child->state_dict()) out.emplace_back(cn + "." + n, t);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  std::map<std::string, Tensor> given;
  for (const auto& [n, t] : state) given[n] = t;
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> own_names;
  for (const auto& [n, t] : own) {
    own_names.insert(n);
    auto it = given.find(n);
    if (it == given.end()) {
      missing.push_back(n);
    } else if (it->second.shape() != t.shape()) {
      mismatched.push_back(msg("size mismatch for ", n, ": copying a param with shape ", shape_str(it->second.shape()),
                               " from checkpoint, the shape in current model is ", shape_str(t.shape()), "."));
    }
  }
  for (const auto& [n, t] : state)
    if (!own_names.count(n)) unexpected.push_back(n);
  auto quoted = [](const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", \"" : "\"") + names[i] + "\"";
    return s;
  };
  std::string errors;
  if (strict && !missing.empty()) errors += "\n\tMissing key(s) in state_dict: " + quoted(missing) + ". ";
  if (strict && !unexpected.empty()) errors += "\n\tUnexpected key(s) in state_dict: " + quoted(unexpected) + ". ";
  for (const auto& m : mismatched) errors += "\n\t" + m;
  if (!errors.empty())
    throw ValueError("Error(s) in loading state_dict for " + type_name_ + ":" + errors);
  // Copy only after every check passed, so a failed load changes nothing.
  NoGradGuard no_grad;
  for (auto& [n, t] : own) {
    auto it = given.find(n);
    if (it != given.end()) t.copy_(it->second.to(t.device(), t.dtype()));
  }
}

void Module::check_input_device(const Tensor& input, const char* op_name) const {
  for (const auto& [n, t] : params_) {
    if (!t.defined()) continue;
    if (t.device().type() != input.device().type())
      throw DeviceError(msg("Expected object of device type ", device_type_name(t.device().type()),
                            " but got device type ", device_type_name(input.device().type()),
                            " for argument #1 'self' in call to ", op_name));
    return;
  }
}

std::string Module::str() const {
  const std::string extra = extra_repr();
  if (children_.empty()) return type_name_ + "(" + extra + ")";
  // With children, torch puts the extra_repr on a line of its own before them.
  std::string s = type_name_ + "(\n";
  if (!extra.empty()) s += "  " + extra + "\n";
  for (const auto& [n, child] : children_) {
    std::string c = child->str();
    // Indent the child's continuation lines by two spaces.
    std::string indented;
    for (char ch : c) {
      indented += ch;
      if (ch == '\n') indented += "  ";
    }
    s += "  (" + n + "): " + indented + "\n";
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

std::string repr_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Python's repr: the fewest significant digits that read back as v, written with
  // an exponent when it is below -4 or at least 16, and ".0" on whole numbers.
  char buf[40];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 16) return buf;  // "1e-05", "1.5e+16", as Python
  std::snprintf(buf, sizeof buf, "%.*f", std::max(digits - 1 - exp, 0), v);
  std::string s = buf;
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}

}  // namespace ember::nn
