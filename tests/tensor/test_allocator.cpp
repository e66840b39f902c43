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
