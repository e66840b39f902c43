// The MPI backend (see mpi_backend.h). Non-blocking collectives (MPI_Iallreduce
// and friends) rather than blocking ones, because a blocking call cannot be given
// up on: polling MPI_Test lets the watchdog raise DistError when a peer is gone.
// In Open MPI these calls also progress only while someone polls, which is the
// communication thread's whole job.
#include "dist/mpi_backend.h"

#include <climits>

#include "dist/comm_thread.h"
#include "dist/mpi_env.h"
#include "tensor/ops.h"

namespace ember::dist {

void run_mpi_collective(MPI_Comm comm, int size, Collective& c, Watchdog& wd) {
  MPI_Request req = MPI_REQUEST_NULL;
  const DType dtype = static_cast<DType>(c.sig.dtype);
  const int count = static_cast<int>(c.sig.numel);
  int rc = MPI_SUCCESS;
  switch (c.kind()) {
    case CollectiveKind::AllReduce:
      rc = MPI_Iallreduce(MPI_IN_PLACE, c.tensor.data_ptr(), count, mpi::datatype(dtype),
                          mpi::reduction(static_cast<ReduceOp>(c.sig.arg), dtype), comm, &req);
      break;
    case CollectiveKind::Broadcast:
      rc = MPI_Ibcast(c.tensor.data_ptr(), count, mpi::datatype(dtype), c.sig.arg, comm, &req);
      break;
    case CollectiveKind::AllGather:
      rc = MPI_Iallgather(c.input.data_ptr(), count, mpi::datatype(dtype), c.tensor.data_ptr(), count,
                          mpi::datatype(dtype), comm, &req);
      break;
    case CollectiveKind::Barrier:
      rc = MPI_Ibarrier(comm, &req);
      break;
  }
  if (rc != MPI_SUCCESS)
    throw DistError(std::string(c.name()) + " (collective #" + std::to_string(c.seq) + ") could not start in MPI");
  for (int done = 0;;) {
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      throw DistError(std::string(c.name()) + " (collective #" + std::to_string(c.seq) + ") failed in MPI");
    if (done) break;
    wd.poll();
    wd.pause();
  }
  if (c.kind() == CollectiveKind::AllReduce && static_cast<ReduceOp>(c.sig.arg) == ReduceOp::Avg)
    c.tensor.div_(size);
}

std::unique_ptr<MpiProcessGroup> MpiProcessGroup::create(std::chrono::milliseconds timeout) {
  mpi::ensure_initialized();
  int rank = 0, size = 1;
  MPI_Comm comm = mpi::make_world_comm(&rank, &size);
  auto board = mpi::make_board(comm, rank, size, timeout);
  auto thread = std::make_unique<CommThread>(
      rank, size, std::move(board), [comm, size](Collective& c, Watchdog& wd) { run_mpi_collective(comm, size, c, wd); },
      timeout);
  return std::unique_ptr<MpiProcessGroup>(new MpiProcessGroup(comm, rank, size, std::move(thread)));
}

MpiProcessGroup::MpiProcessGroup(MPI_Comm comm, int rank, int size, std::unique_ptr<CommThread> thread)
    : ProcessGroup(Backend::MPI, rank, size, std::move(thread)), comm_(comm) {}

MpiProcessGroup::~MpiProcessGroup() {
  release_thread();  // the communication thread uses comm_ until it stops
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !any_collective_failed()) MPI_Comm_free(&comm_);
}

void MpiProcessGroup::check_device(const Tensor& t, const char* collective) const {
  if (!t.device().is_cpu())
    throw DistError(std::string(collective) + ": the mpi backend takes CPU tensors but got a tensor on " +
                    t.device().str());
  if (t.numel() > INT_MAX)
    throw ValueError(std::string(collective) + ": tensors of more than 2^31 - 1 elements are not supported");
}

}  // namespace ember::dist
