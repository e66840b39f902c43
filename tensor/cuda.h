// The CUDA device API a user calls, mirroring torch.cuda. It exists in every build:
// without the CUDA backend (or on a machine with no driver or GPU) is_available()
// is false and device_count() is 0; the calls that need a device raise DeviceError.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>

EMBER_API_BEGIN

namespace ember::cuda {

bool is_available();
int device_count();
int current_device();
void set_device(int device);
// Waits for all work queued on `device`'s stream (-1: the current device).
void synchronize(int device = -1);

// Makes `device` current for a scope (a no-op guard for device -1).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Caching allocator statistics, in bytes, as torch.cuda reports them.
size_t memory_allocated(int device = -1);
size_t memory_reserved(int device = -1);
size_t max_memory_allocated(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Returns cached, unused device memory to the driver.
void empty_cache();

}  // namespace ember::cuda

EMBER_API_END
