// The NCCL backend's rules that need no GPU (dist/nccl_rules.h), on the CPU: the
// one-GPU-per-rank check with its exact message, the bounded wait that start-up and
// teardown use (its timeout path with a poll that never finishes), and the abort
// that every exception escaping a collective triggers.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "dist/nccl_rules.h"
#include "kernels/base/error.h"

using namespace ember;
namespace dist = ember::dist;

namespace {

// The claims of `ranks` ranks on one host with `gpus` GPUs, each rank mapped as the
// NCCL backend maps it (every rank sees every GPU).
std::vector<dist::GpuClaim> one_host(int ranks, int gpus) {
  std::vector<dist::GpuClaim> claims;
  for (int r = 0; r < ranks; ++r) {
    const int d = dist::pick_device(r, gpus);
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + d);
    claims.push_back({"node1", bus, d});
  }
  return claims;
}

}  // namespace

TEST_CASE("nccl: one GPU per rank", "[dist][nccl]") {
  REQUIRE_NOTHROW(dist::check_one_gpu_per_rank(one_host(2, 2)));
  REQUIRE_NOTHROW(dist::check_one_gpu_per_rank(one_host(2, 8)));
  REQUIRE(dist::pick_device(1, 2) == 1);
  // Three ranks, two GPUs: rank 2 wraps around onto rank 0's GPU.
  REQUIRE_THROWS_MATCHES(
      dist::check_one_gpu_per_rank(one_host(3, 2)), DistError,
      Catch::Message("init_process_group: the nccl backend needs one GPU per rank, but ranks 0 and 2 on host node1 "
                     "would share the GPU at PCI 00000000:18:00.0 (cuda:0 on rank 0, cuda:0 on rank 2); start at "
                     "most as many ranks on a host as it has GPUs"));
  // Each rank sees only its own GPU (CUDA_VISIBLE_DEVICES per rank): all cuda:0,
  // but different GPUs, so no sharing.
  REQUIRE(dist::pick_device(1, 1) == 0);
  REQUIRE_NOTHROW(dist::check_one_gpu_per_rank(
      {{"node1", "00000000:18:00.0", 0}, {"node1", "00000000:2A:00.0", 0}}));
  // The same bus id on two hosts is two GPUs.
  REQUIRE_NOTHROW(dist::check_one_gpu_per_rank(
      {{"node1", "00000000:18:00.0", 0}, {"node2", "00000000:18:00.0", 0}}));
  // Ranks on two hosts, the second over-full: the pair named is on that host.
  auto claims = one_host(2, 2);
  for (auto c : one_host(2, 1)) claims.push_back({"node2", c.pci_bus_id, c.device});
  REQUIRE_THROWS_MATCHES(
      dist::check_one_gpu_per_rank(claims), DistError,
      Catch::Message("init_process_group: the nccl backend needs one GPU per rank, but ranks 2 and 3 on host node2 "
                     "would share the GPU at PCI 00000000:18:00.0 (cuda:0 on rank 2, cuda:0 on rank 3); start at "
                     "most as many ranks on a host as it has GPUs"));
}

TEST_CASE("nccl: waits on the communicator are bounded", "[dist][nccl]") {
  using namespace std::chrono;
  int polls = 0;
  REQUIRE(dist::poll_until([&] { return ++polls < 3 ? dist::Poll::Pending : dist::Poll::Done; }, seconds(10)) ==
          dist::Poll::Done);
  REQUIRE(polls == 3);
  polls = 0;
  REQUIRE(dist::poll_until([&] { return ++polls, dist::Poll::Failed; }, seconds(10)) == dist::Poll::Failed);
  REQUIRE(polls == 1);
  // A teardown whose peer died: the communicator stays in progress for ever. The
  // wait gives up after the timeout, not much later.
  polls = 0;
  const auto t0 = steady_clock::now();
  REQUIRE(dist::poll_until([&] { return ++polls, dist::Poll::Pending; }, milliseconds(50)) == dist::Poll::Pending);
  const auto waited = duration_cast<milliseconds>(steady_clock::now() - t0).count();
  CHECK(waited >= 50);
  CHECK(waited < 2000);
  CHECK(polls > 1);
}

TEST_CASE("nccl: every exception escaping a collective aborts the communicator", "[dist][nccl]") {
  int aborts = 0;
  const auto abort = [&] { ++aborts; };
  const std::string what = "all_reduce (collective #3)";

  dist::run_or_abort(what, [] {}, abort);
  REQUIRE(aborts == 0);

  // OutOfMemoryError is no CudaError: it too aborts, and becomes a DistError so the
  // group is marked unusable.
  REQUIRE_THROWS_MATCHES(
      dist::run_or_abort(what, [] { throw OutOfMemoryError("CUDA out of memory in cudaEventRecord at x.cpp:1"); },
                         abort),
      DistError, Catch::Message("all_reduce (collective #3) failed: CUDA out of memory in cudaEventRecord at x.cpp:1"));
  REQUIRE(aborts == 1);
  REQUIRE_THROWS_MATCHES(
      dist::run_or_abort(what, [] { throw CudaError("cudaEventQuery(s.done) failed: unspecified launch failure"); },
                         abort),
      DistError,
      Catch::Message("all_reduce (collective #3) failed: cudaEventQuery(s.done) failed: unspecified launch failure"));
  REQUIRE(aborts == 2);
  // The watchdog's DistError passes unchanged.
  REQUIRE_THROWS_MATCHES(
      dist::run_or_abort(what, [] { throw DistError("all_reduce (collective #3) failed on rank 0: rank 1 has exited"); },
                         abort),
      DistError, Catch::Message("all_reduce (collective #3) failed on rank 0: rank 1 has exited"));
  REQUIRE(aborts == 3);
}
