// The CPU allocator's count of the bytes tensors hold (cpu_memory_allocated) and
// its optional limit (cpu_set_memory_limit): an allocation past the limit raises
// OutOfMemoryError with the documented text and charges nothing, and the count
// comes back to where it was once tensors are freed, whichever path (small block,
// large block, refused) they took. The expected counts are the tensors' byte sizes,
// worked out here from their shapes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ember.h"

using namespace ember;

namespace {

std::string refusal(size_t nbytes, size_t held, size_t limit) {
  return "CPU out of memory: tried to allocate " + std::to_string(nbytes) + " bytes with " + std::to_string(held) +
         " bytes already allocated, over the limit of " + std::to_string(limit) + " bytes (cpu_set_memory_limit)";
}

// Sets a limit for a scope and puts the previous one back.
struct LimitScope {
  size_t previous = cpu_memory_limit();
  explicit LimitScope(size_t bytes) { cpu_set_memory_limit(bytes); }
  ~LimitScope() { cpu_set_memory_limit(previous); }
};

}  // namespace

TEST_CASE("cpu_memory_allocated counts the bytes CPU tensors asked for", "[tensor][allocator]") {
  const size_t base = cpu_memory_allocated();
  {
    Tensor small = empty({1000});  // 4000 bytes: a small block (rounded to 4096 inside)
    CHECK(cpu_memory_allocated() == base + 4000);
    Tensor large = empty({3 << 20}, kFloat16);  // 6 MiB: a large block
    CHECK(cpu_memory_allocated() == base + 4000 + (size_t{6} << 20));
    Tensor view = small.narrow(0, 10, 20).view({4, 5});  // views share their storage
    Tensor nothing = empty({0, 7});                      // no bytes, no block
    Tensor meta = empty({1 << 20}, Device("meta"));      // no memory at all
    CHECK(cpu_memory_allocated() == base + 4000 + (size_t{6} << 20));
    large = Tensor();
    CHECK(cpu_memory_allocated() == base + 4000);
  }
  CHECK(cpu_memory_allocated() == base);
  {  // a large block served from the cache is counted like a fresh one
    cpu_set_cache_limit(size_t{64} << 20);
    { Tensor t = empty({1 << 20}); }
    Tensor again = empty({1 << 20});
    CHECK(cpu_memory_allocated() == base + (size_t{4} << 20));
  }
  CHECK(cpu_memory_allocated() == base);
  cpu_set_cache_limit(size_t{1} << 30);
}

TEST_CASE("cpu_memory_allocated is exact with tensors made and freed on several threads", "[tensor][allocator]") {
  const size_t base = cpu_memory_allocated();
  std::vector<Tensor> kept(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &kept] {
      for (int i = 0; i < 2000; ++i) {
        Tensor a = empty({(i % 300) + 1});           // small blocks, many classes
        Tensor b = empty({(i % 3) << 18}, kUInt8);  // 0, 256 KiB, 512 KiB
      }
      kept[static_cast<size_t>(t)] = empty({t + 1}, kFloat64);
    });
  for (auto& th : threads) th.join();
  CHECK(cpu_memory_allocated() == base + 8 * (1 + 2 + 3 + 4));
  kept.clear();  // freed on this thread, made on the others
  CHECK(cpu_memory_allocated() == base);
}

TEST_CASE("an allocation past cpu_set_memory_limit raises OutOfMemoryError and charges nothing",
          "[tensor][allocator][errors]") {
  const size_t base = cpu_memory_allocated();
  const size_t limit = base + (size_t{1} << 20);  // room for 1 MiB more
  LimitScope scope(limit);
  REQUIRE(cpu_memory_limit() == limit);
  Tensor a = empty({128 << 10});  // 512 KiB
  try {
    Tensor b = empty({192 << 10});  // 768 KiB more: over by 256 KiB
    FAIL("the allocation past the limit succeeded");
  } catch (const OutOfMemoryError& e) {
    CHECK(std::string(e.what()) == refusal(786432, base + 524288, limit));
  }
  CHECK(cpu_memory_allocated() == base + 524288);
  Tensor b = empty({128 << 10});  // exactly up to the limit is allowed
  CHECK(cpu_memory_allocated() == limit);
  CHECK_THROWS_AS(empty({1}, kUInt8), OutOfMemoryError);  // one byte past it is not
  CHECK_THROWS_AS(a + b, OutOfMemoryError);                // nor an op's result
  CHECK(a.numel() == (128 << 10));                         // the operands are untouched
  b = Tensor();
  Tensor c = a + a;  // fits again once b is freed
  CHECK(cpu_memory_allocated() == limit);
  {  // the limit is on what tensors hold, not on one allocation: a lower one frees nothing
    cpu_set_memory_limit(base + 1);  // (0 would mean no limit)
    CHECK(cpu_memory_allocated() == limit);
    CHECK_THROWS_AS(empty({1}, kUInt8), OutOfMemoryError);
  }
  cpu_set_memory_limit(0);  // no limit
  Tensor big = empty({int64_t{64} << 20});  // 256 MiB
  CHECK(cpu_memory_allocated() == limit + (size_t{256} << 20));
}

TEST_CASE("a size past any limit is refused before the system is asked", "[tensor][allocator][errors]") {
  const size_t base = cpu_memory_allocated();
  LimitScope scope(size_t{1} << 30);
  // 2^60 bytes: the system would refuse too, but the limit answers first, and the
  // count cannot wrap around.
  try {
    Tensor t = empty({int64_t{1} << 60}, kUInt8);
    FAIL("a 2^60-byte tensor was allocated");
  } catch (const OutOfMemoryError& e) {
    CHECK(std::string(e.what()) == refusal(size_t{1} << 60, base, size_t{1} << 30));
  }
  CHECK(cpu_memory_allocated() == base);
}

TEST_CASE("an allocation the system refuses is not counted", "[tensor][allocator][errors]") {
  const size_t base = cpu_memory_allocated();
  CHECK_THROWS_AS(empty({int64_t{1} << 46}, kFloat64), OutOfMemoryError);  // 512 TiB, no limit set
  CHECK(cpu_memory_allocated() == base);
}

// Run by the meson test 'tensor-memory-limit-env' with EMBER_CPU_MEMORY_LIMIT_MB=64.
TEST_CASE("EMBER_CPU_MEMORY_LIMIT_MB sets the limit at start-up", "[.env_limit]") {
  REQUIRE(std::getenv("EMBER_CPU_MEMORY_LIMIT_MB") == std::string("64"));
  CHECK(cpu_memory_limit() == size_t{64} << 20);
  const size_t base = cpu_memory_allocated();
  try {
    Tensor t = empty({int64_t{16} << 20, 2});  // 128 MiB
    FAIL("128 MiB was allocated under a 64 MiB limit");
  } catch (const OutOfMemoryError& e) {
    CHECK(std::string(e.what()) == refusal(size_t{128} << 20, base, size_t{64} << 20));
  }
  Tensor fits = empty({int64_t{8} << 20});  // 32 MiB
  CHECK(cpu_memory_allocated() == base + (size_t{32} << 20));
}

// Run by the meson test 'tensor-memory-limit-env-malformed' with EMBER_CPU_MEMORY_LIMIT_MB=64M.
TEST_CASE("a malformed EMBER_CPU_MEMORY_LIMIT_MB makes allocations fail until a limit is set",
          "[.env_limit_malformed]") {
  REQUIRE(std::getenv("EMBER_CPU_MEMORY_LIMIT_MB") == std::string("64M"));
  try {
    Tensor t = empty({10});
    FAIL("an allocation succeeded under a malformed limit");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()) == "EMBER_CPU_MEMORY_LIMIT_MB must be a whole number of MiB, got '64M'");
  }
  cpu_set_memory_limit(0);  // the program's own setting replaces it
  Tensor t = empty({10});
  CHECK(t.numel() == 10);
}
