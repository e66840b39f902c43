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

void wait(MPI_Request& request, std::chrono::milliseconds timeout, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      throw DistError(std::string("init_process_group: MPI failed during ") + what);
    if (done) return;
    if (std::chrono::steady_clock::now() >= deadline)
      throw DistError(std::string("init_process_group: ") + what + " timed out after " +
                      std::to_string(timeout.count()) + " ms (has every rank called init_process_group?)");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::unique_ptr<ArrivalBoard> make_board(MPI_Comm comm, int rank, int size, std::chrono::milliseconds timeout) {
  // Same host for everyone? Compare host names.
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts(256 * static_cast<size_t>(size));
  MPI_Request req;
  MPI_Iallgather(host, 256, MPI_CHAR, hosts.data(), 256, MPI_CHAR, comm, &req);
  wait(req, timeout, "comparing host names");
  for (int r = 0; r < size; ++r)
    if (std::strncmp(host, &hosts[256 * static_cast<size_t>(r)], 256) != 0) return nullptr;

  // Rank 0 creates the board under a fresh name and tells the others.
  char name[64] = {};
  int ok = 1;
  std::unique_ptr<ArrivalBoard> board;
  if (rank == 0) {
    std::random_device rd;
    std::snprintf(name, sizeof name, "/ember-dist-%d-%08x", static_cast<int>(getpid()), rd());
    try {
      board = std::make_unique<ArrivalBoard>(name, size, rank, true);
    } catch (const DistError&) {
      ok = 0;
    }
  }
  MPI_Ibcast(name, sizeof name, MPI_CHAR, 0, comm, &req);
  wait(req, timeout, "sharing the arrival board");
  MPI_Ibcast(&ok, 1, MPI_INT, 0, comm, &req);
  wait(req, timeout, "sharing the arrival board");
  if (!ok) return nullptr;
  if (rank != 0) board = std::make_unique<ArrivalBoard>(name, size, rank, false);
  MPI_Ibarrier(comm, &req);
  wait(req, timeout, "sharing the arrival board");
  if (rank == 0) board->unlink();  // every rank has it mapped now
  return board;
}

}  // namespace ember::dist::mpi
