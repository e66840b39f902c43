// GradScaler: loss scaling for float16 training, with PyTorch's semantics and
// defaults. float16 cannot hold gradients below 2^-24, and many are that small;
// multiplying the loss by a large scale S lifts every gradient by S (the chain rule
// is linear), so they survive backward. Before the optimizer step the gradients are
// divided by S again ("unscaled") and checked: if any is inf or NaN, S was too big,
// the step is skipped and S is halved; after growth_interval clean steps S doubles.
//
//   nn::amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);    // unscale_ (unless called already), step unless inf/NaN
//   scaler.update();           // back off or grow the scale
//
// The unscale and the inf/NaN check are one fused kernel per device over all of an
// optimizer's gradients (kernels/cpu/amp.h, kernels/cuda/amp.h). Gradients must be
// float32 (master weights) or bfloat16; float16 gradients are refused, as PyTorch.
#pragma once

#include "kernels/base/export.h"

#include <map>
#include <optional>
#include <string>

#include "nn/module.h"
#include "nn/optim/optimizer.h"

EMBER_API_BEGIN

namespace ember::nn::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // outputs * scale (the scale lives on the outputs' device, created on first use).
  Tensor scale(const Tensor& outputs);
  // Divides the optimizer's gradients by the scale in place and records whether any
  // was inf or NaN. At most once per optimizer between update()s, and before step().
  void unscale_(optim::Optimizer& optimizer);
  // unscale_ if not done yet, then optimizer.step() unless a gradient was inf/NaN.
  // Returns whether the step ran.
  bool step(optim::Optimizer& optimizer);
  // Updates the scale from this iteration's inf checks (all optimizers together),
  // or sets it to new_scale; then forgets the per-optimizer state.
  void update(std::optional<double> new_scale = std::nullopt);
  void update(const Tensor& new_scale);

  // The current scale (init_scale before the first scale(); 1 when disabled).
  double get_scale() const;
  double get_growth_factor() const { return options_.growth_factor; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  int64_t growth_tracker() const;  // clean steps since the last change of scale
  bool is_enabled() const { return options_.enabled; }

  // "scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"
  // as 0-dim tensors; empty when disabled (as PyTorch).
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  enum class Stage { ready, unscaled, stepped };
  struct OptimizerState {
    Stage stage = Stage::ready;
    std::map<std::string, Tensor> found_inf_per_device;  // device name -> float32 [1] flag
  };
  void check_initialized(const char* function) const;

  GradScalerOptions options_;
  Tensor scale_;           // float32 [1] (as PyTorch), on the device of the first scaled output
  Tensor growth_tracker_;  // int32 [1], same device
  int64_t init_growth_tracker_ = 0;
  std::map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace ember::nn::amp

EMBER_API_END
