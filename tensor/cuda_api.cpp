// The user-facing CUDA device API (tensor/cuda.h). With the CUDA backend built it
// forwards to kernels/cuda/runtime and allocator; without it, no device exists:
// is_available() is false and the calls that need a device raise DeviceError.
#include "tensor/cuda.h"

#include "ember_config.h"
#include "kernels/base/error.h"
#include "tensor/storage.h"

#if EMBER_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/allocator.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace ember::cuda {
namespace {

constexpr const char* kNoCuda =
    "CUDA is not available: Ember was built without CUDA support or no CUDA device is present";

#if EMBER_HAVE_CUDA
int require(int device) {
  if (!is_available()) throw DeviceError(kNoCuda);
  const int d = device < 0 ? current_device_index() : device;
  if (d >= device_count_or_zero())
    throw DeviceError("CUDA error: invalid device ordinal " + std::to_string(d) + " (" +
                      std::to_string(device_count_or_zero()) + " devices)");
  return d;
}
#endif

}  // namespace

#if EMBER_HAVE_CUDA
bool is_available() { return device_count_or_zero() > 0; }
int device_count() { return device_count_or_zero(); }
int current_device() { return require(-1); }
void set_device(int device) { set_device_index(require(device)); }
void synchronize(int device) {
  const int d = require(device);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(d)));
}
DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  previous_ = current_device_index();
  if (previous_ != device) set_device(device);
}
DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}
size_t memory_allocated(int device) { return memory_stats(require(device)).allocated; }
size_t memory_reserved(int device) { return memory_stats(require(device)).reserved; }
size_t max_memory_allocated(int device) { return memory_stats(require(device)).peak_allocated; }
void reset_peak_memory_stats(int device) { reset_peak_stats(require(device)); }
void empty_cache() {
  if (is_available()) release_all_cached();
}
#else
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { throw DeviceError(kNoCuda); }
void set_device(int) { throw DeviceError(kNoCuda); }
void synchronize(int) { throw DeviceError(kNoCuda); }
DeviceGuard::DeviceGuard(int device) {
  if (device >= 0) throw DeviceError(kNoCuda);
}
DeviceGuard::~DeviceGuard() = default;
size_t memory_allocated(int) { throw DeviceError(kNoCuda); }
size_t memory_reserved(int) { throw DeviceError(kNoCuda); }
size_t max_memory_allocated(int) { throw DeviceError(kNoCuda); }
void reset_peak_memory_stats(int) { throw DeviceError(kNoCuda); }
void empty_cache() {}  // nothing is cached without a device
#endif

}  // namespace ember::cuda
