// Failure scenarios of the dist suite, one per run (the argument names it), each
// under its own `mpirun -np 2`, because a failed collective leaves the group
// unusable. Every surviving rank must raise DistError with the exact documented
// message, well within the test's meson timeout, and then exit; the program prints
// "rank R: ok" and exits 0 when its rank saw what it should.
//   collective-mismatch  rank 0 reduces 4 elements, rank 1 reduces 8
//   bucket-order         the ranks all-reduce different buckets (tags) at the same point
//   stopped              rank 1 stops calling; rank 0 times out (500 ms) naming it
//   killed               rank 1 is killed (SIGKILL); rank 0 names it (needs mpirun --enable-recovery)
//   setup-timeout        rank 1's init_process_group times out (500 ms) while rank 0 stalls in set-up;
//                        rank 0 then arrives and completes the exchange rank 1 gave up on, so MPI
//                        writes into rank 1's abandoned buffers, which must not be memory rank 1 has
//                        reused since; rank 0 times out in turn and leaves no board in /dev/shm; both
//                        ranks then leave through exit() (which must not hang)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "dist/dist.h"
#include "dist/mpi_env.h"
#include "kernels/base/parallel.h"

using namespace ember;
namespace dist = ember::dist;

namespace {

int rank_;

bool expect_error(const std::function<void()>& f, const std::string& want) {
  try {
    f();
  } catch (const DistError& e) {
    if (e.what() == want) return true;
    std::fprintf(stderr, "rank %d: wrong message\n  got:  %s\n  want: %s\n", rank_, e.what(), want.c_str());
    return false;
  }
  std::fprintf(stderr, "rank %d: no DistError (want: %s)\n", rank_, want.c_str());
  return false;
}

bool unusable_after(const std::string& first) {
  Tensor t = ones({1});
  return expect_error([&] { dist::all_reduce(t); },
                      "process group is unusable after an earlier failure: " + first);
}

bool run(const std::string& scenario) {
  auto& g = dist::default_group();
  Tensor warm = ones({4});
  g.all_reduce(warm);  // collective #1: everyone is up
  if (scenario == "collective-mismatch") {
    const std::string want =
        "collective #2 differs between ranks: rank 0 called all_reduce(float32, 4 elements, sum, tag 0) but rank 1 "
        "called all_reduce(float32, 8 elements, sum, tag 0)";
    Tensor t = ones({rank_ == 0 ? 4 : 8});
    return expect_error([&] { g.all_reduce(t); }, want) && unusable_after(want);
  }
  if (scenario == "bucket-order") {
    const std::string want =
        "collective #2 differs between ranks: rank 0 called all_reduce(float32, 4 elements, avg, tag 0) but rank 1 "
        "called all_reduce(float32, 4 elements, avg, tag 1)";
    Tensor t = ones({4});
    return expect_error([&] { g.all_reduce_async(t, dist::ReduceOp::Avg, rank_)->wait(); }, want);
  }
  if (scenario == "stopped") {
    if (rank_ == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));  // never calls collective #2
      std::printf("rank 1: ok\n");
      std::fflush(stdout);
      _exit(0);
    }
    g.set_timeout(std::chrono::milliseconds(500));
    Tensor t = ones({4});
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = expect_error(
        [&] { g.all_reduce(t); },
        "all_reduce (collective #2) timed out after 500 ms on rank 0: rank 1 has not called it (its last "
        "collective is #1)");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 2) std::fprintf(stderr, "rank 0: the timeout took %.2f s\n", s);
    return ok && s < 2;
  }
  if (scenario == "killed") {
    if (rank_ == 1) raise(SIGKILL);
    Tensor t = ones({4});
    const auto t0 = std::chrono::steady_clock::now();
    // The default 5-minute timeout: the death itself must be noticed.
    const bool ok =
        expect_error([&] { g.all_reduce(t); }, "all_reduce (collective #2) failed on rank 0: rank 1 has exited");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 5) std::fprintf(stderr, "rank 0: noticing took %.2f s\n", s);
    return ok && s < 5;
  }
  std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
  return false;
}

// Before any group exists, so not part of run().
bool setup_timeout() {
  using namespace std::chrono;
  const std::string late = " timed out after 500 ms (has every rank called init_process_group?)";
  if (rank_ == 1) {
    const bool ok = expect_error([] { dist::init_process_group(dist::Backend::MPI, milliseconds(500)); },
                                 "init_process_group: comparing host names" + late);
    // Blocks of the size of the abandoned receive buffer (256 bytes a rank): had it
    // been freed on the way out, these would reuse it and rank 0's late host name
    // would land in them.
    std::vector<std::vector<char>> canaries;
    for (int i = 0; i < 64; ++i) canaries.emplace_back(512, '\x5a');
    // Rank 0 arrives after about 1 s; MPI moves its data while this rank calls MPI.
    for (const auto end = steady_clock::now() + seconds(3); steady_clock::now() < end;) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(milliseconds(1));
    }
    for (const auto& c : canaries)
      for (char x : c)
        if (x != '\x5a') {
          std::fprintf(stderr, "rank 1: MPI wrote into memory freed after the timed-out set-up\n");
          return false;
        }
    return ok;
  }
  // Rank 0: the communicator rank 1's init_process_group splits off, then a stall.
  int rank = 0, size = 0;
  MPI_Comm comm = dist::mpi::make_world_comm(&rank, &size);
  std::this_thread::sleep_for(seconds(1));
  // Host names now meet rank 1's abandoned request; the board's sharing then waits
  // for a rank 1 that has given up.
  const bool ok = expect_error([&] { dist::mpi::make_board(comm, rank, size, milliseconds(500)); },
                               "init_process_group: sharing the arrival board" + late);
  const std::string mine = "ember-dist-" + std::to_string(getpid()) + "-";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind(mine, 0) == 0) {
      std::fprintf(stderr, "rank 0: the board %s was left in /dev/shm\n", e.path().c_str());
      return false;
    }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpirun -np 2 %s SCENARIO\n", argv[0]);
    return 2;
  }
  set_num_threads(1);
  if (std::strcmp(argv[1], "setup-timeout") == 0) {
    dist::mpi::ensure_initialized();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    const bool ok = setup_timeout();
    std::printf("rank %d: %s\n", rank_, ok ? "ok" : "FAILED");
    std::fflush(stdout);
    // exit(), not _exit: leaving with an abandoned set-up request must not hang
    // (MPI is then not finalized).
    return ok ? 0 : 1;
  }
  dist::init_process_group(dist::Backend::MPI);
  rank_ = dist::get_rank();
  const bool ok = run(argv[1]);
  std::printf("rank %d: %s\n", rank_, ok ? "ok" : "FAILED");
  std::fflush(stdout);
  // A failed group cannot finalize MPI cleanly; leave at once with the verdict.
  _exit(ok ? 0 : 1);
}
