// GradScaler (see grad_scaler.h). The bookkeeping follows torch.cuda.amp.GradScaler
// line by line: a lazily created scale and growth tracker on the device of the first
// scaled output, a stage per optimizer (ready -> unscaled -> stepped) that catches
// calls out of order, and one found_inf flag per device the gradients live on.
#include "nn/amp/grad_scaler.h"

#include <vector>

#include "ember_config.h"
#include "kernels/cpu/amp.h"
#include "tensor/checks.h"
#include "tensor/graph.h"

#if EMBER_HAVE_CUDA
#include "kernels/cuda/amp.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::nn::amp {
namespace {

void check_options(const GradScalerOptions& o) {
  if (!(o.growth_factor > 1.0)) throw ValueError("The growth factor must be > 1.0.");
  if (!(o.backoff_factor < 1.0)) throw ValueError("The backoff factor must be < 1.0.");
  if (o.growth_interval < 1) throw ValueError("The growth interval must be a positive integer.");
}

// Runs the fused unscale-and-check over `grads` (all on `device`, contiguous).
void unscale_on_device(const Device& device, std::vector<Tensor>& grads, const Tensor& scale, Tensor& found_inf) {
  // Checked before any data pointer is read (a meta tensor has none).
  if (!device.is_cpu() && !(EMBER_HAVE_CUDA && device.is_cuda()))
    throw NotImplementedError(
        msg("GradScaler.unscale_: no kernel for device ", device, " and dtype ", grads.front().dtype()));
  std::vector<cpu::GradBuffer> buffers;
  for (Tensor& g : grads) buffers.push_back({g.data_ptr(), g.numel(), g.dtype()});
  if (device.is_cpu()) {
    cpu::amp_unscale_grads(buffers.data(), static_cast<int>(buffers.size()), scale.data_ptr<float>(),
                           found_inf.data_ptr<float>());
    return;
  }
#if EMBER_HAVE_CUDA
  if (device.is_cuda()) {
    std::vector<cuda::GradBuffer> cuda_buffers;
    for (const auto& b : buffers) cuda_buffers.push_back({b.data, b.numel, b.dtype});
    // The launch sizes its grid from the current device and must go to a stream of
    // the current device: make the gradients' device current for the call.
    cuda::DeviceScope scope(device.index());
    cuda::amp_unscale_grads(cuda_buffers.data(), static_cast<int>(cuda_buffers.size()), scale.data_ptr<float>(),
                            found_inf.data_ptr<float>(), cuda::stream(device.index()));
    return;
  }
#endif
  __builtin_unreachable();  // the device was checked above
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  if (options_.enabled) check_options(options_);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!options_.enabled) return outputs;
  if (!scale_.defined()) {
    scale_ = full({1}, options_.init_scale, {kFloat32, outputs.device()});
    growth_tracker_ = full({1}, init_growth_tracker_, {kInt32, outputs.device()});
  }
  // A copy, so that update() rewriting the scale cannot change a recorded graph.
  Tensor s;
  {
    NoGradGuard no_grad;
    s = scale_.to(outputs.device()).clone();
  }
  return outputs * s;
}

void GradScaler::check_initialized(const char* function) const {
  if (!scale_.defined())
    throw Error(msg("Attempted ", function,
                    " but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) "
                    "earlier in the iteration."));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  check_initialized("unscale_");
  OptimizerState& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::unscaled)
    throw Error("unscale_() has already been called on this optimizer since the last update().");
  if (st.stage == Stage::stepped) throw Error("unscale_() is being called after step().");

  // Group the gradients by device; refuse float16 before touching any of them.
  std::map<std::string, std::vector<Tensor>> by_device;
  std::map<std::string, Device> devices;
  for (const Tensor& p : optimizer.params()) {
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (g.dtype() == kFloat16) throw ValueError("Attempting to unscale FP16 gradients.");
    if (g.dtype() != kFloat32 && g.dtype() != kBFloat16)
      throw DTypeError(msg("GradScaler.unscale_: gradients must be float32 or bfloat16, got ", g.dtype()));
    by_device[g.device().str()].push_back(g);
    devices.emplace(g.device().str(), g.device());
  }
  NoGradGuard no_grad;
  for (auto& [name, grads] : by_device) {
    const Device& device = devices.at(name);
    Tensor found_inf = zeros({1}, {kFloat32, device});
    // The kernel wants contiguous memory; a strided gradient goes through a copy.
    std::vector<Tensor> work;
    std::vector<std::pair<Tensor, Tensor>> copy_back;
    for (Tensor& g : grads) {
      bump_version(g);
      if (g.is_contiguous()) {
        work.push_back(g);
      } else {
        Tensor c = g.contiguous();
        work.push_back(c);
        copy_back.emplace_back(g, c);
      }
    }
    unscale_on_device(device, work, scale_.to(device), found_inf);
    for (auto& [g, c] : copy_back) g.copy_(c);
    st.found_inf_per_device[name] = found_inf;
  }
  st.stage = Stage::unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  check_initialized("step");
  OptimizerState& st = per_optimizer_[&optimizer];
  if (st.stage == Stage::stepped) throw Error("step() has already been called since the last update().");
  if (st.stage == Stage::ready) unscale_(optimizer);
  if (st.found_inf_per_device.empty()) throw Error("No inf checks were recorded for this optimizer.");
  double found = 0;
  for (const auto& [_, flag] : st.found_inf_per_device) found += flag.item<double>();
  const bool ran = found == 0;
  if (ran) optimizer.step();
  st.stage = Stage::stepped;
  return ran;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled) return;
  check_initialized("update");
  if (new_scale) {
    NoGradGuard no_grad;
    scale_.fill_(*new_scale);
    per_optimizer_.clear();
    return;
  }
  NoGradGuard no_grad;
  Tensor found;
  for (const auto& [_, st] : per_optimizer_)
    for (const auto& [__, flag] : st.found_inf_per_device) {
      Tensor f = flag.to(scale_.device());
      found = found.defined() ? found + f : f;
    }
  if (!found.defined()) throw Error("No inf checks were recorded prior to update.");
  if (scale_.device().is_cpu()) {
    cpu::amp_update_scale(scale_.data_ptr<float>(), growth_tracker_.data_ptr<int32_t>(), found.data_ptr<float>(),
                          options_.growth_factor, options_.backoff_factor, options_.growth_interval);
#if EMBER_HAVE_CUDA
  } else if (scale_.device().is_cuda()) {
    cuda::DeviceScope scope(scale_.device().index());  // launch on the scale's device
    cuda::amp_update_scale(scale_.data_ptr<float>(), growth_tracker_.data_ptr<int32_t>(), found.data_ptr<float>(),
                           options_.growth_factor, options_.backoff_factor, options_.growth_interval,
                           cuda::stream(scale_.device().index()));
#endif
  } else {
    throw NotImplementedError(
        msg("GradScaler.update: no kernel for device ", scale_.device(), " and dtype ", scale_.dtype()));
  }
  bump_version(scale_);
  per_optimizer_.clear();
}

void GradScaler::update(const Tensor& new_scale) {
  if (!options_.enabled) return;
  check_initialized("update");
  if (new_scale.numel() != 1 || new_scale.dtype() != kFloat32 || new_scale.requires_grad())
    throw ValueError("new_scale should be a float or a 1-element float32 tensor with requires_grad=False.");
  NoGradGuard no_grad;
  scale_.copy_(new_scale.reshape({1}).to(scale_.device()));
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled) return 1.0;
  return scale_.defined() ? scale_.item<double>() : options_.init_scale;
}

int64_t GradScaler::growth_tracker() const {
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

StateDict GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {{"scale", full({}, get_scale(), kFloat32)},
          {"growth_factor", full({}, options_.growth_factor, kFloat64)},
          {"backoff_factor", full({}, options_.backoff_factor, kFloat64)},
          {"growth_interval", full({}, options_.growth_interval, kInt64)},
          {"_growth_tracker", full({}, growth_tracker(), kInt64)}};
}

void GradScaler::load_state_dict(const StateDict& state) {
  if (!options_.enabled) return;
  if (state.empty())
    throw Error(
        "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  auto get = [&](const char* key) -> const Tensor& {
    for (const auto& [name, t] : state)
      if (name == key) return t;
    throw ValueError(msg("GradScaler.load_state_dict: missing key '", key, "'"));
  };
  GradScalerOptions o = options_;
  o.init_scale = get("scale").item<double>();
  o.growth_factor = get("growth_factor").item<double>();
  o.backoff_factor = get("backoff_factor").item<double>();
  o.growth_interval = get("growth_interval").item<int64_t>();
  const int64_t tracker = get("_growth_tracker").item<int64_t>();
  check_options(o);
  options_ = o;
  init_growth_tracker_ = tracker;
  NoGradGuard no_grad;
  if (scale_.defined()) scale_.fill_(o.init_scale);
  if (growth_tracker_.defined()) growth_tracker_.fill_(tracker);
}

}  // namespace ember::nn::amp
