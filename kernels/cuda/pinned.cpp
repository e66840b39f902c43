// The pinned staging cache and the host<->device copies built on it. Large copies
// go in chunks through two buffers, so the host memcpy of chunk i+1 overlaps the
// DMA of chunk i. A copy that raises midway still gives its buffers and events back.
#include "kernels/cuda/pinned.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/check.h"

namespace ember::cuda {
namespace {

constexpr size_t kChunk = size_t(16) << 20;  // per staging buffer; big enough to reach full PCIe/NVLink speed
// Pinned memory the cache keeps past its copies. Non-blocking copies queued back to
// back each hold their buffers until the DMA is done, so the cache may grow past
// this while they run; once they are done, the next release trims it back.
constexpr size_t kMaxCachedBytes = size_t(256) << 20;

struct Entry {
  size_t size;
  cudaEvent_t ready;  // recorded after the last copy that used the buffer
  int device;         // the device `ready` was created on
};

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free;  // by size
  std::unordered_map<void*, Entry> all;
  size_t bytes = 0;  // of every buffer in `all`
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: buffers may be released at exit
  return *c;
}

size_t round_up(size_t n) {
  size_t r = 4096;
  while (r < n) r *= 2;
  return r;
}

// Takes cached buffers that no queued copy still uses (their event has completed)
// out of the cache, largest first, until it holds at most `keep` bytes; returns them
// for release_buffers. The caller holds c.mutex.
std::vector<void*> take_idle(Cache& c, size_t keep) {
  std::vector<void*> out;
  for (auto it = c.free.end(); it != c.free.begin() && c.bytes > keep;) {
    --it;
    const auto found = c.all.find(it->second);
    Entry& e = found->second;
    if (e.ready && cudaEventQuery(e.ready) != cudaSuccess) {
      cudaGetLastError();  // cudaErrorNotReady
      continue;
    }
    if (e.ready) cudaEventDestroy(e.ready);
    c.bytes -= e.size;
    out.push_back(it->second);
    c.all.erase(found);
    it = c.free.erase(it);
  }
  return out;
}

// Gives buffers back to the system, outside the cache's lock: cudaFreeHost may wait
// for the device.
void release_buffers(const std::vector<void*>& buffers) {
  for (void* p : buffers) cudaFreeHost(p);
}

}  // namespace

void* pinned_acquire(size_t nbytes) {
  Cache& c = cache();
  const size_t want = round_up(std::max<size_t>(nbytes, 1));
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.free.lower_bound(want); it != c.free.end() && it->first <= 2 * want; ++it) {
      Entry& e = c.all.at(it->second);
      if (cudaEventQuery(e.ready) == cudaSuccess) {
        void* p = it->second;
        c.free.erase(it);
        return p;
      }
      cudaGetLastError();  // cudaErrorNotReady is not an error worth keeping
    }
  }
  void* p = nullptr;
  cudaError_t st = cudaHostAlloc(&p, want, cudaHostAllocDefault);
  if (st == cudaErrorMemoryAllocation) {
    // The host is short of page-locked memory: give back what the cache holds idle
    // and try once more.
    cudaGetLastError();
    std::vector<void*> idle;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      idle = take_idle(c, 0);
    }
    release_buffers(idle);
    st = cudaHostAlloc(&p, want, cudaHostAllocDefault);
  }
  EMBER_CUDA_CHECK(st);
  Entry e{want, nullptr, 0};
  try {
    EMBER_CUDA_CHECK(cudaGetDevice(&e.device));
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e.ready, cudaEventDisableTiming));
    std::lock_guard<std::mutex> lock(c.mutex);
    c.all[p] = e;
    c.bytes += want;
  } catch (...) {
    if (e.ready) cudaEventDestroy(e.ready);
    cudaFreeHost(p);
    throw;
  }
  return p;
}

size_t pinned_in_use() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.all.size() - c.free.size();
}

size_t pinned_cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

void pinned_release(void* ptr, cudaStream_t stream) {
  if (!ptr) return;
  Cache& c = cache();
  std::vector<void*> idle;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    Entry& e = c.all.at(ptr);
    if (stream) {
      // An event can only be recorded on a stream of its own device, and a buffer
      // may come back from a copy to another GPU: then the event is made anew on the
      // current device (the caller's, that of `stream`). The old one has completed:
      // pinned_acquire hands out only buffers whose event has.
      int device = 0;
      EMBER_CUDA_CHECK(cudaGetDevice(&device));
      if (device != e.device) {
        cudaEventDestroy(e.ready);
        e.ready = nullptr;
        EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e.ready, cudaEventDisableTiming));
        e.device = device;
      }
      EMBER_CUDA_CHECK(cudaEventRecord(e.ready, stream));
    }
    c.free.emplace(e.size, ptr);
    if (c.bytes > kMaxCachedBytes) idle = take_idle(c, kMaxCachedBytes);
  }
  release_buffers(idle);
}

namespace {

// The staging buffers and events of one chunked copy. A copy that finishes hands
// its buffers back with finish(); one that raises midway leaves them to the
// destructor, which first waits for the copies already queued on the stream (they
// may still read or write a buffer) and then frees everything without throwing.
class Staging {
 public:
  // Delegates to the private constructor so that, once that has run, a raise while
  // acquiring still runs the destructor and frees what was acquired.
  Staging(size_t chunk, size_t nbytes, cudaStream_t stream) : Staging(stream) {
    buffer[0] = pinned_acquire(chunk);
    if (nbytes > chunk) buffer[1] = pinned_acquire(chunk);
    for (cudaEvent_t& e : event) EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    destroy_events();
    if (!buffer[0] && !buffer[1]) return;
    cudaStreamSynchronize(stream_);  // its error, if any, is the one already raised
    cudaGetLastError();
    for (void* b : buffer) pinned_release(b, nullptr);  // never raises without a stream
  }
  // The copy is done or queued on `release_stream`: the buffers go back to the
  // cache, reusable once the work queued there so far is done (nullptr: at once).
  void finish(cudaStream_t release_stream) {
    destroy_events();  // released once recorded work completes
    for (void*& b : buffer) {
      pinned_release(b, release_stream);
      b = nullptr;  // only now: a release that raised is redone by the destructor
    }
  }
  void* buffer[2] = {nullptr, nullptr};
  cudaEvent_t event[2] = {nullptr, nullptr};

 private:
  explicit Staging(cudaStream_t stream) : stream_(stream) {}
  void destroy_events() {
    for (cudaEvent_t& e : event) {
      if (e) cudaEventDestroy(e);
      e = nullptr;
    }
  }
  cudaStream_t stream_;
};

}  // namespace

void host_to_device(void* device_dst, const void* host_src, size_t nbytes, cudaStream_t stream, bool blocking) {
  if (nbytes == 0) return;
  const size_t chunk = std::min(nbytes, kChunk);
  // Two buffers at most, however large the copy: the host fills one while the DMA
  // drains the other, and waits for a buffer's previous DMA before refilling it.
  Staging st(chunk, nbytes, stream);
  size_t i = 0;
  for (size_t done = 0; done < nbytes; done += chunk, ++i) {
    const size_t n = std::min(chunk, nbytes - done);
    if (i >= 2) EMBER_CUDA_CHECK(cudaEventSynchronize(st.event[i % 2]));
    std::memcpy(st.buffer[i % 2], static_cast<const char*>(host_src) + done, n);
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<char*>(device_dst) + done, st.buffer[i % 2], n, cudaMemcpyHostToDevice, stream));
    EMBER_CUDA_CHECK(cudaEventRecord(st.event[i % 2], stream));
  }
  // Back to the cache, reusable once the copies queued on `stream` are done.
  st.finish(stream);
  if (blocking) EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void device_to_host(void* host_dst, const void* device_src, size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return;
  const size_t chunk = std::min(nbytes, kChunk);
  // Two buffers: while the host copies chunk i out of one, the DMA fills the other.
  Staging st(chunk, nbytes, stream);
  const size_t chunks = (nbytes + chunk - 1) / chunk;
  auto enqueue = [&](size_t i) {
    const size_t n = std::min(chunk, nbytes - i * chunk);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(st.buffer[i % 2], static_cast<const char*>(device_src) + i * chunk, n,
                                     cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaEventRecord(st.event[i % 2], stream));
  };
  enqueue(0);
  for (size_t i = 0; i < chunks; ++i) {
    EMBER_CUDA_CHECK(cudaEventSynchronize(st.event[i % 2]));
    if (i + 1 < chunks) enqueue(i + 1);
    const size_t n = std::min(chunk, nbytes - i * chunk);
    std::memcpy(static_cast<char*>(host_dst) + i * chunk, st.buffer[i % 2], n);
  }
  st.finish(nullptr);
}

}  // namespace ember::cuda
