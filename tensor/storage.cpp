// Storage, and the table of allocators per device type (CPU: cpu_allocator.cpp).
#include "tensor/storage.h"

#include <string>

#include "ember_config.h"
#include "kernels/base/error.h"

namespace ember {

Allocator* cpu_allocator();  // tensor/cpu_allocator.cpp
Allocator* emu_allocator();  // tensor/emu.cpp
#if EMBER_HAVE_CUDA
Allocator* cuda_allocator();  // tensor/cuda_allocator.cpp: null when no device is present
#else
inline Allocator* cuda_allocator() { return nullptr; }
#endif

namespace {

// Meta tensors have shapes but never memory.
class MetaAllocator final : public Allocator {
 public:
  void* allocate(size_t, const Device&) override { return nullptr; }
  void deallocate(void*, size_t, const Device&) override {}
};

MetaAllocator meta_allocator;

// A function-local table, so tensors created by other files' static initializers
// still find the CPU allocator.
Allocator*& slot(DeviceType type) {
  static Allocator* table[kNumDeviceTypes] = {cpu_allocator(), cuda_allocator(), &meta_allocator, emu_allocator()};
  return table[static_cast<int>(type)];
}

}  // namespace

Allocator* get_allocator(DeviceType type) { return slot(type); }
void set_allocator(DeviceType type, Allocator* allocator) { slot(type) = allocator; }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device), owned_(true) {
  Allocator* a = get_allocator(device.type());
  if (!a)
    throw DeviceError("CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
  data_ = a->allocate(nbytes, device);
}

Storage::Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (owned_) {
    if (data_) get_allocator(device_.type())->deallocate(data_, nbytes_, device_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace ember
