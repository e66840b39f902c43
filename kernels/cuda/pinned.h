// Page-locked ("pinned") host buffers for transfers. The DMA engine can only read
// and write pinned memory; a cudaMemcpy from ordinary memory is staged through a
// driver buffer and blocks the host. Ember stages through its own pinned buffers,
// cached because cudaHostAlloc is slow (it maps pages for the device).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace ember::cuda {

// A pinned buffer of at least nbytes, not in use by any queued copy.
void* pinned_acquire(size_t nbytes);
// Returns a buffer to the cache once the work queued so far on `stream` is done
// (an event recorded now guards its reuse). stream nullptr: free for reuse at once.
// `stream` must belong to the current device.
void pinned_release(void* ptr, cudaStream_t stream);
// Buffers handed out by pinned_acquire and not yet released (0 between copies:
// a copy that raised midway has given its buffers back too).
size_t pinned_in_use();
// Bytes of pinned memory the cache holds, in use or not. When a buffer comes back
// and the cache holds more than 256 MiB, idle buffers are freed (largest first)
// down to 256 MiB; when cudaHostAlloc fails, every idle one, and it retries once.
size_t pinned_cached_bytes();

// Copies between host and device memory on `stream` through a pinned buffer.
// host_to_device returns once the host data is staged (the caller may then reuse
// it); with `blocking` it also waits for the copy. device_to_host always waits,
// since the host memory is the caller's and must hold the data on return.
void host_to_device(void* device_dst, const void* host_src, size_t nbytes, cudaStream_t stream, bool blocking);
void device_to_host(void* host_dst, const void* device_src, size_t nbytes, cudaStream_t stream);

}  // namespace ember::cuda
