// The CPU allocator. Blocks under 1 MiB are rounded to a size class (64 B steps
// to 1 KiB, then four classes per power of two) and, when freed, kept in a cache
// of the freeing thread (at most 4 MiB and 64 blocks per class), from which that
// thread's next allocation of the class is served: inference makes and frees
// the same small tensors on every call, and the C library's aligned allocation
// of them cost a fifth of a batch-1 transformer. (Builds with AddressSanitizer
// do not cache them, so its use-after-free reports keep working.) Blocks of
// 1 MiB and more are rounded up to 2 MiB and kept in a bounded cache when freed:
// a fresh large block costs a page fault per 4 KiB page and the kernel zeroing it,
// which for `a + b` on 64 MB tensors took longer than the addition itself. (Asking
// for transparent huge pages made first touches slower here: the kernel compacts
// memory synchronously to find them.)
#pragma once

#include "kernels/base/export.h"

#include <cstddef>

EMBER_API_BEGIN

namespace ember {

// Returns every cached large block, and the calling thread's small ones, to the system.
void cpu_empty_cache();
// Bytes held in the cache of large blocks (freed by tensors, not yet returned).
size_t cpu_memory_cached();
// The most the cache may hold; 0 disables caching. Default 1 GiB, or the
// EMBER_CPU_CACHE_MB environment variable (in MiB) when set.
void cpu_set_cache_limit(size_t bytes);

}  // namespace ember

EMBER_API_END
