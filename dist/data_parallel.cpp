// DataParallel (see data_parallel.h). Gradients flow back to the module through
// hooks: the replicas' parameters are leaves of their own, and a post-accumulate
// hook on each adds the replica's gradient into the module's matching parameter
// (moved to the first device) and clears the replica's. Backward runs on one
// thread, so the hooks never race.
#include "dist/data_parallel.h"

#include <exception>
#include <thread>

#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::dist {

DataParallel::DataParallel(std::shared_ptr<nn::Module> module, std::vector<Device> devices, Factory make_replica)
    : nn::Module("DataParallel"), module_(std::move(module)), devices_(std::move(devices)) {
  if (!module_) throw ValueError("DataParallel: the module is null");
  if (devices_.empty()) throw ValueError("DataParallel: the device list is empty");
  for (const auto& [name, p] : module_->named_parameters())
    if (p.device() != devices_[0])
      throw DeviceError("DataParallel: the module must be on " + devices_[0].str() + " (the first device) but " +
                        name + " is on " + p.device().str());
  register_module("module", module_);
  replicas_.push_back(module_);
  const nn::NamedTensors master = module_->named_parameters();
  for (size_t i = 1; i < devices_.size(); ++i) {
    if (!make_replica) throw ValueError("DataParallel: a factory is needed to build replicas for more than one device");
    std::shared_ptr<nn::Module> r = make_replica();
    if (!r) throw ValueError("DataParallel: the factory returned a null module");
    r->to(devices_[i]);
    nn::NamedTensors mine = r->named_parameters();
    if (mine.size() != master.size())
      throw ValueError("DataParallel: the factory's module has " + std::to_string(mine.size()) +
                       " parameters but the module has " + std::to_string(master.size()));
    for (size_t k = 0; k < mine.size(); ++k) {
      if (mine[k].first != master[k].first || mine[k].second.shape() != master[k].second.shape())
        throw ValueError("DataParallel: the factory's parameter " + mine[k].first + " " +
                         shape_str(mine[k].second.shape()) + " does not match the module's " + master[k].first + " " +
                         shape_str(master[k].second.shape()));
      Tensor target = master[k].second;
      if (!target.requires_grad()) continue;
      mine[k].second.register_post_accumulate_grad_hook([target](const Tensor& leaf) mutable {
        Tensor g = leaf.grad().to(target.device());
        if (target.grad().defined())
          target.mutable_grad().add_(g);
        else
          target.set_grad(g.is_same(leaf.grad()) ? g.clone() : g);
        Tensor(leaf).mutable_grad() = Tensor();
      });
    }
    replicas_.push_back(std::move(r));
  }
}

void DataParallel::sync_replicas() {
  NoGradGuard no_grad;
  const nn::StateDict state = module_->state_dict();
  for (size_t i = 1; i < replicas_.size(); ++i) {
    replicas_[i]->train(is_training());
    nn::StateDict theirs = replicas_[i]->state_dict();
    for (size_t k = 0; k < theirs.size(); ++k) theirs[k].second.copy_(state[k].second);
  }
}

Tensor DataParallel::forward(const Tensor& input) {
  if (input.dim() == 0) throw ShapeError("DataParallel: the input needs a batch dimension to split");
  sync_replicas();
  const int64_t n = input.size(0);
  const int64_t k = static_cast<int64_t>(replicas_.size());
  const int64_t chunk = std::max<int64_t>(1, (n + k - 1) / k);
  const int64_t used = n == 0 ? 1 : (n + chunk - 1) / chunk;
  std::vector<Tensor> outputs(static_cast<size_t>(used));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(used));
  const bool grad_mode = grad_mode_enabled();
  auto run = [&](int64_t i) {
    try {
      set_grad_mode(grad_mode);  // grad mode is per thread
      const int64_t start = i * chunk;
      Tensor part = input.narrow(0, start, std::min(chunk, n - start)).to(devices_[i]);
      outputs[i] = (*replicas_[i])(part);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < used; ++i) threads.emplace_back(run, i);
  run(0);  // the first replica on the calling thread
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (Tensor& o : outputs) o = o.to(devices_[0]);
  return used == 1 ? outputs[0] : cat(outputs, 0);
}

}  // namespace ember::dist
