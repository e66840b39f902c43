// CPU allocator with a cache of large blocks and per-thread caches of small ones,
// counting what tensors hold against an optional limit (see cpu_allocator.h for why).
#include "tensor/cpu_allocator.h"

#include <array>
#include <atomic>
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

// EMBER_CPU_MEMORY_LIMIT_MB, read once: the limit in bytes (0: none), or why the
// variable is not one. A misspelt limit is an error, not silently no limit.
struct EnvLimit {
  size_t bytes = 0;
  std::string error;
};

EnvLimit env_memory_limit() {
  const char* env = std::getenv("EMBER_CPU_MEMORY_LIMIT_MB");
  if (!env) return {};
  const std::string text = env;
  size_t mib = 0;
  bool ok = !text.empty() && text.size() <= 12;  // at most 10^12 MiB: no overflow below
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) mib = mib * 10 + static_cast<size_t>(c - '0');
  }
  if (!ok) return {0, "EMBER_CPU_MEMORY_LIMIT_MB must be a whole number of MiB, got '" + text + "'"};
  return {mib << 20, {}};
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// ---- small blocks: per-thread free lists by size class ----
// Size classes: multiples of 64 B up to 1 KiB, then four per power of two up to
// 1 MiB (at most a quarter wasted), 56 in all.
constexpr int kClasses = 16 + 10 * 4;
constexpr size_t kThreadCacheBytes = size_t{4} << 20;  // per thread
constexpr size_t kPerClass = 64;                       // blocks per class and thread

int floor_log2(size_t n) { return 63 - __builtin_clzll(n); }

size_t class_size(size_t n) {
  if (n <= 1024) return round_up(n, 64);
  return round_up(n, size_t{1} << (floor_log2(n - 1) - 2));
}

int class_index(size_t size) {  // `size` is a class size
  if (size <= 1024) return static_cast<int>(size / 64) - 1;
  const int top = floor_log2(size - 1);
  return 16 + (top - 10) * 4 + static_cast<int>((size - (size_t{1} << top)) >> (top - 2)) - 1;
}

// Whether small blocks are cached: not under AddressSanitizer, whose
// use-after-free reports need every block to go back to it.
constexpr bool kCacheSmall =
#if defined(__SANITIZE_ADDRESS__)
    false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    false;
#else
    true;
#endif
#else
    true;
#endif

// A thread's cached small blocks. Inference makes and frees the same small
// intermediates on every call; glibc's aligned allocations of them (with their
// splitting and consolidation of chunks) took a fifth of a batch-1 transformer.
// A block freed on another thread than it was made on joins that thread's cache.
struct SmallCache {
  std::array<std::vector<void*>, kClasses> lists;
  size_t bytes = 0;
  ~SmallCache();
  void drain() {
    for (auto& list : lists) {
      for (void* p : list) std::free(p);
      list.clear();
    }
    bytes = 0;
  }
};
// False once this thread's cache is destroyed (thread exit): frees after that go
// straight to the C library. A trivially destructible flag stays readable then.
thread_local bool small_cache_alive = false;
SmallCache::~SmallCache() {
  drain();
  small_cache_alive = false;
}
thread_local SmallCache small_cache;

SmallCache* this_thread_cache() {
  if (!kCacheSmall) return nullptr;
  thread_local bool made = false;  // so that a free during thread exit does not remake it
  if (!made) {
    made = true;
    small_cache_alive = true;
    (void)small_cache.bytes;  // constructs it, registering its destructor
  }
  return small_cache_alive ? &small_cache : nullptr;
}

class CachingCpuAllocator final : public Allocator {
 public:
  CachingCpuAllocator() : CachingCpuAllocator(env_memory_limit()) {}
  explicit CachingCpuAllocator(EnvLimit env) : env_error_(std::move(env.error)) {
    memory_limit_.store(env.bytes);
    env_bad_.store(!env_error_.empty());
  }

  void* allocate(size_t nbytes, const Device&) override {
    if (nbytes == 0) return nullptr;
    charge(nbytes);
    try {
      return nbytes < kLarge ? allocate_small(nbytes) : allocate_large(nbytes);
    } catch (...) {
      in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
      throw;
    }
  }

  void deallocate(void* p, size_t nbytes, const Device&) override {
    if (!p) return;
    in_use_.fetch_sub(nbytes, std::memory_order_relaxed);
    if (nbytes < kLarge) return deallocate_small(p, nbytes);
    deallocate_large(p);
  }

  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  size_t memory_limit() const { return memory_limit_.load(std::memory_order_relaxed); }
  void set_memory_limit(size_t bytes) {
    memory_limit_.store(bytes, std::memory_order_relaxed);
    env_bad_.store(false, std::memory_order_relaxed);  // the program's limit replaces a malformed variable
  }

  void empty() {
    if (SmallCache* c = this_thread_cache()) c->drain();
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
  // Counts an allocation; over the limit, OutOfMemoryError and nothing counted.
  // Under a limit the count moves only by compare-and-swap, so a refused request
  // never shows in it, even for a moment: another thread's allocation is judged
  // on what tensors really hold.
  void charge(size_t nbytes) {
    if (env_bad_.load(std::memory_order_relaxed)) [[unlikely]]
      throw ValueError(env_error_);
    const size_t limit = memory_limit_.load(std::memory_order_relaxed);
    if (limit == 0) [[likely]] {
      in_use_.fetch_add(nbytes, std::memory_order_relaxed);
      return;
    }
    size_t held = in_use_.load(std::memory_order_relaxed);
    do {
      if (nbytes > limit || held > limit - nbytes)
        throw OutOfMemoryError("CPU out of memory: tried to allocate " + std::to_string(nbytes) + " bytes with " +
                               std::to_string(held) + " bytes already allocated, over the limit of " +
                               std::to_string(limit) + " bytes (cpu_set_memory_limit)");
    } while (!in_use_.compare_exchange_weak(held, held + nbytes, std::memory_order_relaxed));
  }

  // Blocks of 1 MiB and more: rounded to 2 MiB, served from the cache when it
  // holds one of that size.
  void* allocate_large(size_t nbytes) {
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

  void deallocate_large(void* p) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end()) {  // not from this allocator's large path: a plain free
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

  static void* allocate_small(size_t nbytes) {
    const size_t size = class_size(nbytes);
    SmallCache* c = this_thread_cache();
    if (c) {
      auto& list = c->lists[static_cast<size_t>(class_index(size))];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        c->bytes -= size;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size);
    if (!p && c) {  // what this thread holds may be what is missing
      c->drain();
      p = std::aligned_alloc(64, size);
    }
    return checked(p, nbytes);
  }

  static void deallocate_small(void* p, size_t nbytes) {
    const size_t size = class_size(nbytes);
    SmallCache* c = this_thread_cache();
    if (c) {
      auto& list = c->lists[static_cast<size_t>(class_index(size))];
      if (list.size() < kPerClass && c->bytes + size <= kThreadCacheBytes) {
        list.push_back(p);
        c->bytes += size;
        return;
      }
    }
    std::free(p);
  }

  static void* checked(void* p, size_t nbytes) {
    if (!p) throw OutOfMemoryError("CPU out of memory: tried to allocate " + std::to_string(nbytes) + " bytes");
    return p;
  }

  std::mutex mutex_;
  std::unordered_map<void*, size_t> live_;       // large blocks in use, with their rounded size
  std::map<size_t, std::vector<void*>> free_;    // cached large blocks by size
  size_t cached_ = 0;
  size_t limit_ = default_limit();                // of the cache
  std::atomic<size_t> in_use_{0};                 // bytes tensors hold (cpu_memory_allocated)
  std::atomic<size_t> memory_limit_{0};           // 0: none
  const std::string env_error_;                   // why EMBER_CPU_MEMORY_LIMIT_MB is malformed
  std::atomic<bool> env_bad_{false};              // it is, and the program set no limit since
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
size_t cpu_memory_allocated() { return instance().in_use(); }
void cpu_set_memory_limit(size_t bytes) { instance().set_memory_limit(bytes); }
size_t cpu_memory_limit() { return instance().memory_limit(); }

}  // namespace ember
