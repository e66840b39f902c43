// The C API's questions about the library itself: version, what this build has
// (backends from ember_config.h, the CPU kernels' instruction set), the
// number of CPU threads, and the CPU memory limit.
#include <cstdio>
#include <string>

#include "capi/capi_internal.h"
#include "ember_config.h"
#include "kernels/base/parallel.h"
#include "tensor/cpu_allocator.h"
#include "tensor/build_info.h"

namespace {

// The parts of EMBER_VERSION ("major.minor.patch"), read once.
struct VersionParts {
  int major = 0, minor = 0, patch = 0;
  VersionParts() { std::sscanf(EMBER_VERSION, "%d.%d.%d", &major, &minor, &patch); }
};

const VersionParts& version_parts() {
  static const VersionParts parts;
  return parts;
}

const char* on_off(bool on) { return on ? "on" : "off"; }

}  // namespace

extern "C" {

EMBER_C_API const char* ember_version(void) { return EMBER_VERSION; }
EMBER_C_API int ember_version_major(void) { return version_parts().major; }
EMBER_C_API int ember_version_minor(void) { return version_parts().minor; }
EMBER_C_API int ember_version_patch(void) { return version_parts().patch; }

EMBER_C_API const char* ember_build_config(void) {
  // Rebuilt on each call: the instruction set can be lowered at run time
  // (cpu::set_isa). Per thread, so that two threads asking at once do not collide.
  thread_local std::string text;
  try {
    text = std::string("cuda=") + on_off(EMBER_HAVE_CUDA) + " cudnn=" + on_off(EMBER_HAVE_CUDNN) +
           " nccl=" + on_off(EMBER_HAVE_NCCL) + " mpi=" + on_off(EMBER_HAVE_MPI) +
           " cpu_kernels=" + ember::cpu_kernels();
  } catch (...) {
    text.clear();  // out of memory for a few dozen bytes: nothing sensible to say
  }
  return text.c_str();
}

EMBER_C_API ember_status ember_set_num_threads(int n) {
  return ember::capi::guard([&] {
    if (n < 1)
      throw ember::capi::InvalidArgument("ember_set_num_threads: n must be at least 1, got " + std::to_string(n));
    ember::set_num_threads(n);
  });
}

EMBER_C_API int ember_get_num_threads(void) { return ember::get_num_threads(); }

EMBER_C_API void ember_set_cpu_memory_limit(size_t bytes) { ember::cpu_set_memory_limit(bytes); }
EMBER_C_API size_t ember_cpu_memory_limit(void) { return ember::cpu_memory_limit(); }
EMBER_C_API size_t ember_cpu_memory_allocated(void) { return ember::cpu_memory_allocated(); }

}  // extern "C"
