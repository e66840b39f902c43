// The NCCL backend's decisions that need no GPU: which GPU each rank may use (one
// each), how long a wait on the communicator may last, and what a failed
// collective does. Kept apart from nccl_backend.cpp so CPU tests can check them.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ember::dist {

// The GPU one rank would use: its host, the GPU's PCI bus id (the same physical
// GPU has the same id whatever CUDA_VISIBLE_DEVICES numbers it) and the CUDA
// ordinal the rank sees it as.
struct GpuClaim {
  std::string host;
  std::string pci_bus_id;
  int device = 0;
};

// The ordinal a rank picks: its place among the ranks on its host, modulo the
// devices it sees (so ranks that each see one GPU all pick their cuda:0).
int pick_device(int local_rank, int devices);

// claims[r] is rank r's. Raises DistError when two ranks on one host claim the same
// GPU, naming the first such pair; every rank calls it with the same claims and so
// raises the same message.
void check_one_gpu_per_rank(const std::vector<GpuClaim>& claims);

// What one look at a pending operation found.
enum class Poll { Pending, Done, Failed };

// Calls `poll` until it returns Done or Failed and returns that; returns Pending
// once `timeout` has passed first. Sleeps 100 us between looks: the operations
// waited on (NCCL's start and teardown) progress on NCCL's own threads.
Poll poll_until(const std::function<Poll()>& poll, std::chrono::milliseconds timeout);

// Runs one collective's `body`. Whatever escapes it (DistError, CudaError,
// OutOfMemoryError, any other exception) calls `abort` first, since NCCL kernels
// may still wait on a peer; an exception that is not a DistError becomes
// DistError("{what} failed: {its message}"), so the group is marked unusable.
void run_or_abort(const std::string& what, const std::function<void()>& body, const std::function<void()>& abort);

}  // namespace ember::dist
