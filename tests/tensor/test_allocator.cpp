// The CPU caching allocator: large blocks are reused instead of returned, the cache
// is bounded, and empty_cache gives memory back; small blocks come back from the
// freeing thread's cache without ever overlapping a live one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <thread>

#include "ember.h"

using namespace ember;

// Under AddressSanitizer (GCC defines __SANITIZE_ADDRESS__, Clang answers
// __has_feature) small blocks are not cached, and the address-space limit case
// cannot run (ASan reserves terabytes of address space for itself).
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_TEST_UNDER_ASAN 1
#endif
#endif

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

TEST_CASE("small CPU blocks are reused by size class and never overlap live ones", "[tensor][allocator]") {
  // A freed small block serves the next allocation of its class on this thread
  // (not under AddressSanitizer, where small blocks are not cached).
  void* first;
  {
    Tensor t = empty({1000}, kUInt8);
    first = t.data_ptr();
  }
  Tensor again = empty({990}, kUInt8);  // 1000 and 990 bytes round to the same 1024-byte class
#ifndef EMBER_TEST_UNDER_ASAN
  CHECK(again.data_ptr() == first);
#else
  (void)first;
#endif
  // Many sizes across the classes, freed and made in random order: every live
  // block keeps its own bytes (each filled with its number and checked at the end).
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> size(1, (1 << 20) - 1);
  std::vector<std::pair<Tensor, uint8_t>> live;
  for (int round = 0; round < 2000; ++round) {
    if (!live.empty() && rng() % 3 == 0) {
      live.erase(live.begin() + static_cast<long>(rng() % live.size()));
      continue;
    }
    const int64_t n = rng() % 4 == 0 ? size(rng) : size(rng) % 4096 + 1;
    Tensor t = empty({n}, kUInt8);
    REQUIRE(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
    const auto tag = static_cast<uint8_t>(round % 251);
    std::fill_n(t.data_ptr<uint8_t>(), n, tag);
    live.emplace_back(t, tag);
  }
  for (const auto& [t, tag] : live) {
    const uint8_t* p = t.data_ptr<uint8_t>();
    REQUIRE(std::all_of(p, p + t.numel(), [tag = tag](uint8_t v) { return v == tag; }));
  }
  // Blocks made on one thread and freed on another go to the freeing thread's cache.
  std::vector<Tensor> made;
  std::thread maker([&] {
    for (int i = 0; i < 200; ++i) made.push_back(full({i + 1}, static_cast<double>(i)));
  });
  maker.join();
  for (int i = 0; i < 200; ++i) REQUIRE(made[static_cast<size_t>(i)].sum().item<double>() == double(i) * (i + 1));
  made.clear();
  std::vector<Tensor> reused;
  for (int i = 0; i < 200; ++i) reused.push_back(full({i + 1}, 1.0));
  for (int i = 0; i < 200; ++i) REQUIRE(reused[static_cast<size_t>(i)].sum().item<double>() == double(i + 1));
  cpu_empty_cache();
}

// An allocation the operating system refuses: a child process under an address-space
// limit (as `ulimit -v` sets) asks for more than the limit allows. It must get
// OutOfMemoryError with the documented text, after the allocator has given its cache
// back, and a later allocation that fits must still succeed. AddressSanitizer
// reserves terabytes of address space for itself, so the case cannot run under it.
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
