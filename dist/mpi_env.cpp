// MPI set-up (see mpi_env.h).
#include "dist/mpi_env.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dist/comm_thread.h"
#include "kernels/base/error.h"
#include "kernels/base/half.h"

namespace ember::dist::mpi {
namespace {

bool g_we_started = false;
MPI_Op g_half_ops[2][2];  // [float16, bfloat16][sum, max]

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), bool kMax>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = ToFloat(a[i]), y = ToFloat(b[i]);
    b[i] = FromFloat(kMax ? (x > y || x != x ? x : y) : x + y);
  }
}

void finalize_at_exit() {
  destroy_process_group();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || any_collective_failed()) return;
  for (auto& row : g_half_ops)
    for (MPI_Op& op : row) MPI_Op_free(&op);
  MPI_Finalize();
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0) throw DistError(std::string("init_process_group: ") + name + "=" + v + " is not a number");
  return static_cast<int>(x);
}

}  // namespace

void ensure_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        throw DistError("init_process_group: MPI_Init_thread failed");
      if (provided < MPI_THREAD_SERIALIZED)
        throw DistError("init_process_group: this MPI library cannot be called from a communication thread");
      g_we_started = true;
    }
    using namespace ember;
    MPI_Op_create(&half_reduce<half_bits_to_float, float_to_half_bits, false>, 1, &g_half_ops[0][0]);
    MPI_Op_create(&half_reduce<half_bits_to_float, float_to_half_bits, true>, 1, &g_half_ops[0][1]);
    MPI_Op_create(&half_reduce<bfloat16_bits_to_float, float_to_bfloat16_bits, false>, 1, &g_half_ops[1][0]);
    MPI_Op_create(&half_reduce<bfloat16_bits_to_float, float_to_bfloat16_bits, true>, 1, &g_half_ops[1][1]);
    if (g_we_started) std::atexit(finalize_at_exit);
  });
}

MPI_Comm make_world_comm(int* rank, int* size) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const int env_size = env_int("WORLD_SIZE", world_size);
  if (env_size != world_size)
    throw DistError("init_process_group: WORLD_SIZE=" + std::to_string(env_size) + " but the MPI launcher started " +
                    std::to_string(world_size) + (world_size == 1 ? " process" : " processes") +
                    " (launch with mpirun -np " + std::to_string(env_size) + ")");
  const int key = env_int("RANK", world_rank);
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, 0, key, &comm);
  // Errors come back as codes (raised as DistError) instead of aborting the job.
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, rank);
  MPI_Comm_size(comm, size);
  return comm;
}

MPI_Datatype datatype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Float16: return MPI_UINT16_T;  // reduced by g_half_ops
    case DType::BFloat16: return MPI_UINT16_T;
    case DType::Int8: return MPI_INT8_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Int32: return MPI_INT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::Bool: return MPI_C_BOOL;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op reduction(ReduceOp op, DType dtype) {
  const bool max = op == ReduceOp::Max;
  if (dtype == DType::Float16) return g_half_ops[0][max];
  if (dtype == DType::BFloat16) return g_half_ops[1][max];
  if (dtype == DType::Bool) return MPI_LOR;
  return max ? MPI_MAX : MPI_SUM;
}

void wait(MPI_Request& request, std::shared_ptr<void> buffers, std::chrono::milliseconds timeout, const char* what) {
  const auto give_up = [&](const std::string& message) {
    // Never freed: MPI may write into these whenever the request completes.
    static std::mutex mu;
    static auto* abandoned = new std::vector<std::shared_ptr<void>>;
    {
      std::lock_guard<std::mutex> lock(mu);
      abandoned->push_back(std::move(buffers));
    }
    note_failure();
    throw DistError(message);
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      give_up(std::string("init_process_group: MPI failed during ") + what);
    if (done) return;
    if (std::chrono::steady_clock::now() >= deadline)
      give_up(std::string("init_process_group: ") + what + " timed out after " + std::to_string(timeout.count()) +
              " ms (has every rank called init_process_group?)");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::unique_ptr<ArrivalBoard> make_board(MPI_Comm comm, int rank, int size, std::chrono::milliseconds timeout) {
  // Same host for everyone? Compare host names. The buffers live on the heap, owned
  // by wait() once it gives up (see mpi_env.h): [this host | every rank's].
  constexpr size_t kName = 256;
  auto hosts = std::make_shared<std::vector<char>>(kName * (static_cast<size_t>(size) + 1));
  char* host = hosts->data();
  gethostname(host, kName - 1);
  MPI_Request req;
  MPI_Iallgather(host, kName, MPI_CHAR, host + kName, kName, MPI_CHAR, comm, &req);
  wait(req, hosts, timeout, "comparing host names");
  for (int r = 0; r < size; ++r)
    if (std::strncmp(host, host + kName * (static_cast<size_t>(r) + 1), kName) != 0) return nullptr;

  // Rank 0 creates the board under a fresh name and tells the others.
  struct Shared {
    char name[64] = {};
    int ok = 1;
  };
  auto shared = std::make_shared<Shared>();
  std::unique_ptr<ArrivalBoard> board;
  if (rank == 0) {
    std::random_device rd;
    std::snprintf(shared->name, sizeof shared->name, "/ember-dist-%d-%08x", static_cast<int>(getpid()), rd());
    try {
      board = std::make_unique<ArrivalBoard>(shared->name, size, rank, true);
    } catch (const DistError&) {
      shared->ok = 0;
    }
  }
  try {
    MPI_Ibcast(shared->name, sizeof shared->name, MPI_CHAR, 0, comm, &req);
    wait(req, shared, timeout, "sharing the arrival board");
    MPI_Ibcast(&shared->ok, 1, MPI_INT, 0, comm, &req);
    wait(req, shared, timeout, "sharing the arrival board");
    if (!shared->ok) return nullptr;
    if (rank != 0) board = std::make_unique<ArrivalBoard>(shared->name, size, rank, false);
    MPI_Ibarrier(comm, &req);
    wait(req, nullptr, timeout, "sharing the arrival board");
  } catch (...) {
    // Rank 0 created the name: remove it, or it stays in /dev/shm after the job.
    if (rank == 0 && board) board->unlink();
    throw;
  }
  if (rank == 0) board->unlink();  // every rank has it mapped now
  return board;
}

}  // namespace ember::dist::mpi
