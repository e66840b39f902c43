// The CUDA runtime as Ember uses it: which devices exist, the current device, one
// stream per device on which every op is queued in order, and the device
// properties kernels size their grids from. Plain C++ (no kernels), so tensor/ and
// dist/ include it from .cpp files.
#pragma once

#include <cuda_runtime_api.h>

namespace ember::cuda {

// Number of usable devices; 0 (never an exception) when there is no driver, no
// device, or the driver is too old for this runtime.
int device_count_or_zero();
// The calling thread's current device (cudaGetDevice).
int current_device_index();
void set_device_index(int device);
// Ember's stream on `device` (-1: the current device): created on first use as a
// non-blocking stream, shared by all host threads, never destroyed.
cudaStream_t stream(int device = -1);
// Properties of `device`, read once (SM count, shared memory per block, L2 size).
const cudaDeviceProp& properties(int device = -1);

// Makes `device` current for a scope and restores the previous one after.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace ember::cuda
