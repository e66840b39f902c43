// Devices, the current device and Ember's one stream per device.
#include "kernels/cuda/runtime.h"

#include <array>
#include <mutex>

#include "kernels/base/error.h"
#include "kernels/cuda/check.h"

namespace ember::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceTable {
  std::mutex mutex;
  std::array<cudaStream_t, kMaxDevices> streams{};
  std::array<bool, kMaxDevices> have_props{};
  std::array<cudaDeviceProp, kMaxDevices> props{};
};

DeviceTable& table() {
  static DeviceTable* t = new DeviceTable;  // never destroyed: streams outlive static destructors
  return *t;
}

int resolve(int device) {
  const int d = device < 0 ? current_device_index() : device;
  if (d >= kMaxDevices || d >= device_count_or_zero())
    throw DeviceError("CUDA error: invalid device ordinal " + std::to_string(d));
  return d;
}

}  // namespace

int device_count_or_zero() {
  // Asked once: the answer cannot change while the process runs, and a machine with
  // no driver answers with an error, which means zero devices here.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

int current_device_index() {
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device_index(int device) { EMBER_CUDA_CHECK(cudaSetDevice(resolve(device))); }

cudaStream_t stream(int device) {
  const int d = resolve(device);
  DeviceTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.streams[d]) {
    DeviceScope guard(d);
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&t.streams[d], cudaStreamNonBlocking));
  }
  return t.streams[d];
}

const cudaDeviceProp& properties(int device) {
  const int d = resolve(device);
  DeviceTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.have_props[d]) {
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&t.props[d], d));
    t.have_props[d] = true;
  }
  return t.props[d];
}

DeviceScope::DeviceScope(int device) {
  if (device < 0) return;
  previous_ = current_device_index();
  if (previous_ != device) EMBER_CUDA_CHECK(cudaSetDevice(device));
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) cudaSetDevice(previous_);  // a destructor must not throw
}

}  // namespace ember::cuda
