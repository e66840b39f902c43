// The NCCL backend (see nccl_backend.h). The communicator is made non-blocking
// (ncclConfig_t::blocking = 0): NCCL calls return at once and the communication
// thread polls ncclCommGetAsyncError and a CUDA event against the watchdog. When
// the watchdog fires (a peer died or stopped calling), ncclCommAbort stops the
// kernels still waiting on the peer, so the GPU is not left spinning forever.
// Every wait on NCCL (start, collectives, teardown) is bounded by the group's timeout.
#include "dist/nccl_backend.h"

#if EMBER_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "dist/comm_thread.h"
#include "dist/mpi_env.h"
#include "dist/nccl_rules.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#include "tensor/ops.h"

namespace ember::dist {

struct NcclState {
  int device = 0;
  int size = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // NCCL's own stream on `device`
  cudaEvent_t ready = nullptr;    // recorded on the compute stream before a collective
  cudaEvent_t done = nullptr;     // recorded on NCCL's stream after it
  Tensor barrier_buffer;          // one float on the device: NCCL has no barrier
  bool aborted = false;
  std::chrono::milliseconds timeout{0};  // the group's, as it was when the group was destroyed

  ~NcclState() {
    // A program that exits without destroy_process_group() reaches here from the
    // default group's static destructor, which may run after the CUDA runtime has
    // shut down (it registers its teardown after Ember's statics). Then nothing can
    // be released, and DeviceScope would throw from a destructor: leave it to exit.
    int current = 0;
    if (cudaGetDevice(&current) == cudaErrorCudartUnloading) return;
    cuda::DeviceScope scope(device);
    if (comm && !aborted) {
      // Finalizing flushes the communicator's work with the peers; a peer that died
      // after the last collective would keep it in progress forever. Wait at most
      // the group's timeout, then abort (and leave MPI unfinalized: the peer is gone).
      const ncclResult_t st = ncclCommFinalize(comm);
      const Poll p = st != ncclSuccess && st != ncclInProgress ? Poll::Failed : poll_until([&] {
        ncclResult_t async = ncclInProgress;
        ncclCommGetAsyncError(comm, &async);
        return async == ncclSuccess ? Poll::Done : async == ncclInProgress ? Poll::Pending : Poll::Failed;
      }, timeout);
      if (p == Poll::Done) {
        ncclCommDestroy(comm);
      } else {
        ncclCommAbort(comm);
        note_failure();
      }
    }
    // Also after a failed start (comm null or aborted): the stream and events exist.
    if (ready) cudaEventDestroy(ready);
    if (done) cudaEventDestroy(done);
    if (stream) cudaStreamDestroy(stream);
  }
};

namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Int8: return ncclInt8;
    case DType::UInt8: return ncclUint8;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::Bool: return ncclUint8;  // one byte, 0 or 1: max is "or"
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  if (dtype == DType::Bool) return ncclMax;
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
  }
  return ncclSum;
}

std::string prefix(const Collective& c) {
  return std::string(c.name()) + " (collective #" + std::to_string(c.seq) + ")";
}

// Waits until the communicator has no call in progress; raises on its errors.
void settle(NcclState& s, const Collective& c, Watchdog& wd, ncclResult_t issued) {
  ncclResult_t st = issued;
  for (;;) {
    if (st == ncclInProgress) ncclCommGetAsyncError(s.comm, &st);
    if (st == ncclSuccess) return;
    if (st != ncclInProgress)
      throw DistError(prefix(c) + " failed in NCCL: " + ncclGetErrorString(st));
    wd.poll();
    wd.pause();
  }
}

void run_nccl_collective(NcclState& s, Collective& c, Watchdog& wd) {
  cuda::DeviceScope scope(s.device);
  // Whatever escapes (a DistError from the watchdog, CudaError, OutOfMemoryError)
  // aborts the communicator: its kernels may still wait on a dead peer.
  const auto abort = [&s] {
    s.aborted = true;
    ncclCommAbort(s.comm);
  };
  run_or_abort(prefix(c), [&] {
    cudaStream_t compute = cuda::stream(s.device);
    // NCCL starts after everything already queued on the compute stream.
    EMBER_CUDA_CHECK(cudaEventRecord(s.ready, compute));
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.ready, 0));
    const DType dtype = static_cast<DType>(c.sig.dtype);
    const size_t count = static_cast<size_t>(c.sig.numel);
    ncclResult_t st = ncclSuccess;
    switch (c.kind()) {
      case CollectiveKind::AllReduce:
        st = ncclAllReduce(c.tensor.data_ptr(), c.tensor.data_ptr(), count, nccl_type(dtype),
                           nccl_op(static_cast<ReduceOp>(c.sig.arg), dtype), s.comm, s.stream);
        break;
      case CollectiveKind::Broadcast:
        st = ncclBroadcast(c.tensor.data_ptr(), c.tensor.data_ptr(), count, nccl_type(dtype), c.sig.arg, s.comm,
                           s.stream);
        break;
      case CollectiveKind::AllGather:
        st = ncclAllGather(c.input.data_ptr(), c.tensor.data_ptr(), count, nccl_type(dtype), s.comm, s.stream);
        break;
      case CollectiveKind::Barrier:
        st = ncclAllReduce(s.barrier_buffer.data_ptr(), s.barrier_buffer.data_ptr(), 1, ncclFloat32, ncclSum, s.comm,
                           s.stream);
        break;
    }
    settle(s, c, wd, st);
    EMBER_CUDA_CHECK(cudaEventRecord(s.done, s.stream));
    for (;;) {
      const cudaError_t q = cudaEventQuery(s.done);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) EMBER_CUDA_CHECK(q);
      cudaGetLastError();  // "not ready" must not linger as this thread's last error
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(s.comm, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        throw DistError(prefix(c) + " failed in NCCL: " + ncclGetErrorString(async));
      wd.poll();
      wd.pause();
    }
    // Work queued on the compute stream later sees the result.
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(compute, s.done, 0));
  }, abort);
}

// Every rank's GPU, gathered from every rank, so that each rank raises the same
// DistError when two ranks on a host would share one (check_one_gpu_per_rank).
std::vector<GpuClaim> gather_gpu_claims(MPI_Comm comm, int size, int device, std::chrono::milliseconds timeout) {
  struct Claim {
    char host[256];
    char pci_bus_id[32];
    int32_t device;
  };
  // [this rank's | every rank's], on the heap: mpi::wait keeps it if it gives up.
  auto claims = std::make_shared<std::vector<Claim>>(static_cast<size_t>(size) + 1);
  Claim& own = (*claims)[0];
  std::memset(&own, 0, sizeof own);
  gethostname(own.host, sizeof own.host - 1);
  EMBER_CUDA_CHECK(cudaDeviceGetPCIBusId(own.pci_bus_id, sizeof own.pci_bus_id - 1, device));
  own.device = device;
  MPI_Request req;
  MPI_Iallgather(&own, sizeof own, MPI_BYTE, claims->data() + 1, sizeof own, MPI_BYTE, comm, &req);
  mpi::wait(req, claims, timeout, "comparing GPUs");
  std::vector<GpuClaim> out;
  for (int r = 0; r < size; ++r) {
    const Claim& c = (*claims)[static_cast<size_t>(r) + 1];
    out.push_back({std::string(c.host, strnlen(c.host, sizeof c.host)),
                   std::string(c.pci_bus_id, strnlen(c.pci_bus_id, sizeof c.pci_bus_id)), c.device});
  }
  return out;
}

}  // namespace

std::unique_ptr<NcclProcessGroup> NcclProcessGroup::create(std::chrono::milliseconds timeout) {
  mpi::ensure_initialized();
  int rank = 0, size = 1;
  // MPI's part ends with this function (freed on every way out); the board
  // watches the peers from then on.
  mpi::OwnedComm comm(mpi::make_world_comm(&rank, &size));
  // This rank's place among the ranks on its host picks its GPU.
  MPI_Comm local;
  MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  const int devices = cuda::device_count_or_zero();
  if (devices == 0) throw DistError("init_process_group: the nccl backend needs a CUDA device but none is available");

  auto state = std::make_shared<NcclState>();
  state->device = pick_device(local_rank, devices);
  state->size = size;
  state->timeout = timeout;
  cuda::DeviceScope scope(state->device);
  // Two ranks on one GPU would run, slowly or not at all: refuse before NCCL starts.
  check_one_gpu_per_rank(gather_gpu_claims(comm.get(), size, state->device, timeout));

  // On the heap: mpi::wait keeps it if a late root could still write it.
  auto id = std::make_shared<ncclUniqueId>();
  if (rank == 0) EMBER_CUDA_CHECK(ncclGetUniqueId(id.get()));
  MPI_Request req;
  MPI_Ibcast(id.get(), sizeof *id, MPI_BYTE, 0, comm.get(), &req);
  mpi::wait(req, id, timeout, "sharing NCCL's unique id");
  auto board = mpi::make_board(comm.get(), rank, size, timeout);

  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking));
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&state->ready, cudaEventDisableTiming));
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&state->done, cudaEventDisableTiming));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t st = ncclCommInitRankConfig(&state->comm, size, *id, rank, &config);
  if (st == ncclInProgress) {
    const Poll p = poll_until([&] {
      ncclCommGetAsyncError(state->comm, &st);
      return st == ncclSuccess ? Poll::Done : st == ncclInProgress ? Poll::Pending : Poll::Failed;
    }, timeout);
    if (p == Poll::Pending) {
      ncclCommAbort(state->comm);
      state->comm = nullptr;
      throw DistError("init_process_group: NCCL did not start within " + std::to_string(timeout.count()) +
                      " ms (has every rank called init_process_group with the nccl backend?)");
    }
  }
  if (st != ncclSuccess) {
    // A communicator that failed to start cannot be finalized: abort it.
    ncclCommAbort(state->comm);
    state->aborted = true;
    throw DistError(std::string("init_process_group: NCCL failed to start: ") + ncclGetErrorString(st));
  }
  state->barrier_buffer = zeros({1}, {kFloat32, Device(DeviceType::CUDA, state->device)});

  auto thread = std::make_unique<CommThread>(
      rank, size, std::move(board), [state](Collective& c, Watchdog& wd) { run_nccl_collective(*state, c, wd); },
      timeout);
  return std::unique_ptr<NcclProcessGroup>(new NcclProcessGroup(state, rank, size, std::move(thread)));
}

NcclProcessGroup::NcclProcessGroup(std::shared_ptr<NcclState> state, int rank, int size,
                                   std::unique_ptr<CommThread> thread)
    : ProcessGroup(Backend::NCCL, rank, size, std::move(thread)), state_(std::move(state)) {}

NcclProcessGroup::~NcclProcessGroup() {
  state_->timeout = timeout();  // bounds the teardown (set_timeout may have changed it)
  release_thread();
}

int NcclProcessGroup::device() const { return state_->device; }

void NcclProcessGroup::check_device(const Tensor& t, const char* collective) const {
  if (!t.device().is_cuda())
    throw DistError(std::string(collective) + ": the nccl backend takes CUDA tensors but got a tensor on " +
                    t.device().str());
  if (t.device().index() != state_->device)
    throw DistError(std::string(collective) + ": rank " + std::to_string(rank()) + " of the nccl backend uses cuda:" +
                    std::to_string(state_->device) + " but got a tensor on " + t.device().str());
}

}  // namespace ember::dist

#endif  // EMBER_HAVE_NCCL
