// The caching allocator (see allocator.h for why it exists).
//
// Sizes are rounded to a size class: multiples of 512 bytes below 1 MiB, multiples of
// 2 MiB above. A freed block goes back to the free list of its (device, stream); an
// allocation takes the smallest cached block of at least its class from the list of
// its own stream, but never one more than twice its size (to bound waste), and only
// calls cudaMalloc when none fits. Blocks are never split, which keeps the code
// short; the 2x bound keeps the waste of that choice bounded.
#include "kernels/cuda/allocator.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"

namespace ember::cuda {
namespace {

constexpr size_t kSmall = 1 << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 2 << 20;

size_t size_class(size_t n) {
  const size_t r = n < kSmall ? kSmallRound : kLargeRound;
  return (n + r - 1) / r * r;
}

struct Block {
  int device;
  cudaStream_t stream;
  size_t size;
};

struct DeviceState {
  // free blocks by stream, then by size
  std::map<cudaStream_t, std::multimap<size_t, void*>> free;
  MemoryStats stats;
};

struct State {
  std::mutex mutex;
  std::unordered_map<void*, Block> live;    // handed out
  std::unordered_map<void*, Block> cached;  // in a free list
  std::map<int, DeviceState> devices;
};

State& state() {
  static State* s = new State;  // never destroyed: tensors may be freed by static destructors
  return *s;
}

// PyTorch's format_size: bytes, KiB, MiB or GiB with two decimals.
std::string format_size(size_t n) {
  char buf[64];
  if (n < 1024) std::snprintf(buf, sizeof buf, "%zu bytes", n);
  else if (n < (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", n / 1024.0);
  else if (n < (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  return buf;
}

// Frees every cached block of `device` (all devices when -1). Caller holds the lock.
void release_cached(State& s, int device) {
  for (auto it = s.cached.begin(); it != s.cached.end();) {
    if (device >= 0 && it->second.device != device) {
      ++it;
      continue;
    }
    DeviceScope guard(it->second.device);
    cudaFree(it->first);  // synchronizes the device, so no queued kernel still uses it
    s.devices[it->second.device].stats.reserved -= it->second.size;
    it = s.cached.erase(it);
  }
  for (auto& [d, ds] : s.devices)
    if (device < 0 || d == device) ds.free.clear();
}

void* take_cached(State& s, DeviceState& ds, cudaStream_t stream, size_t size) {
  auto list = ds.free.find(stream);
  if (list == ds.free.end()) return nullptr;
  auto it = list->second.lower_bound(size);
  if (it == list->second.end() || it->first > 2 * size) return nullptr;
  void* p = it->second;
  list->second.erase(it);
  s.live[p] = s.cached.at(p);
  s.cached.erase(p);
  return p;
}

}  // namespace

void* caching_malloc(size_t nbytes, int device, cudaStream_t stream) {
  if (nbytes == 0) return nullptr;
  const size_t size = size_class(nbytes);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  DeviceState& ds = s.devices[device];
  void* p = take_cached(s, ds, stream, size);
  size_t got = p ? s.live.at(p).size : size;
  if (!p) {
    DeviceScope guard(device);
    cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached(s, device);  // give the driver back what we hold, then try once more
      err = cudaMalloc(&p, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      throw OutOfMemoryError("CUDA out of memory. Tried to allocate " + format_size(size) + ". GPU " +
                             std::to_string(device) + " has a total capacity of " + format_size(total_b) +
                             " of which " + format_size(free_b) + " is free. Of the allocated memory " +
                             format_size(ds.stats.allocated) + " is allocated by Ember, and " +
                             format_size(ds.stats.reserved - ds.stats.allocated) +
                             " is reserved by Ember but unallocated.");
    }
    EMBER_CUDA_CHECK(err);
    ds.stats.reserved += size;
    ++ds.stats.num_mallocs;
    s.live[p] = Block{device, stream, size};
  }
  ds.stats.allocated += got;
  if (ds.stats.allocated > ds.stats.peak_allocated) ds.stats.peak_allocated = ds.stats.allocated;
  return p;
}

void caching_free(void* ptr) {
  if (!ptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.live.find(ptr);
  if (it == s.live.end()) return;  // not ours: nothing sensible to do in a deallocation path
  const Block b = it->second;
  s.live.erase(it);
  DeviceState& ds = s.devices[b.device];
  ds.stats.allocated -= b.size;
  // Work queued on b.stream that still reads the block runs before any later work
  // on that stream, and a reuse is only handed to the same stream: no sync needed.
  ds.free[b.stream].emplace(b.size, ptr);
  s.cached[ptr] = b;
}

MemoryStats memory_stats(int device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.devices.find(device);
  return it == s.devices.end() ? MemoryStats{} : it->second.stats;
}

void reset_peak_stats(int device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  MemoryStats& st = s.devices[device].stats;
  st.peak_allocated = st.allocated;
}

void release_all_cached() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  release_cached(s, -1);
}

}  // namespace ember::cuda
