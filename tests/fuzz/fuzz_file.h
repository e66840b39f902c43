// What every fuzz target shares: Ember's readers take a path, so each input is
// written to one scratch file per process (in /dev/shm when it exists, so the
// writes cost little) and the reader is pointed at it. A reader may reject input
// only with an ember::Error; any other exception, a crash or a sanitizer report is
// a finding. Tensors may hold at most 256 MiB (cpu_set_memory_limit): an input a
// mutation or two from asking for gigabytes (a Range or Tile near an overflow) is
// then refused with OutOfMemoryError, an ember::Error, where it would otherwise
// pass libFuzzer's 4 GB malloc limit, which reports it as a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "kernels/base/error.h"
#include "tensor/cpu_allocator.h"

namespace fuzz {

inline const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/ember-fuzz-" + std::to_string(getpid());
  }();
  return path;
}

inline const std::string& write_input(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// Runs `read` on the input; ember::Error is the reader saying no, anything else aborts.
template <class Read>
int run(const uint8_t* data, size_t size, Read read) {
  static const bool capped = (ember::cpu_set_memory_limit(size_t{256} << 20), true);
  (void)capped;
  const std::string& path = write_input(data, size);
  try {
    read(path);
  } catch (const ember::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace fuzz
