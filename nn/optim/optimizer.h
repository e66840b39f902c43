// Optimizers update parameters from their .grad(), as torch.optim does: SGD
// (momentum, dampening, Nesterov, weight decay), Adam and AdamW. Per-parameter
// state (momentum buffers, moment estimates, step counts) is created on the first
// step. state_dict() holds hyperparameters and state as named tensors, so it saves
// like a model (safetensors).
#pragma once

#include "kernels/base/export.h"

#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::nn::optim {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  // Drops (set_to_none) or zeroes the gradients of the optimised parameters.
  void zero_grad(bool set_to_none = true);
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<Tensor>& params() const { return params_; }
  // "lr", the other hyperparameters, and "state.<i>.<name>" per parameter.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 protected:
  virtual std::map<std::string, double> hyperparameters() const = 0;
  virtual void set_hyperparameter(const std::string& name, double value) = 0;
  // The state tensor `name` of parameter i, created as zeros like it when absent.
  Tensor& state(size_t i, const std::string& name);
  bool has_state(size_t i, const std::string& name) const;

  std::vector<Tensor> params_;
  double lr_;
  std::vector<std::map<std::string, Tensor>> state_;
};

struct SGDOptions {
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, SGDOptions options = {});
  void step() override;
  SGDOptions options;

 protected:
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;
};

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, AdamOptions options = {});
  void step() override;
  AdamOptions options;

 protected:
  Adam(std::vector<Tensor> params, double lr, AdamOptions options, bool decoupled);
  std::map<std::string, double> hyperparameters() const override;
  void set_hyperparameter(const std::string& name, double value) override;
  bool decoupled_;
};

// Adam with decoupled weight decay (default 0.01, as PyTorch).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, AdamOptions options = {0.9, 0.999, 1e-8, 1e-2, false});
};

// Multiplies the learning rate by gamma every step_size calls of step() (epochs).
class StepLR {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  void step();
  int64_t last_epoch() const { return epoch_; }
  double get_last_lr() const { return optimizer_.lr(); }
  // "last_epoch" (int64) and "base_lr" (float64) as 0-dim tensors, PyTorch's names;
  // the learning rate itself lives in the optimizer's state_dict. load_state_dict
  // raises ValueError for a missing key or a negative last_epoch.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  Optimizer& optimizer_;
  int64_t step_size_;
  double gamma_, base_lr_;
  int64_t epoch_ = 0;
};

}  // namespace ember::nn::optim

EMBER_API_END
