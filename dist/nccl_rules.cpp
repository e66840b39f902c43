// The NCCL backend's GPU-free decisions (see nccl_rules.h).
#include "dist/nccl_rules.h"

#include <exception>
#include <thread>

#include "kernels/base/error.h"

namespace ember::dist {

int pick_device(int local_rank, int devices) { return devices > 0 ? local_rank % devices : 0; }

void check_one_gpu_per_rank(const std::vector<GpuClaim>& claims) {
  // The first pair in rank order (b ascending, then a), so every rank names the same one.
  for (size_t b = 1; b < claims.size(); ++b)
    for (size_t a = 0; a < b; ++a) {
      const GpuClaim &x = claims[a], &y = claims[b];
      if (x.host != y.host || x.pci_bus_id != y.pci_bus_id) continue;
      throw DistError("init_process_group: the nccl backend needs one GPU per rank, but ranks " + std::to_string(a) +
                      " and " + std::to_string(b) + " on host " + x.host + " would share the GPU at PCI " +
                      x.pci_bus_id + " (cuda:" + std::to_string(x.device) + " on rank " + std::to_string(a) +
                      ", cuda:" + std::to_string(y.device) + " on rank " + std::to_string(b) +
                      "); start at most as many ranks on a host as it has GPUs");
    }
}

Poll poll_until(const std::function<Poll()>& poll, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const Poll p = poll();
    if (p != Poll::Pending) return p;
    if (std::chrono::steady_clock::now() >= deadline) return Poll::Pending;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void run_or_abort(const std::string& what, const std::function<void()>& body, const std::function<void()>& abort) {
  // A guard rather than catch clauses: it fires for every exception type, also
  // those the conversion below lets through unchanged.
  struct AbortGuard {
    const std::function<void()>& abort;
    bool armed = true;
    ~AbortGuard() {
      if (armed) abort();
    }
  } guard{abort};
  try {
    body();
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistError(what + " failed: " + e.what());
  }
  guard.armed = false;
}

}  // namespace ember::dist
