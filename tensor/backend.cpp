// backend_of, stream_of and the device scope they hold (see backend.h).
#include "tensor/backend.h"

#include "tensor/checks.h"
#include "tensor/cuda.h"
#include "tensor/emu.h"

#if EMBER_HAVE_CUDA
#include "kernels/cuda/runtime.h"
#endif

namespace ember {
namespace {

// The calling thread's current device of an indexed type (-1 when there is none).
int current_index(DeviceType type) {
  switch (type) {
    case DeviceType::CUDA: return EMBER_CUDA_OR(cuda::current_device_index(), -1);
    case DeviceType::Emu: return emu::current_device();
    case DeviceType::CPU: case DeviceType::Meta: return -1;
  }
  return -1;
}

void set_current_index(DeviceType type, int index) {
  switch (type) {
    case DeviceType::CUDA: EMBER_CUDA(cuda::set_device_index(index)); break;
    case DeviceType::Emu: emu::set_device(index); break;
    case DeviceType::CPU: case DeviceType::Meta: break;
  }
}

}  // namespace

ScopedDevice::ScopedDevice(const Device& device) : type_(device.type()) {
  if (!device.has_index() || device.index() < 0) return;
  const int previous = current_index(type_);
  if (previous == device.index()) return;
  set_current_index(type_, device.index());
  previous_ = previous;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ < 0) return;
  try {
    set_current_index(type_, previous_);
  } catch (...) {  // a destructor must not throw; the device it restores existed a moment ago
  }
}

Device resolve_device(const Device& device) {
  if (!device.has_index() || device.index() >= 0) return device;
  if (device.is_cuda()) return Device(DeviceType::CUDA, cuda::current_device());  // DeviceError without CUDA
  return Device(device.type(), current_index(device.type()));
}

OpBackend backend_of(const char* op, const Tensor& t) {
  switch (t.device().type()) {
    case DeviceType::CPU: return OpBackend(Backend::CPU, t.device());
    case DeviceType::Emu: return OpBackend(Backend::CPU, t.device());  // CPU kernels on emu's host memory
    case DeviceType::Meta: return OpBackend(Backend::None, t.device());
    case DeviceType::CUDA:
      if (!EMBER_HAVE_CUDA) throw_no_kernel(op, t);
      return OpBackend(Backend::CUDA, t.device());
  }
  return OpBackend(Backend::None, t.device());
}

#if EMBER_HAVE_CUDA
ScopedStream::ScopedStream(const Tensor& t) : scope_(t.device()), stream_(cuda::stream(t.device().index())) {}
#endif

}  // namespace ember
