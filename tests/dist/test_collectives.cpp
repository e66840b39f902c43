// Collectives of the MPI backend against hand-computed results, for every dtype:
// rank r holds value(r, i) at element i; the expected sum, max, mean, broadcast
// and gather are computed here in double with plain loops (tests/support/reference
// decodes and encodes the stored elements without Ember's conversions).
#include <catch2/catch.hpp>

#include <algorithm>

#include "dist/dist.h"
#include "support/reference.h"

using namespace ember;
namespace dist = ember::dist;

namespace {

const DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool};

// Small values every dtype holds exactly: bool sees "is it nonzero".
double value(int rank, int64_t i, DType dt) {
  if (dt == kBool) return (i + rank) % 3 == 0 ? 1 : 0;
  return (rank + 1) * ((i % 5) + 1) + (is_floating(dt) ? 0.5 * (i % 2) : 0);
}

Tensor make(int rank, int64_t n, DType dt) {
  Tensor t = empty({n}, {dt});
  for (int64_t i = 0; i < n; ++i)
    ref::store(static_cast<char*>(t.data_ptr()) + i * dtype_size(dt), dt, value(rank, i, dt));
  return t;
}

std::vector<double> read(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    out[i] = ref::load(static_cast<const char*>(t.data_ptr()) + i * dtype_size(t.dtype()), t.dtype());
  return out;
}

}  // namespace

TEST_CASE("the launcher's rank and world size", "[dist]") {
  REQUIRE(dist::get_world_size() == 2);
  REQUIRE(dist::get_rank() >= 0);
  REQUIRE(dist::get_rank() < 2);
  REQUIRE(dist::default_group().backend() == dist::Backend::MPI);
  REQUIRE(dist::default_group().timeout() == dist::kDefaultTimeout);
}

TEST_CASE("all_reduce sum, max and avg for every dtype", "[dist]") {
  const int rank = dist::get_rank(), world = dist::get_world_size();
  // 37 elements take MPI_Iallreduce; 300001 (over 256 KB in every dtype, an odd
  // count so the chunks differ in size) take the ring of point-to-point messages.
  const int64_t n = GENERATE(37, 300001);
  CAPTURE(n);
  for (DType dt : kAllDTypes) {
    CAPTURE(dtype_name(dt));
    std::vector<dist::ReduceOp> ops{dist::ReduceOp::Sum, dist::ReduceOp::Max};
    if (is_floating(dt)) ops.push_back(dist::ReduceOp::Avg);
    for (dist::ReduceOp op : ops) {
      CAPTURE(dist::reduce_op_name(op));
      Tensor t = make(rank, n, dt);
      dist::all_reduce(t, op);
      const auto got = read(t);
      for (int64_t i = 0; i < n; ++i) {
        double sum = 0, max = -1e300;
        for (int r = 0; r < world; ++r) {
          sum += value(r, i, dt);
          max = std::max(max, value(r, i, dt));
        }
        double want = op == dist::ReduceOp::Sum ? sum : op == dist::ReduceOp::Max ? max : sum / world;
        if (dt == kBool) want = max;  // sum and max are both "or"
        REQUIRE(got[i] == ref::cast(want, dt));
      }
    }
  }
}

TEST_CASE("broadcast from either root for every dtype", "[dist]") {
  const int rank = dist::get_rank();
  for (int root = 0; root < dist::get_world_size(); ++root)
    for (DType dt : kAllDTypes) {
      CAPTURE(dtype_name(dt), root);
      Tensor t = make(rank, 11, dt);
      dist::broadcast(t, root);
      const auto got = read(t);
      for (int64_t i = 0; i < 11; ++i) REQUIRE(got[i] == ref::cast(value(root, i, dt), dt));
    }
}

TEST_CASE("all_gather stacks every rank's tensor for every dtype", "[dist]") {
  const int rank = dist::get_rank(), world = dist::get_world_size();
  for (DType dt : kAllDTypes) {
    CAPTURE(dtype_name(dt));
    Tensor mine = make(rank, 6, dt).view({2, 3});
    Tensor all = dist::all_gather(mine);
    REQUIRE(all.shape() == Shape{world, 2, 3});
    const auto got = read(all);
    for (int r = 0; r < world; ++r)
      for (int64_t i = 0; i < 6; ++i) REQUIRE(got[r * 6 + i] == ref::cast(value(r, i, dt), dt));
  }
}

TEST_CASE("async collectives run in call order and report through their handles", "[dist]") {
  auto& g = dist::default_group();
  const int rank = g.rank();
  Tensor a = full({1000}, rank + 1.0);
  Tensor b = full({3}, rank == 0 ? 7.0 : -1.0);
  Tensor gathered = empty({2, 2}, {kInt64});
  Tensor mine = tensor(std::vector<int64_t>{rank, 10 * rank});
  const uint64_t before = g.collectives_started();
  auto w1 = g.all_reduce_async(a, dist::ReduceOp::Sum);
  auto w2 = g.broadcast_async(b, 0);
  auto w3 = g.all_gather_async(gathered, mine);
  auto w4 = g.barrier_async();
  REQUIRE(g.collectives_started() == before + 4);
  w4->wait();  // the thread runs them in order, so all are done
  REQUIRE(w1->is_completed());
  REQUIRE(w2->is_completed());
  REQUIRE(w3->is_completed());
  w1->wait();
  w1->wait();  // waiting twice is fine
  REQUIRE(a.to_vector<float>() == std::vector<float>(1000, 3.0f));
  REQUIRE(b.to_vector<float>() == std::vector<float>(3, 7.0f));
  REQUIRE(gathered.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 10});
  dist::barrier();
}

TEST_CASE("large all_reduce (8 MB) and empty tensors", "[dist]") {
  Tensor big = full({2 << 20}, 0.25);
  dist::all_reduce(big, dist::ReduceOp::Avg);
  REQUIRE(big.max().item<float>() == 0.25f);
  REQUIRE(big.min().item<float>() == 0.25f);
  Tensor none = empty({0});
  dist::all_reduce(none);
  REQUIRE(none.numel() == 0);
}

TEST_CASE("collective argument errors, raised before any rank communicates", "[dist]") {
  auto& g = dist::default_group();
  const uint64_t before = g.collectives_started();
  REQUIRE_THROWS_MATCHES(g.all_reduce(empty({4}, {kFloat32, Device("meta")})), DistError,
                         Catch::Message("all_reduce: the mpi backend takes CPU tensors but got a tensor on meta"));
  REQUIRE_THROWS_MATCHES(g.broadcast(empty({4}, {kFloat32, Device("meta")})), DistError,
                         Catch::Message("broadcast: the mpi backend takes CPU tensors but got a tensor on meta"));
  REQUIRE_THROWS_MATCHES(g.all_reduce(ones({4}, {kInt32}), dist::ReduceOp::Avg), DTypeError,
                         Catch::Message("all_reduce: avg needs a floating-point tensor but got int32"));
  REQUIRE_THROWS_MATCHES(g.all_reduce(ones({3, 4}).t()), ValueError,
                         Catch::Message("all_reduce: the tensor must be contiguous"));
  REQUIRE_THROWS_MATCHES(g.broadcast(ones({2}), 2), ValueError,
                         Catch::Message("broadcast: root 2 is not a rank of a group of size 2"));
  REQUIRE_THROWS_MATCHES(g.all_gather_async(empty({3}), ones({3})), ShapeError,
                         Catch::Message("all_gather: the output must have shape [2, 3] but has shape [3]"));
  REQUIRE_THROWS_MATCHES(g.all_gather_async(empty({2, 3}, {kFloat64}), ones({3})), DTypeError,
                         Catch::Message("all_gather: the output has dtype float64 but the input has dtype float32"));
  REQUIRE_THROWS_MATCHES(dist::init_process_group(), DistError,
                         Catch::Message("init_process_group: the default process group is already initialized"));
  REQUIRE_THROWS_MATCHES(g.set_timeout(std::chrono::milliseconds(0)), ValueError,
                         Catch::Message("set_timeout: the timeout must be positive"));
  REQUIRE(g.collectives_started() == before);  // nothing was queued
}
