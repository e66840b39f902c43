// The allreduce suite: all-reduce (sum, float32, in place) bandwidth on 2 CPU
// ranks from 1 KB to 256 MB, Ember's dist::all_reduce next to a plain blocking
// MPI_Allreduce on the same buffers in the same run. Bandwidth is bytes / time
// (for 2 ranks the "bus bandwidth" of NCCL's tests is the same number). Ember's
// path adds its communication thread, the arrival board and a polled non-blocking
// MPI_Iallreduce; the table shows what that costs (or saves).
//   mpirun -np 2 ember-bench --suite allreduce --threads 1
#include <algorithm>
#include <vector>

#include "bench/dist_bench.h"
#include "dist/mpi_env.h"
#include "ember.h"

namespace ember::bench {
namespace {

// Mean seconds per call over `reps` calls, after a barrier: every rank runs the
// same loop, so the number of collectives always matches.
double time_calls(int reps, const std::function<void()>& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) f();
  double t = (MPI_Wtime() - t0) / reps;
  // The slowest rank's time is the collective's time.
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

std::string size_name(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MB";
  return std::to_string(bytes >> 10) + " KB";
}

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  if (!dist_bench_ready("allreduce")) return;
  const int rank = dist::get_rank();
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{256} << 20); bytes *= 4) {
    const int64_t n = bytes / 4;
    // Enough calls to last ~0.1 s at 1 GB/s, at least 3; fixed from the size alone.
    const int reps = static_cast<int>(std::clamp<int64_t>((int64_t{100} << 20) / bytes, 3, 300));
    Tensor a = ones({n});
    dist::all_reduce(a);  // check once: every element is the number of ranks
    if (a[0].item<float>() != dist::get_world_size() || a[n - 1].item<float>() != dist::get_world_size())
      report.fail("allreduce: wrong sum at " + size_name(bytes));
    a.zero_();  // zeros stay zeros however often they are summed
    std::vector<float> b(static_cast<size_t>(n), 0.0f);
    auto ember_call = [&] { dist::all_reduce(a); };
    auto mpi_call = [&] { MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
    mpi_call();  // warm-up: first touch, connections
    // Alternate three rounds and keep each side's best, so a burst of load from
    // elsewhere does not favour one side.
    double te = 1e30, tm = 1e30;
    for (int round = 0; round < 3; ++round) {
      te = std::min(te, time_calls(reps, ember_call));
      tm = std::min(tm, time_calls(reps, mpi_call));
    }
    if (rank == 0)
      report.add({"allreduce", size_name(bytes) + " f32 sum", "GB/s (bytes / time)", bytes / te / 1e9,
                  "MPI_Allreduce", bytes / tm / 1e9, std::nullopt});
  }
  if (rank != 0) dist_bench_leave_if_not_rank0(report);
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(allreduce, ember::bench::run);
