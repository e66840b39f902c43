// The pinned staging cache and the host<->device copies built on it. Large copies
// go in chunks through two buffers, so the host memcpy of chunk i+1 overlaps the
// DMA of chunk i.
#include "kernels/cuda/pinned.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "kernels/cuda/check.h"

namespace ember::cuda {
namespace {

constexpr size_t kChunk = size_t(16) << 20;  // per staging buffer; big enough to reach full PCIe/NVLink speed

struct Entry {
  size_t size;
  cudaEvent_t ready;  // recorded after the last copy that used the buffer
  int device;         // the device `ready` was created on
};

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void*> free;  // by size
  std::unordered_map<void*, Entry> all;
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
  EMBER_CUDA_CHECK(cudaHostAlloc(&p, want, cudaHostAllocDefault));
  Entry e{want, nullptr, 0};
  EMBER_CUDA_CHECK(cudaGetDevice(&e.device));
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e.ready, cudaEventDisableTiming));
  std::lock_guard<std::mutex> lock(c.mutex);
  c.all[p] = e;
  return p;
}

void pinned_release(void* ptr, cudaStream_t stream) {
  if (!ptr) return;
  Cache& c = cache();
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
}

void host_to_device(void* device_dst, const void* host_src, size_t nbytes, cudaStream_t stream, bool blocking) {
  if (nbytes == 0) return;
  const size_t chunk = std::min(nbytes, kChunk);
  // Two buffers at most, however large the copy: the host fills one while the DMA
  // drains the other, and waits for a buffer's previous DMA before refilling it.
  void* stage[2] = {pinned_acquire(chunk), nbytes > chunk ? pinned_acquire(chunk) : nullptr};
  cudaEvent_t drained[2] = {nullptr, nullptr};
  for (cudaEvent_t& e : drained) EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  size_t i = 0;
  for (size_t done = 0; done < nbytes; done += chunk, ++i) {
    const size_t n = std::min(chunk, nbytes - done);
    if (i >= 2) EMBER_CUDA_CHECK(cudaEventSynchronize(drained[i % 2]));
    std::memcpy(stage[i % 2], static_cast<const char*>(host_src) + done, n);
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<char*>(device_dst) + done, stage[i % 2], n, cudaMemcpyHostToDevice, stream));
    EMBER_CUDA_CHECK(cudaEventRecord(drained[i % 2], stream));
  }
  for (cudaEvent_t e : drained) cudaEventDestroy(e);  // released once recorded work completes
  // Back to the cache, reusable once the copies queued on `stream` are done.
  pinned_release(stage[0], stream);
  pinned_release(stage[1], stream);
  if (blocking) EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void device_to_host(void* host_dst, const void* device_src, size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return;
  const size_t chunk = std::min(nbytes, kChunk);
  // Two buffers: while the host copies chunk i out of one, the DMA fills the other.
  void* stage[2] = {pinned_acquire(chunk), nbytes > chunk ? pinned_acquire(chunk) : nullptr};
  cudaEvent_t filled[2] = {nullptr, nullptr};
  for (cudaEvent_t& e : filled) EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const size_t chunks = (nbytes + chunk - 1) / chunk;
  auto enqueue = [&](size_t i) {
    const size_t n = std::min(chunk, nbytes - i * chunk);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(stage[i % 2], static_cast<const char*>(device_src) + i * chunk, n,
                                     cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaEventRecord(filled[i % 2], stream));
  };
  enqueue(0);
  for (size_t i = 0; i < chunks; ++i) {
    EMBER_CUDA_CHECK(cudaEventSynchronize(filled[i % 2]));
    if (i + 1 < chunks) enqueue(i + 1);
    const size_t n = std::min(chunk, nbytes - i * chunk);
    std::memcpy(static_cast<char*>(host_dst) + i * chunk, stage[i % 2], n);
  }
  for (cudaEvent_t e : filled) cudaEventDestroy(e);
  pinned_release(stage[0], nullptr);
  pinned_release(stage[1], nullptr);
}

}  // namespace ember::cuda
