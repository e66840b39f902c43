// Failure scenarios of the dist suite, one per run (the argument names it), each
// under its own `mpirun -np 2`, because a failed collective leaves the group
// unusable. Every surviving rank must raise DistError with the exact documented
// message, well within the test's meson timeout, and then exit; the program prints
// "rank R: ok" and exits 0 when its rank saw what it should.
//   collective-mismatch  rank 0 reduces 4 elements, rank 1 reduces 8
//   bucket-order         the ranks all-reduce different buckets (tags) at the same point
//   stopped              rank 1 stops calling; rank 0 times out (500 ms) naming it
//   killed               rank 1 is killed (SIGKILL); rank 0 names it (needs mpirun --enable-recovery)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "dist/dist.h"
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpirun -np 2 %s SCENARIO\n", argv[0]);
    return 2;
  }
  set_num_threads(1);
  dist::init_process_group(dist::Backend::MPI);
  rank_ = dist::get_rank();
  const bool ok = run(argv[1]);
  std::printf("rank %d: %s\n", rank_, ok ? "ok" : "FAILED");
  std::fflush(stdout);
  // A failed group cannot finalize MPI cleanly; leave at once with the verdict.
  _exit(ok ? 0 : 1);
}
