// The MPI backend: collectives on CPU tensors with MPI's non-blocking calls,
// polled on the communication thread against the watchdog.
#pragma once

// Only the C API: Open MPI's C++ bindings are deprecated and warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "dist/process_group.h"

namespace ember::dist {

struct Collective;
class Watchdog;

class MpiProcessGroup : public ProcessGroup {
 public:
  // Collective over every process the launcher started.
  static std::unique_ptr<MpiProcessGroup> create(std::chrono::milliseconds timeout);
  ~MpiProcessGroup() override;
  Device collective_device() const override { return kCPU; }

 protected:
  void check_device(const Tensor& t, const char* collective) const override;

 private:
  MpiProcessGroup(MPI_Comm comm, int rank, int size, std::unique_ptr<CommThread> thread);
  MPI_Comm comm_;
};

// Runs one collective on CPU memory through `comm` (also used by the NCCL backend
// for its set-up and by tests). Returns once done; raises DistError on failure.
void run_mpi_collective(MPI_Comm comm, int size, Collective& c, Watchdog& wd);

}  // namespace ember::dist
