// The emulated device (tensor/emu.h): its per-thread current device, its counters and
// the allocator Storage uses for emu tensors.
#include "tensor/emu.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/base/error.h"
#include "tensor/storage.h"

namespace ember::emu {
namespace {

thread_local int current = 0;
thread_local Counters thread_counters;

int checked(int device) {
  if (device < 0 || device >= kDeviceCount)
    throw DeviceError("emu: invalid device ordinal " + std::to_string(device) + " (" + std::to_string(kDeviceCount) +
                      " devices)");
  return device;
}

// Host memory, 64-byte aligned like the CPU's, with a book of live bytes per device
// so tests can see that temporaries are freed.
class EmuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, const Device& device) override {
    const int d = checked(device.index() < 0 ? current : device.index());
    if (nbytes == 0) return nullptr;
    void* p = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (!p) throw OutOfMemoryError("emu: out of memory allocating " + std::to_string(nbytes) + " bytes");
    std::lock_guard<std::mutex> lock(mutex_);
    live_[p] = {d, nbytes};
    held_[d] += nbytes;
    return p;
  }
  void deallocate(void* ptr, size_t, const Device&) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(ptr);
      if (it == live_.end()) return;  // not ours: nothing to free
      held_[it->second.device] -= it->second.nbytes;
      live_.erase(it);
    }
    std::free(ptr);
  }
  size_t held(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_[checked(device)];
  }

 private:
  struct Block { int device; size_t nbytes; };
  std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::array<size_t, kDeviceCount> held_{};
};

EmuAllocator& allocator() {
  static EmuAllocator* a = new EmuAllocator;  // never destroyed: tensors may outlive static destructors
  return *a;
}

}  // namespace

int device_count() { return kDeviceCount; }
int current_device() { return current; }

void set_device(int device) {
  if (checked(device) != current) ++thread_counters.device_switches;
  current = device;
}

Counters counters() { return thread_counters; }
void reset_counters() { thread_counters = Counters{}; }

size_t memory_allocated(int device) { return allocator().held(device); }

void transfer(void* dst, const void* src, size_t nbytes, Transfer kind, bool non_blocking) {
  switch (kind) {
    case Transfer::HostToDevice:
      ++thread_counters.host_to_device;
      if (non_blocking) ++thread_counters.non_blocking;
      break;
    case Transfer::DeviceToHost: ++thread_counters.device_to_host; break;
    case Transfer::DeviceToDevice: ++thread_counters.device_to_device; break;
  }
  thread_counters.bytes += static_cast<int64_t>(nbytes);
  if (nbytes) std::memcpy(dst, src, nbytes);
}

}  // namespace ember::emu

namespace ember {
Allocator* emu_allocator() { return &emu::allocator(); }
}  // namespace ember
