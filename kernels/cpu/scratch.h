// Scratch: a 64-byte aligned buffer that only grows. Kernels keep one per calling
// thread (thread_local) and carve their team's buffers out of it before a parallel
// region starts, so a steady stream of calls allocates, and page-faults, once.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

#include "kernels/base/error.h"

namespace ember::cpu {

class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(p_); }

  // At least `bytes` bytes; the previous contents are not kept when it grows.
  void* get(size_t bytes) {
    if (bytes > bytes_) {
      std::free(p_);
      p_ = nullptr;
      bytes_ = 0;
      const size_t rounded = (bytes + 4095) & ~size_t(4095);
      p_ = std::aligned_alloc(64, rounded);
      if (!p_)
        throw OutOfMemoryError("CPU out of memory: tried to allocate " + std::to_string(rounded) +
                               " bytes of kernel scratch space");
      bytes_ = rounded;
    }
    return p_;
  }

  // Frees the buffer; the next get allocates again.
  void release() {
    std::free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ember::cpu
