// DataParallel: one process, one replica of the module per device. Each forward
// splits the batch along dimension 0 into one chunk per device, runs the replicas
// on their own threads, and gathers the outputs on the first device; backward
// then adds every replica's gradients into the parameters of the module itself
// (the replica on the first device), so an optimizer over module->parameters()
// sees the gradient of the whole batch. Works with a list of CPU devices too.
//
// Ember's modules cannot copy themselves, so the caller passes a factory that
// builds a module of the same architecture; its values are overwritten from the
// module before every forward.
#pragma once

#include "kernels/base/export.h"

#include <functional>
#include <memory>
#include <vector>

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::dist {

class DataParallel : public nn::Module {
 public:
  using Factory = std::function<std::shared_ptr<nn::Module>()>;
  // `module` must live on devices[0]. Raises ValueError for an empty device list
  // or replicas whose parameters differ from the module's, DeviceError when the
  // module is elsewhere.
  DataParallel(std::shared_ptr<nn::Module> module, std::vector<Device> devices, Factory make_replica);

  Tensor forward(const Tensor& input) override;
  nn::Module& module() { return *module_; }
  const std::vector<Device>& devices() const { return devices_; }

 private:
  void sync_replicas();

  std::shared_ptr<nn::Module> module_;
  std::vector<Device> devices_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;  // [0] is module_ itself
};

}  // namespace ember::dist

EMBER_API_END
