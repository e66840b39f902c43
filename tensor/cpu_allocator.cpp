// CPU allocator with a cache of large blocks (see cpu_allocator.h for why).
#include "tensor/cpu_allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/base/error.h"
#include "tensor/storage.h"

namespace ember {
namespace {

constexpr size_t kLarge = size_t{1} << 20;     // blocks from here on are cached
constexpr size_t kHugePage = size_t{2} << 20;  // and rounded to this

size_t default_limit() {
  if (const char* env = std::getenv("EMBER_CPU_CACHE_MB")) return static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
  return size_t{1} << 30;
}

class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, const Device&) override {
    if (nbytes == 0) return nullptr;
    if (nbytes < kLarge) return checked(std::aligned_alloc(64, round_up(nbytes, 64)), nbytes);
    const size_t size = round_up(nbytes, kHugePage);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        live_[p] = size;
        return p;
      }
    }
    void* p = std::aligned_alloc(kHugePage, size);
    if (!p) {  // the cache may hold what we need: give it back and retry once
      cpu_empty_cache();
      p = std::aligned_alloc(kHugePage, size);
    }
    checked(p, nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    live_[p] = size;
    return p;
  }

  void deallocate(void* p, const Device&) override {
    if (!p) return;
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end()) {  // a small block
      lock.unlock();
      std::free(p);
      return;
    }
    const size_t size = it->second;
    live_.erase(it);
    if (cached_ + size <= limit_) {
      free_[size].push_back(p);
      cached_ += size;
      return;
    }
    lock.unlock();
    std::free(p);
  }

  void empty() {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [size, ptrs] : blocks)
      for (void* p : ptrs) std::free(p);
  }
  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void set_limit(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    empty();
  }

 private:
  static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
  static void* checked(void* p, size_t nbytes) {
    if (!p) throw OutOfMemoryError("CPU out of memory: tried to allocate " + std::to_string(nbytes) + " bytes");
    return p;
  }

  std::mutex mutex_;
  std::unordered_map<void*, size_t> live_;       // large blocks in use, with their rounded size
  std::map<size_t, std::vector<void*>> free_;    // cached large blocks by size
  size_t cached_ = 0;
  size_t limit_ = default_limit();
};

CachingCpuAllocator& instance() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static auto* a = new CachingCpuAllocator();
  return *a;
}

}  // namespace

Allocator* cpu_allocator() { return &instance(); }
void cpu_empty_cache() { instance().empty(); }
size_t cpu_memory_cached() { return instance().cached(); }
void cpu_set_cache_limit(size_t bytes) { instance().set_limit(bytes); }

}  // namespace ember
