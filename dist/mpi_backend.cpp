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

namespace {

// Polls requests until all are done, asking the watchdog between polls.
void wait_all(MPI_Request* reqs, int n, const Collective& c, Watchdog& wd) {
  for (int done = 0;;) {
    if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      throw DistError(std::string(c.name()) + " (collective #" + std::to_string(c.seq) + ") failed in MPI");
    if (done) return;
    wd.poll();
    wd.pause();
  }
}

// Ring all-reduce from non-blocking point-to-point messages, for large tensors.
// Open MPI's non-blocking MPI_Iallreduce (libnbc) reduces to one rank and
// broadcasts back for fewer than 4 ranks or in place: twice the data a blocking
// MPI_Allreduce moves. The ring moves 2 (p - 1) / p of the tensor per rank, like
// the best blocking algorithms, and stays pollable. The tensor is cut into p
// chunks; in p - 1 reduce-scatter steps each rank sends one chunk to the right and
// adds the one arriving from the left, after which rank r holds the total of
// chunk r + 1; p - 1 all-gather steps then pass the totals around.
void ring_all_reduce(MPI_Comm comm, int size, Collective& c, Watchdog& wd) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  const DType dtype = static_cast<DType>(c.sig.dtype);
  const auto op = static_cast<ReduceOp>(c.sig.arg);
  Tensor flat = c.tensor.view({c.sig.numel});
  const int64_t n = c.sig.numel;
  auto chunk = [&](int i) {
    i = ((i % size) + size) % size;
    const int64_t start = n * i / size, end = n * (i + 1) / size;
    return flat.narrow(0, start, end - start);
  };
  Tensor scratch = empty({n / size + 1}, {dtype});
  const MPI_Datatype type = mpi::datatype(dtype);
  constexpr int kTag = 0x454d;  // "EM"
  for (int s = 0; s < size - 1; ++s) {
    Tensor out = chunk(rank - s), in = chunk(rank - s - 1);
    Tensor recv = scratch.narrow(0, 0, in.numel());
    MPI_Request reqs[2];
    MPI_Irecv(recv.data_ptr(), static_cast<int>(in.numel()), type, left, kTag, comm, &reqs[0]);
    MPI_Isend(out.data_ptr(), static_cast<int>(out.numel()), type, right, kTag, comm, &reqs[1]);
    wait_all(reqs, 2, c, wd);
    if (op == ReduceOp::Max || dtype == DType::Bool)
      in.maximum_(recv);  // bool: "or"
    else
      in.add_(recv);
  }
  for (int s = 0; s < size - 1; ++s) {
    Tensor out = chunk(rank + 1 - s), in = chunk(rank - s);
    MPI_Request reqs[2];
    MPI_Irecv(in.data_ptr(), static_cast<int>(in.numel()), type, left, kTag, comm, &reqs[0]);
    MPI_Isend(out.data_ptr(), static_cast<int>(out.numel()), type, right, kTag, comm, &reqs[1]);
    wait_all(reqs, 2, c, wd);
  }
}

// From this many bytes on, all_reduce takes the ring (below it, latency matters
// more than bandwidth and MPI_Iallreduce's single round trip wins).
constexpr int64_t kRingBytes = 256 << 10;

}  // namespace

void run_mpi_collective(MPI_Comm comm, int size, Collective& c, Watchdog& wd) {
  if (c.kind() == CollectiveKind::AllReduce && size > 1 &&
      c.sig.numel * static_cast<int64_t>(dtype_size(static_cast<DType>(c.sig.dtype))) >= kRingBytes) {
    ring_all_reduce(comm, size, c, wd);
    if (static_cast<ReduceOp>(c.sig.arg) == ReduceOp::Avg) c.tensor.div_(size);
    return;
  }
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
  mpi::OwnedComm owned(mpi::make_world_comm(&rank, &size));  // freed if set-up raises
  const MPI_Comm comm = owned.get();
  auto board = mpi::make_board(comm, rank, size, timeout);
  auto thread = std::make_unique<CommThread>(
      rank, size, std::move(board), [comm, size](Collective& c, Watchdog& wd) { run_mpi_collective(comm, size, c, wd); },
      timeout);
  return std::unique_ptr<MpiProcessGroup>(new MpiProcessGroup(owned.release(), rank, size, std::move(thread)));
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
