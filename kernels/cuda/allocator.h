// The CUDA caching allocator. cudaMalloc and cudaFree synchronize the device and
// cost tens of microseconds, so freed blocks go to per-device, per-stream free lists
// keyed by size class and are handed out again without calling the driver. Blocks
// are released to the driver by empty_cache(), or when an allocation fails: then
// the cache is emptied and the allocation retried once before OutOfMemoryError.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace ember::cuda {

// Device memory for nbytes on `device`, to be used on `stream`. nbytes 0 gives
// nullptr. Raises OutOfMemoryError with PyTorch's detail (tried to allocate, total
// capacity, allocated, reserved, free) when the device is full.
void* caching_malloc(size_t nbytes, int device, cudaStream_t stream);
// Returns a block from caching_malloc to its free list (nullptr is ignored).
void caching_free(void* ptr);

struct MemoryStats {
  size_t allocated = 0;       // bytes in blocks handed out now (rounded sizes)
  size_t reserved = 0;        // bytes obtained from cudaMalloc and not yet released
  size_t peak_allocated = 0;  // the largest `allocated` since the last reset
  size_t num_mallocs = 0;     // cudaMalloc calls so far (to test that reuse skips it)
};
MemoryStats memory_stats(int device);
void reset_peak_stats(int device);
// Releases every cached, unused block of every device to the driver.
void release_all_cached();

// Scratch memory for one kernel call, returned to the cache when it goes out of
// scope (for workspaces: im2col buffers, partial sums, cuDNN workspaces).
class ScratchBuffer {
 public:
  ScratchBuffer(size_t nbytes, int device, cudaStream_t stream)
      : ptr_(caching_malloc(nbytes, device, stream)) {}
  ~ScratchBuffer() { caching_free(ptr_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_;
};

}  // namespace ember::cuda
