// The ddp suite: how much of the communication a DDP step hides behind backward.
// For each model and bucket size it times, on 2 CPU ranks:
//   compute alone   forward + backward of the plain module (no DDP);
//   comm alone      the all-reduces of the same buckets, nothing else running;
//   DDP step        forward + backward of the DDP-wrapped module.
// The row shows the DDP step (ember) next to compute + comm (peer: no overlap at
// all) and compute alone (floor: perfect overlap, free communication).
//   mpirun -np 2 ember-bench --suite ddp --threads 1
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/dist_bench.h"
#include "dist/ddp.h"
#include "dist/mpi_env.h"
#include "ember.h"
#include "nn/nn.h"

namespace ember::bench {
namespace {

// Median seconds of `reps` calls after 3 warm-up calls, taken as the slowest
// rank's median. Every rank runs the same count.
double median_time(int reps, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    f();
    t.push_back(MPI_Wtime() - t0);
  }
  std::sort(t.begin(), t.end());
  double m = t[t.size() / 2];
  MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

std::shared_ptr<nn::Module> make_mlp() {
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Flatten>());
  m->add(std::make_shared<nn::Linear>(784, 1024));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(1024, 1024));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(1024, 1024));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(1024, 10));
  return m;
}

void measure_case(Report& report, const std::string& name, const std::function<std::shared_ptr<nn::Module>()>& make,
                  int64_t batch, double bucket_mb, int reps) {
  manual_seed(0);
  Tensor x = randn({batch, 1, 28, 28});
  Tensor y = (rand({batch}) * 10).to(kInt64).clamp(0, 9);
  auto plain = make();
  auto step = [&](nn::Module& m) {
    m.zero_grad();
    nn::functional::cross_entropy(m(x), y).backward();
  };
  const double compute = median_time(reps, [&] { step(*plain); });

  auto ddp = std::make_shared<dist::DistributedDataParallel>(make(), dist::DDPOptions{.bucket_cap_mb = bucket_mb});
  // The same buckets, reduced back to back with nothing else running.
  std::vector<Tensor> buckets;
  for (const auto& names : ddp->bucket_names()) {
    int64_t n = 0;
    for (const auto& [pname, p] : ddp->module().named_parameters())
      if (std::find(names.begin(), names.end(), pname) != names.end()) n += p.numel();
    buckets.push_back(zeros({n}));
  }
  const double comm = median_time(reps, [&] {
    std::vector<dist::WorkPtr> works;
    for (size_t i = 0; i < buckets.size(); ++i)
      works.push_back(dist::default_group().all_reduce_async(buckets[i], dist::ReduceOp::Avg, int64_t(i)));
    for (auto& w : works) w->wait();
  });
  const double both = median_time(reps, [&] { step(*ddp); });

  if (dist::get_rank() == 0) {
    std::printf("  %s: %zu buckets; compute %.2f ms, comm %.2f ms, DDP step %.2f ms: %.0f%% of the communication "
                "hidden\n",
                name.c_str(), buckets.size(), compute * 1e3, comm * 1e3, both * 1e3,
                100.0 * std::clamp((compute + comm - both) / comm, -9.99, 1.0));
    report.add({"ddp", name, "ms per step", both * 1e3, "compute+comm", (compute + comm) * 1e3, compute * 1e3});
  }
}

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  if (!dist_bench_ready("ddp")) return;
  auto seed_net = [] { manual_seed(1); return std::static_pointer_cast<nn::Module>(std::make_shared<nn::Network>()); };
  auto mlp = [] { manual_seed(1); return make_mlp(); };
  measure_case(report, "seed net b64, 25 MB buckets", seed_net, 64, 25, 30);
  measure_case(report, "seed net b64, 32 KB buckets", seed_net, 64, 1.0 / 32, 30);
  measure_case(report, "MLP 3x1024 b64, 25 MB bkts", mlp, 64, 25, 15);
  measure_case(report, "MLP 3x1024 b64, 2 MB bkts", mlp, 64, 2, 15);
  if (dist::get_rank() != 0) dist_bench_leave_if_not_rank0(report);
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(ddp, ember::bench::run);
