// For tests that run a kernel family at each instruction-set level and thread
// count: puts the level ("auto") and the thread count back when the test ends,
// passed or failed, so later tests run as configured.
#pragma once

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa.h"

namespace ember::testing {

struct IsaGuard {
  int threads = get_num_threads();
  IsaGuard() = default;
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;
  ~IsaGuard() {
    cpu::set_isa("auto");
    set_num_threads(threads);
  }
};

}  // namespace ember::testing
