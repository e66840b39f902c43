// Storage and the CPU and meta allocators.
#include "tensor/storage.h"

#include <cstdlib>
#include <string>

#include "kernels/base/error.h"

namespace ember {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, const Device&) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    const size_t size = ((nbytes + 63) / 64) * 64;
    if (size == 0) return nullptr;
    void* p = std::aligned_alloc(64, size);
    if (!p)
      throw OutOfMemoryError("CPU out of memory: tried to allocate " + std::to_string(nbytes) + " bytes");
    return p;
  }
  void deallocate(void* ptr, const Device&) override { std::free(ptr); }
};

// Meta tensors have shapes but never memory.
class MetaAllocator final : public Allocator {
 public:
  void* allocate(size_t, const Device&) override { return nullptr; }
  void deallocate(void*, const Device&) override {}
};

CpuAllocator cpu_allocator;
MetaAllocator meta_allocator;
Allocator* allocators[3] = {&cpu_allocator, nullptr, &meta_allocator};

}  // namespace

Allocator* get_allocator(DeviceType type) { return allocators[static_cast<int>(type)]; }
void set_allocator(DeviceType type, Allocator* allocator) { allocators[static_cast<int>(type)] = allocator; }

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
    if (data_) get_allocator(device_.type())->deallocate(data_, device_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace ember
