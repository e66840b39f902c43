// Storage: one allocation shared by every view of it. Each device type has an
// Allocator; the CPU one returns 64-byte aligned memory (a cache line, and the
// width of an AVX-512 load). Meta storage has a size but no memory.
#pragma once

#include "kernels/base/export.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "tensor/device.h"

EMBER_API_BEGIN

namespace ember {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes (nbytes may be 0) or raises OutOfMemoryError.
  virtual void* allocate(size_t nbytes, const Device& device) = 0;
  // Frees what allocate(nbytes, device) returned; nbytes is the size asked for.
  virtual void deallocate(void* ptr, size_t nbytes, const Device& device) = 0;
};

// The allocator for a device type; registering replaces it (the CUDA backend
// registers its caching allocator when it loads).
Allocator* get_allocator(DeviceType type);
void set_allocator(DeviceType type, Allocator* allocator);

class Storage {
 public:
  // Owns nbytes from the device's allocator.
  Storage(size_t nbytes, Device device);
  // Wraps caller memory; `deleter` (may be empty) runs when the last view is gone.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  // Bumped by every in-place write; shared by all views of the storage, so a
  // tensor saved for backward can tell that it was modified (see tensor/graph.h).
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::function<void(void*)> deleter_;
  bool owned_ = false;
  std::atomic<uint64_t> version_{0};
};

}  // namespace ember

EMBER_API_END
