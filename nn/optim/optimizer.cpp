// Optimizer base, SGD, Adam/AdamW and StepLR (see optimizer.h). Updates run in the
// fused kernels of kernels/cpu/optim.cpp under NoGradGuard.
#include "nn/optim/optimizer.h"

#include <cmath>

#include "kernels/cpu/optim.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"

namespace ember::nn::optim {
namespace {

// Parameters are updated through their own memory; a non-contiguous parameter
// (rare: a transposed view registered as a parameter) is refused rather than
// updated through a copy that would be lost.
void check_param(const Tensor& p, const char* op) {
  if (!p.is_contiguous()) throw ValueError(msg(op, ": parameters must be contiguous"));
  if (backend_of(op, p) == Backend::None) throw_no_kernel(op, p);
  check_same_device(p, p.grad());
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (params_.empty()) throw ValueError("optimizer got an empty parameter list");
  if (lr < 0) throw ValueError(msg("Invalid learning rate: ", lr));
  state_.resize(params_.size());
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Tensor& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      p.mutable_grad().zero_();
    }
  }
}

Tensor& Optimizer::state(size_t i, const std::string& name) {
  auto it = state_[i].find(name);
  if (it == state_[i].end()) it = state_[i].emplace(name, zeros_like(params_[i].detach())).first;
  return it->second;
}

bool Optimizer::has_state(size_t i, const std::string& name) const { return state_[i].count(name) > 0; }

StateDict Optimizer::state_dict() const {
  StateDict out;
  out.emplace_back("lr", scalar_tensor(lr_).to(kFloat64).detach());
  for (const auto& [k, v] : hyperparameters()) out.emplace_back(k, full({}, v, kFloat64));
  for (size_t i = 0; i < state_.size(); ++i)
    for (const auto& [k, t] : state_[i]) out.emplace_back(msg("state.", i, ".", k), t.clone());
  return out;
}

void Optimizer::load_state_dict(const StateDict& state) {
  std::vector<std::map<std::string, Tensor>> loaded(params_.size());
  std::map<std::string, double> hyper;
  for (const auto& [k, t] : state) {
    if (k.rfind("state.", 0) == 0) {
      const size_t dot = k.find('.', 6);
      // "state.<digits>.<name>": anything else is malformed (and never reaches stoul,
      // whose std::invalid_argument and std::out_of_range are not ember errors).
      const bool digits = dot != std::string::npos && dot > 6 && dot - 6 <= 9 &&
                          k.find_first_not_of("0123456789", 6) == dot;
      if (!digits || dot + 1 == k.size()) throw ValueError(msg("optimizer state_dict: malformed key '", k, "'"));
      const size_t i = std::stoul(k.substr(6, dot - 6));
      if (i >= params_.size())
        throw ValueError(msg("optimizer state_dict: state for parameter ", i, " but the optimizer has ",
                             params_.size(), " parameters"));
      const std::string name = k.substr(dot + 1);
      if (name != "step" && t.shape() != params_[i].shape())
        throw ShapeError(msg("optimizer state_dict: ", k, " has shape ", shape_str(t.shape()), " but parameter ", i,
                             " has shape ", shape_str(params_[i].shape())));
      loaded[i][name] = name == "step" ? t.clone() : t.to(params_[i].device(), params_[i].dtype()).clone();
    } else {
      if (t.numel() != 1) throw ValueError(msg("optimizer state_dict: hyperparameter '", k, "' is not a scalar"));
      hyper[k] = t.item<double>();
    }
  }
  // Validate every hyperparameter name before changing anything.
  const auto known = hyperparameters();
  for (const auto& [k, v] : hyper)
    if (k != "lr" && !known.count(k)) throw ValueError(msg("optimizer state_dict: unknown hyperparameter '", k, "'"));
  for (const auto& [k, v] : hyper) {
    if (k == "lr") lr_ = v;
    else set_hyperparameter(k, v);
  }
  state_ = std::move(loaded);
}

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, double lr, SGDOptions o) : Optimizer(std::move(params), lr), options(o) {
  if (o.momentum < 0) throw ValueError(msg("Invalid momentum value: ", o.momentum));
  if (o.weight_decay < 0) throw ValueError(msg("Invalid weight_decay value: ", o.weight_decay));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw ValueError("Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    check_param(p, "SGD.step");
    Tensor g = p.grad().contiguous();
    const bool first = options.momentum != 0 && !has_state(i, "momentum_buffer");
    void* buf = options.momentum != 0 ? state(i, "momentum_buffer").data_ptr() : nullptr;
    const SgdParams h{lr_, options.momentum, options.dampening, options.weight_decay, options.nesterov, first};
    if (p.device().is_cuda()) EMBER_CUDA(cuda::sgd_step(p.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), buf, h, stream_of(p)));
    else cpu::sgd_step(p.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), buf, h);
    bump_version(p);
  }
}

std::map<std::string, double> SGD::hyperparameters() const {
  return {{"momentum", options.momentum}, {"dampening", options.dampening},
          {"weight_decay", options.weight_decay}, {"nesterov", options.nesterov ? 1.0 : 0.0}};
}

void SGD::set_hyperparameter(const std::string& name, double v) {
  if (name == "momentum") options.momentum = v;
  else if (name == "dampening") options.dampening = v;
  else if (name == "weight_decay") options.weight_decay = v;
  else if (name == "nesterov") options.nesterov = v != 0;
}

// ---- Adam / AdamW ----

Adam::Adam(std::vector<Tensor> params, double lr, AdamOptions o) : Adam(std::move(params), lr, o, false) {}

Adam::Adam(std::vector<Tensor> params, double lr, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params), lr), options(o), decoupled_(decoupled) {
  if (o.eps < 0) throw ValueError(msg("Invalid epsilon value: ", o.eps));
  if (o.beta1 < 0 || o.beta1 >= 1) throw ValueError(msg("Invalid beta parameter at index 0: ", o.beta1));
  if (o.beta2 < 0 || o.beta2 >= 1) throw ValueError(msg("Invalid beta parameter at index 1: ", o.beta2));
  if (o.weight_decay < 0) throw ValueError(msg("Invalid weight_decay value: ", o.weight_decay));
}

void Adam::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    check_param(p, decoupled_ ? "AdamW.step" : "Adam.step");
    Tensor g = p.grad().contiguous();
    if (!has_state(i, "step")) state_[i]["step"] = zeros({}, kFloat64);
    Tensor& step = state_[i]["step"];
    const int64_t t = static_cast<int64_t>(step.item<double>()) + 1;
    step.fill_(static_cast<double>(t));
    void* vmax = options.amsgrad ? state(i, "max_exp_avg_sq").data_ptr() : nullptr;
    const AdamParams h{lr_, options.beta1, options.beta2, options.eps, options.weight_decay, decoupled_, options.amsgrad, t};
    void* m = state(i, "exp_avg").data_ptr();
    void* v = state(i, "exp_avg_sq").data_ptr();
    if (p.device().is_cuda()) EMBER_CUDA(cuda::adam_step(p.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), m, v, vmax, h, stream_of(p)));
    else cpu::adam_step(p.dtype(), p.numel(), p.data_ptr(), g.data_ptr(), m, v, vmax, h);
    bump_version(p);
  }
}

std::map<std::string, double> Adam::hyperparameters() const {
  return {{"beta1", options.beta1}, {"beta2", options.beta2}, {"eps", options.eps},
          {"weight_decay", options.weight_decay}, {"amsgrad", options.amsgrad ? 1.0 : 0.0}};
}

void Adam::set_hyperparameter(const std::string& name, double v) {
  if (name == "beta1") options.beta1 = v;
  else if (name == "beta2") options.beta2 = v;
  else if (name == "eps") options.eps = v;
  else if (name == "weight_decay") options.weight_decay = v;
  else if (name == "amsgrad") options.amsgrad = v != 0;
}

AdamW::AdamW(std::vector<Tensor> params, double lr, AdamOptions o) : Adam(std::move(params), lr, o, true) {}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : optimizer_(optimizer), step_size_(step_size), gamma_(gamma), base_lr_(optimizer.lr()) {
  if (step_size < 1) throw ValueError(msg("StepLR: step_size must be positive, got ", step_size));
}

void StepLR::step() {
  ++epoch_;
  optimizer_.set_lr(base_lr_ * std::pow(gamma_, static_cast<double>(epoch_ / step_size_)));
}

StateDict StepLR::state_dict() const {
  return {{"last_epoch", full({}, epoch_, kInt64)}, {"base_lr", full({}, base_lr_, kFloat64)}};
}

void StepLR::load_state_dict(const StateDict& state) {
  auto get = [&](const char* key) -> const Tensor& {
    for (const auto& [name, t] : state)
      if (name == key && t.numel() == 1) return t;
    throw ValueError(msg("StepLR.load_state_dict: missing key '", key, "'"));
  };
  const int64_t epoch = get("last_epoch").item<int64_t>();
  const double base_lr = get("base_lr").item<double>();
  if (epoch < 0) throw ValueError(msg("StepLR.load_state_dict: last_epoch must be non-negative, got ", epoch));
  epoch_ = epoch;
  base_lr_ = base_lr;
}

}  // namespace ember::nn::optim
