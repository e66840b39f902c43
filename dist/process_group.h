// Process groups: the ranks of a data-parallel job and the collectives they run
// together (all_reduce, broadcast, all_gather, barrier), as torch.distributed.
//
//   dist::init_process_group(dist::Backend::MPI);     // under `mpirun -np N prog`
//   dist::all_reduce(grad, dist::ReduceOp::Avg);      // every rank ends with the mean
//   dist::destroy_process_group();
//
// Every collective runs on the group's communication thread, in the order the
// ranks called them, and has a deadline (default 5 minutes): a rank that dies,
// stops calling, or calls a different collective makes the others raise DistError
// instead of hanging. docs/dist.md explains the design.
#pragma once

#include "kernels/base/export.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::dist {

enum class Backend { MPI, NCCL };
// Sum, mean (floating dtypes only) and elementwise maximum. For bool tensors sum
// and max are both a logical or.
enum class ReduceOp { Sum, Avg, Max };

const char* backend_name(Backend b);  // "mpi", "nccl"
const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max"

inline constexpr std::chrono::milliseconds kDefaultTimeout{5 * 60 * 1000};

// The handle of a collective started by an *_async call. wait() returns once this
// rank's part is done (the tensor holds the result) or raises the collective's
// DistError; it may be called again and from any thread.
class Work {
 public:
  void wait();
  bool is_completed() const;

  // Called by the communication thread: success (null) or the error to raise.
  void finish(std::exception_ptr error);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};
using WorkPtr = std::shared_ptr<Work>;

class CommThread;  // dist/comm_thread.h

// A group of ranks. Tensors must be contiguous, on the backend's device type
// (MPI: CPU, NCCL: CUDA) and agree between ranks in dtype and size; a collective
// writes its result in place. The blocking forms are the async ones plus wait().
class ProcessGroup {
 public:
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  Backend backend() const { return backend_; }
  // The device this rank's collectives take tensors on: the CPU for MPI, the rank's
  // GPU for NCCL. Code that gathers host data (DDP's model check) moves it there.
  virtual Device collective_device() const = 0;
  // How long a collective may take from the moment this rank starts it.
  void set_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const;

  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) { all_reduce_async(tensor, op)->wait(); }
  void broadcast(const Tensor& tensor, int root = 0) { broadcast_async(tensor, root)->wait(); }
  // Returns [size(), ...input's shape]: row r is rank r's input.
  Tensor all_gather(const Tensor& input);
  void barrier() { barrier_async()->wait(); }

  // `tag` is part of what the ranks must agree on (DDP passes the bucket index), so
  // ranks that reach different buckets fail instead of mixing them.
  WorkPtr all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum, int64_t tag = 0);
  WorkPtr broadcast_async(const Tensor& tensor, int root = 0);
  // `output` has shape [size(), ...input's shape], same dtype and device.
  WorkPtr all_gather_async(const Tensor& output, const Tensor& input);
  WorkPtr barrier_async();

  // Collectives this group has started (the number the next one gets minus one).
  uint64_t collectives_started() const;

 protected:
  ProcessGroup(Backend backend, int rank, int size, std::unique_ptr<CommThread> thread);
  // Raises DistError unless `t` is on this backend's device type.
  virtual void check_device(const Tensor& t, const char* collective) const = 0;
  CommThread& thread() { return *thread_; }
  // Runs what is queued and stops the communication thread; backends call it
  // first in their destructor, before freeing what the thread uses.
  void release_thread();

 private:
  Backend backend_;
  int rank_, size_;
  std::unique_ptr<CommThread> thread_;
};

// ---- the default group, as torch.distributed ----
// Starts MPI if needed and makes the default group. The rank and world size come
// from the MPI launcher; RANK and WORLD_SIZE, when set, must match its world size
// and renumber the ranks. Raises DistError if a group exists already.
void init_process_group(Backend backend = Backend::MPI, std::chrono::milliseconds timeout = kDefaultTimeout);
bool is_initialized();
// Finishes queued collectives, then frees the group. MPI itself is finalized at exit.
void destroy_process_group();
ProcessGroup& default_group();  // DistError when there is none
int get_rank();
int get_world_size();

inline void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum) { default_group().all_reduce(t, op); }
inline void broadcast(const Tensor& t, int root = 0) { default_group().broadcast(t, root); }
inline Tensor all_gather(const Tensor& t) { return default_group().all_gather(t); }
inline void barrier() { default_group().barrier(); }

}  // namespace ember::dist

EMBER_API_END
