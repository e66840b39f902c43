// The CPU caching allocator: large blocks are reused instead of returned, the cache
// is bounded, and empty_cache gives memory back.
#include <catch2/catch.hpp>

#include "ember.h"

using namespace ember;

TEST_CASE("large CPU blocks are cached and reused", "[tensor][allocator]") {
  cpu_set_cache_limit(size_t{64} << 20);
  void* first;
  {
    Tensor t = empty({1 << 20});  // 4 MiB: cached size class
    first = t.data_ptr();
  }
  REQUIRE(cpu_memory_cached() == (size_t{4} << 20));
  {
    Tensor u = empty({(1 << 20) - 100});  // rounds to the same 4 MiB class
    REQUIRE(u.data_ptr() == first);
    REQUIRE(cpu_memory_cached() == 0);
  }
  cpu_empty_cache();
  REQUIRE(cpu_memory_cached() == 0);
}

TEST_CASE("the CPU cache never exceeds its limit", "[tensor][allocator]") {
  cpu_set_cache_limit(size_t{6} << 20);
  {
    Tensor a = empty({1 << 20}), b = empty({1 << 20});  // 4 MiB each
  }
  REQUIRE(cpu_memory_cached() == (size_t{4} << 20));  // the second did not fit
  cpu_set_cache_limit(0);
  REQUIRE(cpu_memory_cached() == 0);
  {
    Tensor c = empty({1 << 20});
  }
  REQUIRE(cpu_memory_cached() == 0);
  cpu_set_cache_limit(size_t{1} << 30);
}

TEST_CASE("CPU memory is 64-byte aligned", "[tensor][allocator]") {
  for (int64_t n : {1, 3, 17, 1000, 300000}) {
    Tensor t = empty({n}, kUInt8);
    REQUIRE(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
  }
}

// An allocation the operating system refuses: a child process under an address-space
// limit (as `ulimit -v` sets) asks for more than the limit allows. It must get
// OutOfMemoryError with the documented text, after the allocator has given its cache
// back, and a later allocation that fits must still succeed. AddressSanitizer
// reserves terabytes of address space for itself, so the case cannot run under it.
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef EMBER_TEST_UNDER_ASAN
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

// Address space the process already uses, in bytes (/proc/self/statm counts pages).
size_t address_space_in_use() {
  long pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return size_t(pages) * size_t(sysconf(_SC_PAGESIZE));
}

// The child's checks; its exit code says which one failed (0: all held).
int child_under_limit() {
  set_num_threads(1);  // no OpenMP team in a forked child
  cpu_set_cache_limit(size_t{1} << 30);
  const size_t limit = address_space_in_use() + (size_t{768} << 20);
  const rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 10;
  { Tensor cached = empty({int64_t{64} << 20}); }  // 256 MiB, kept in the cache when freed
  if (cpu_memory_cached() == 0) return 11;
  try {
    Tensor too_big = empty({int64_t{256} << 20});  // 1 GiB: more than the limit leaves
    return 12;
  } catch (const OutOfMemoryError& e) {
    if (std::string(e.what()) != "CPU out of memory: tried to allocate 1073741824 bytes") return 13;
  }
  if (cpu_memory_cached() != 0) return 14;  // the cache was given back before giving up
  Tensor fits = empty({int64_t{128} << 20});  // 512 MiB fits once the cache is gone
  return fits.numel() == (int64_t{128} << 20) ? 0 : 15;
}

}  // namespace

TEST_CASE("an allocation the OS refuses raises OutOfMemoryError and the next one works", "[tensor][allocator]") {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(child_under_limit());
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
