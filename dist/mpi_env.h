// MPI as the process groups use it: starting it once (and finishing it at exit),
// the world communicator numbered by the launcher (or by RANK when set), the MPI
// names of Ember's dtypes and reductions, and the arrival board's setup.
#pragma once

// Only the C API: Open MPI's C++ bindings are deprecated and warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <memory>

#include "dist/arrival_board.h"
#include "dist/process_group.h"

namespace ember::dist::mpi {

// MPI_Init_thread with MPI_THREAD_MULTIPLE unless MPI is running already. When
// Ember started MPI it also finalizes it at exit (unless a collective failed: a
// dead peer would make MPI_Finalize wait forever).
void ensure_initialized();

// A private copy of MPI_COMM_WORLD. Ranks follow the launcher, or the RANK
// variable when set; WORLD_SIZE, when set, must equal the launcher's world size.
MPI_Comm make_world_comm(int* rank, int* size);

MPI_Datatype datatype(DType dtype);
// The MPI reduction for `op` over `dtype` (Avg is a sum, divided afterwards).
MPI_Op reduction(ReduceOp op, DType dtype);

// Waits for a set-up request (before the communication thread exists), raising
// DistError (naming `what`) after `timeout`. `buffers` owns the memory the request
// reads and writes. A collective request can be neither cancelled nor freed, and
// a late peer may still complete it, so after a timeout MPI could write into
// `buffers` at any time: they are then kept until exit (and MPI is not finalized,
// note_failure), never left on a stack frame that has unwound.
void wait(MPI_Request& request, std::shared_ptr<void> buffers, std::chrono::milliseconds timeout, const char* what);

// A set-up communicator, freed unless released: a set-up step that raises must not
// leak it. Freeing is legal with a request still pending: MPI keeps the
// communicator until the request completes.
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm comm) : comm_(comm) {}
  ~OwnedComm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  MPI_Comm get() const { return comm_; }
  MPI_Comm release() {
    const MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }

 private:
  MPI_Comm comm_;
};

// The arrival board when every rank runs on this host; null otherwise.
std::unique_ptr<ArrivalBoard> make_board(MPI_Comm comm, int rank, int size, std::chrono::milliseconds timeout);

}  // namespace ember::dist::mpi
