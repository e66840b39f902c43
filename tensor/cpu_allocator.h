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
//
// The allocator also counts the bytes CPU tensors hold and, when a limit is set,
// refuses an allocation that would pass it. On Linux an allocation larger than the
// machine's memory usually succeeds and the process is killed later, when its pages
// are touched; a program that runs models it did not write (an ONNX file that asks
// for a 16 GB Range) sets a limit to get an OutOfMemoryError instead.
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

// Bytes CPU tensors hold now from this allocator, as they asked for them (before
// it rounds a block up); the cache's blocks are not counted, nor memory a caller
// lends (from_blob), nor anything after set_allocator replaces this allocator.
size_t cpu_memory_allocated();
// The most CPU tensors may hold at once: an allocation that would take
// cpu_memory_allocated() past it raises OutOfMemoryError without asking the
// system. 0 means no limit, the default unless the EMBER_CPU_MEMORY_LIMIT_MB
// environment variable (a whole number of MiB) sets one. Lowering it below what
// is held frees nothing; later allocations fail until enough is freed.
void cpu_set_memory_limit(size_t bytes);
size_t cpu_memory_limit();

}  // namespace ember

EMBER_API_END
