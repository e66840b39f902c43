// DistributedDataParallel with 2 ranks against one process: each rank trains on
// its half of every batch; the reference, a plain module on the same rank with rank
// 0's initial values, trains on the whole batch. After several SGD steps both must
// hold the same parameters (float32 tolerance). Also: buckets, no_sync
// accumulation, unused parameters, and models that differ between ranks.
#include <catch2/catch.hpp>

#include <cmath>

#include "dist/dist.h"
#include "nn/nn.h"

using namespace ember;
namespace dist = ember::dist;

namespace {

constexpr int64_t kIn = 8, kHidden = 16, kClasses = 4, kBatch = 16;

std::shared_ptr<nn::Module> make_mlp(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(kIn, kHidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(kHidden, kClasses)});
}

// The whole batch of step `step`, the same on every rank.
std::pair<Tensor, Tensor> batch(int step) {
  manual_seed(1000 + step);
  Tensor x = randn({kBatch, kIn});
  Tensor y = (rand({kBatch}) * kClasses).to(kInt64).clamp(0, kClasses - 1);
  return {x, y};
}

Tensor half_of(const Tensor& t, int rank) { return t.narrow(0, rank * (kBatch / 2), kBatch / 2).contiguous(); }

void require_same_parameters(nn::Module& a, nn::Module& b, double tol) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t k = 0; k < pa.size(); ++k) {
    CAPTURE(pa[k].first);
    const auto va = pa[k].second.to_vector<float>(), vb = pb[k].second.to_vector<float>();
    for (size_t i = 0; i < va.size(); ++i) REQUIRE(std::abs(va[i] - vb[i]) <= tol * (1 + std::abs(vb[i])));
  }
}

// Trains `steps` SGD steps with DDP (per-rank halves) and with one module (whole
// batches), `micro` micro-batches per step, all but the last under no_sync.
void check_equivalence(dist::DDPOptions options, int steps, int micro) {
  const int rank = dist::get_rank();
  // Ranks start from different values: DDP must broadcast rank 0's.
  auto local = make_mlp(rank == 0 ? 1 : 2);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(local, options);
  auto reference = make_mlp(1);
  nn::optim::SGD opt(ddp->parameters(), 0.1), ref_opt(reference->parameters(), 0.1);
  require_same_parameters(*local, *reference, 0);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    ref_opt.zero_grad();
    for (int m = 0; m < micro; ++m) {
      auto [x, y] = batch(s * micro + m);
      nn::functional::cross_entropy((*reference)(x), y).backward();
      if (m + 1 < micro) {
        auto guard = ddp->no_sync();
        nn::functional::cross_entropy((*ddp)(half_of(x, rank)), half_of(y, rank)).backward();
      } else {
        nn::functional::cross_entropy((*ddp)(half_of(x, rank)), half_of(y, rank)).backward();
      }
    }
    opt.step();
    ref_opt.step();
  }
  require_same_parameters(*local, *reference, 2e-5);
}

struct TwoHeads : nn::Module {
  std::shared_ptr<nn::Linear> used, unused;
  TwoHeads() : nn::Module("TwoHeads") {
    manual_seed(5);
    used = register_module("used", std::make_shared<nn::Linear>(4, 3));
    unused = register_module("unused", std::make_shared<nn::Linear>(4, 3));
  }
  Tensor forward(const Tensor& x) override { return (*used)(x); }
};

}  // namespace

TEST_CASE("DDP buckets hold parameters in reverse order, split at the cap", "[dist][ddp]") {
  auto one = std::make_shared<dist::DistributedDataParallel>(make_mlp(1));
  REQUIRE(one->bucket_names() == std::vector<std::vector<std::string>>{{"2.bias", "2.weight", "0.bias", "0.weight"}});
  // 16*8*4 = 512 bytes for 0.weight, 64*4 = 256 for 2.weight: a 250-byte cap closes a
  // bucket once it holds 250 bytes or more.
  auto split = std::make_shared<dist::DistributedDataParallel>(make_mlp(1), dist::DDPOptions{.bucket_cap_mb = 250.0 / (1 << 20)});
  REQUIRE(split->bucket_names() ==
          std::vector<std::vector<std::string>>{{"2.bias", "2.weight"}, {"0.bias", "0.weight"}});
  REQUIRE(split->named_parameters()[0].first == "module.0.weight");
}

TEST_CASE("DDP on 2 ranks equals one process on the combined batch", "[dist][ddp]") {
  SECTION("one bucket") { check_equivalence({}, 5, 1); }
  SECTION("a bucket per parameter, overlapping backward") { check_equivalence({.bucket_cap_mb = 1e-6}, 5, 1); }
}

TEST_CASE("DDP no_sync accumulates locally and the next synced backward averages the sum", "[dist][ddp]") {
  check_equivalence({}, 3, 2);
  check_equivalence({.bucket_cap_mb = 1e-6}, 2, 3);
}

TEST_CASE("DDP with a parameter that gets no gradient", "[dist][ddp]") {
  const int rank = dist::get_rank();
  Tensor x = full({2, 4}, rank + 1.0);
  SECTION("find_unused_parameters: the step completes, the unused gradient is zero") {
    auto m = std::make_shared<TwoHeads>();
    dist::DistributedDataParallel ddp(m, {.find_unused_parameters = true});
    ddp(x).sum().backward();
    // d(sum)/d(bias) is the batch size on each rank: 2.
    REQUIRE(m->used->parameters()[1].grad().to_vector<float>() == std::vector<float>(3, 2.0f));
    // d/d(weight) = sum of inputs per column: rank 0: 2, rank 1: 4; average 3.
    REQUIRE(m->used->parameters()[0].grad().to_vector<float>() == std::vector<float>(12, 3.0f));
    REQUIRE(m->unused->parameters()[0].grad().to_vector<float>() == std::vector<float>(12, 0.0f));
    ddp(x).sum().backward();  // and the next iteration works too
    REQUIRE(m->used->parameters()[1].grad().to_vector<float>() == std::vector<float>(3, 4.0f));
  }
  SECTION("without it, the next forward names the parameters") {
    auto m = std::make_shared<TwoHeads>();
    dist::DistributedDataParallel ddp(m);
    ddp(x).sum().backward();
    REQUIRE_THROWS_MATCHES(
        ddp(x), DistError,
        Catch::Message("DistributedDataParallel: the last backward produced no gradient for unused.weight, "
                       "unused.bias; construct DistributedDataParallel with find_unused_parameters = true when "
                       "some parameters do not take part in the loss"));
  }
  dist::barrier();
}

TEST_CASE("DDP raises on every rank when the ranks' models differ", "[dist][ddp]") {
  const int rank = dist::get_rank();
  manual_seed(3);
  REQUIRE_THROWS_MATCHES(
      dist::DistributedDataParallel(std::make_shared<nn::Linear>(4, rank == 0 ? 3 : 5)), DistError,
      Catch::Message("DistributedDataParallel: the ranks' models differ: entry 1 is 'parameter weight float32 [3, 4]' "
                     "on rank 0 but 'parameter weight float32 [5, 4]' on rank 1"));
  REQUIRE_THROWS_MATCHES(
      dist::DistributedDataParallel(std::make_shared<nn::Linear>(4, 3, rank == 0)), DistError,
      Catch::Message("DistributedDataParallel: the ranks' models differ: entry 2 is 'parameter bias float32 [3]' "
                     "on rank 0 but 'bucket_cap 26214400 bytes' on rank 1"));
  REQUIRE_THROWS_MATCHES(
      dist::DistributedDataParallel(std::make_shared<nn::Linear>(4, 3), {.bucket_cap_mb = rank == 0 ? 25.0 : 1.0}),
      DistError,
      Catch::Message("DistributedDataParallel: the ranks' models differ: entry 3 is 'bucket_cap 26214400 bytes' "
                     "on rank 0 but 'bucket_cap 1048576 bytes' on rank 1"));
  // The group is still usable: the check itself never failed to communicate.
  Tensor t = ones({2});
  dist::all_reduce(t);
  REQUIRE(t.to_vector<float>() == std::vector<float>{2, 2});
}
