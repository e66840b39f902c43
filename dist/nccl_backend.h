// The NCCL backend: collectives on CUDA tensors. One rank per GPU (the rank's
// place among the ranks on its host picks the device); NCCL's unique id travels
// from rank 0 over MPI; NCCL runs on a stream of its own per device, ordered after
// the work already queued on Ember's compute stream and before any work queued
// after the collective. Built only when EMBER_HAVE_NCCL.
#pragma once

#include "kernels/base/export.h"

#include "ember_config.h"
#if EMBER_HAVE_NCCL

#include <memory>

#include "dist/process_group.h"

EMBER_API_BEGIN

namespace ember::dist {

struct NcclState;  // nccl_backend.cpp

class NcclProcessGroup : public ProcessGroup {
 public:
  // Collective over every process the MPI launcher started. Raises DistError when
  // there is no CUDA device or NCCL cannot start within `timeout`.
  static std::unique_ptr<NcclProcessGroup> create(std::chrono::milliseconds timeout);
  ~NcclProcessGroup() override;
  // The CUDA device this rank's tensors must be on.
  int device() const;
  Device collective_device() const override { return Device(DeviceType::CUDA, device()); }

 protected:
  void check_device(const Tensor& t, const char* collective) const override;

 private:
  NcclProcessGroup(std::shared_ptr<NcclState> state, int rank, int size, std::unique_ptr<CommThread> thread);
  std::shared_ptr<NcclState> state_;
};

}  // namespace ember::dist

#endif  // EMBER_HAVE_NCCL

EMBER_API_END
