// The DataLoader and its sampler: coverage of every sample per epoch, batch sizes,
// seeded orders, workers giving the same batches as the calling thread, clean
// stops mid-epoch, epochs resumed at a batch, errors from workers (named by
// worker and batch), rank shards, and argument errors.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <iterator>
#include <numeric>
#include <ranges>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/data/sampler.h"

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

// inputs [n, 2, 3] float32 whose row i holds 6i .. 6i+5; targets [n] int64 = i.
// A batch then tells which samples it holds through its targets, and whether the
// rows travelled with them through its inputs.
std::pair<Tensor, Tensor> numbered(int64_t n) {
  Tensor x = arange(0, n * 6, 1, kFloat32).view({n, 2, 3});
  Tensor y = arange(n);
  return {x, y};
}

// The targets of every batch of one epoch, batch by batch; checks the rows match.
std::vector<std::vector<int64_t>> run_epoch(const DataLoader& loader, int64_t e) {
  std::vector<std::vector<int64_t>> batches;
  for (Batch& b : loader.epoch(e)) {
    REQUIRE(b.inputs.dim() == 3);
    REQUIRE(b.inputs.size(0) == b.targets.size(0));
    const std::vector<int64_t> ids = b.targets.to_vector<int64_t>();
    const std::vector<float> x = b.inputs.to_vector<float>();
    for (size_t i = 0; i < ids.size(); ++i)
      for (int k = 0; k < 6; ++k) REQUIRE(x[i * 6 + k] == static_cast<float>(ids[i] * 6 + k));
    batches.push_back(ids);
  }
  return batches;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

// Threads of this process, from /proc: workers must all be joined when an epoch ends.
int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

}  // namespace

// An epoch is a C++20 input range, so std::ranges algorithms accept it.
static_assert(std::input_iterator<DataLoader::Epoch::iterator>);
static_assert(std::sentinel_for<std::default_sentinel_t, DataLoader::Epoch::iterator>);
static_assert(std::ranges::input_range<DataLoader::Epoch>);

TEST_CASE("DataLoader visits every sample once per epoch, in order unless shuffled", "[data][dataloader]") {
  auto [x, y] = numbered(10);
  DataLoader plain(x, y, {.batch_size = 4});
  REQUIRE(plain.size() == 3);
  auto batches = run_epoch(plain, 0);
  REQUIRE(batches == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  REQUIRE(run_epoch(plain, 5) == batches);  // without shuffle the epoch does not matter

  DataLoader shuffled(x, y, {.batch_size = 3, .shuffle = true, .seed = 7});
  REQUIRE(shuffled.size() == 4);
  for (int64_t e = 0; e < 3; ++e) {
    batches = run_epoch(shuffled, e);
    REQUIRE(batches.size() == 4);
    REQUIRE(batches.back().size() == 1);  // 10 = 3 + 3 + 3 + 1
    REQUIRE(sorted(flat(batches)) == range(10));
    REQUIRE(flat(batches) == shuffled.indices(e));
  }
}

TEST_CASE("DataLoader copies large shuffled batches on the thread team row for row", "[data][dataloader]") {
  // Rows of 1000 floats, batches of 100: enough for the loop thread's copy to run on
  // the team (cpu::take); a worker copies alone. Row i holds 1000i .. 1000i + 999.
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  set_num_threads(2);
  const int64_t n = 350, len = 1000;
  Tensor x = arange(0, n * len, 1, kFloat32).view({n, len});
  Tensor y = arange(n);
  DataLoader inline_loader(x, y, {.batch_size = 100, .shuffle = true, .seed = 3});
  DataLoader threaded(x, y, {.batch_size = 100, .shuffle = true, .seed = 3, .num_workers = 2});
  for (const DataLoader* loader : {&inline_loader, &threaded}) {
    std::vector<int64_t> seen;
    for (Batch& b : loader->epoch(1)) {
      const std::vector<int64_t> ids = b.targets.to_vector<int64_t>();
      const std::vector<float> v = b.inputs.to_vector<float>();
      REQUIRE(v.size() == ids.size() * size_t(len));
      int64_t bad = 0;
      for (size_t i = 0; i < ids.size(); ++i)
        for (int64_t k = 0; k < len; ++k) bad += v[i * size_t(len) + size_t(k)] != float(ids[i] * len + k);
      CHECK(bad == 0);
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    CHECK(sorted(seen) == range(n));
    CHECK(seen != range(n));  // shuffled
  }
}

TEST_CASE("DataLoader batch shapes, drop_last and the last partial batch", "[data][dataloader]") {
  auto [x, y] = numbered(10);
  DataLoader keep(x, y, {.batch_size = 4});
  DataLoader drop(x, y, {.batch_size = 4, .drop_last = true});
  REQUIRE(drop.size() == 2);
  auto kept = run_epoch(keep, 0), dropped = run_epoch(drop, 0);
  REQUIRE(kept.back().size() == 2);
  REQUIRE(dropped == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});

  for (Batch& b : keep.epoch(0)) {
    REQUIRE(b.inputs.dtype() == kFloat32);
    REQUIRE(b.targets.dtype() == kInt64);
    REQUIRE(b.inputs.is_contiguous());
    REQUIRE(b.inputs.shape() == Shape{b.targets.size(0), 2, 3});
  }
  // Batches are copies: writing into one leaves the dataset alone.
  for (Batch& b : keep.epoch(0)) b.inputs.fill_(-1);
  REQUIRE(x.to_vector<float>()[7] == 7.0f);

  // Edge sizes: a batch larger than the dataset, an exact fit, batch_size 1, no samples.
  REQUIRE(run_epoch(DataLoader(x, y, {.batch_size = 64}), 0).size() == 1);
  REQUIRE(DataLoader(x, y, {.batch_size = 64, .drop_last = true}).size() == 0);
  REQUIRE(run_epoch(DataLoader(x, y, {.batch_size = 64, .drop_last = true}), 0).empty());
  REQUIRE(DataLoader(x, y, {.batch_size = 5, .drop_last = true}).size() == 2);
  REQUIRE(run_epoch(DataLoader(x, y, {.batch_size = 1}), 0).size() == 10);
  auto [x0, y0] = numbered(0);
  DataLoader none(x0, y0, {.batch_size = 4, .num_workers = 2});
  REQUIRE(none.size() == 0);
  REQUIRE(run_epoch(none, 0).empty());
}

TEST_CASE("DataLoader shuffles are a function of (seed, epoch)", "[data][dataloader]") {
  auto [x, y] = numbered(50);
  DataLoader a(x, y, {.batch_size = 8, .shuffle = true, .seed = 123});
  DataLoader b(x, y, {.batch_size = 8, .shuffle = true, .seed = 123});
  DataLoader c(x, y, {.batch_size = 8, .shuffle = true, .seed = 124});
  REQUIRE(run_epoch(a, 0) == run_epoch(b, 0));
  REQUIRE(run_epoch(a, 3) == run_epoch(b, 3));
  REQUIRE(a.indices(0) != a.indices(1));
  REQUIRE(a.indices(1) != a.indices(2));
  REQUIRE(a.indices(0) != c.indices(0));
  REQUIRE(a.indices(0) != range(50));
  // Pinned: the order must not change with the compiler or library, since runs
  // and ranks rely on it. (mt19937_64 and the draw in sampler.cpp are portable.)
  REQUIRE(shuffled_indices(10, 0, 0) == shuffled_indices(10, 0, 0));
  REQUIRE(sorted(shuffled_indices(1000, 99, 4)) == range(1000));
  REQUIRE(shuffled_indices(0, 1, 1).empty());
  REQUIRE(shuffled_indices(1, 1, 1) == std::vector<int64_t>{0});
}

TEST_CASE("DataLoader with workers gives the batches of the calling thread", "[data][dataloader][workers]") {
  auto [x, y] = numbered(103);
  for (bool shuffle : {false, true})
    for (bool drop_last : {false, true}) {
      DataLoader inline_loader(x, y, {.batch_size = 8, .shuffle = shuffle, .seed = 5, .drop_last = drop_last});
      for (int workers : {1, 2, 3}) {
        DataLoader threaded(x, y,
                            {.batch_size = 8, .shuffle = shuffle, .seed = 5, .drop_last = drop_last,
                             .num_workers = workers, .prefetch_factor = 1});
        for (int64_t e : {0, 1}) REQUIRE(run_epoch(threaded, e) == run_epoch(inline_loader, e));
      }
    }
}

TEST_CASE("DataLoader keeps batches in order when workers finish out of order", "[data][dataloader][workers]") {
  // Even batches take longer, so the worker with odd batches runs ahead as far as
  // the window lets it.
  auto [x, y] = numbered(40);
  std::atomic<int> made{0};
  DataLoader loader(x, y,
                    {.batch_size = 2, .num_workers = 2, .prefetch_factor = 2, .transform = [&](Batch& b) {
                       if (b.targets.to_vector<int64_t>()[0] % 4 == 0)
                         std::this_thread::sleep_for(std::chrono::milliseconds(2));
                       ++made;
                     }});
  REQUIRE(flat(run_epoch(loader, 0)) == range(40));
  REQUIRE(made == 20);
}

TEST_CASE("DataLoader transform runs on every batch before the loop sees it", "[data][dataloader]") {
  auto [x, y] = numbered(12);
  for (int workers : {0, 2}) {
    DataLoader loader(x, y, {.batch_size = 5, .num_workers = workers, .transform = [](Batch& b) {
                               b.inputs = b.inputs * 2;
                             }});
    for (Batch& b : loader.epoch(0)) {
      const auto ids = b.targets.to_vector<int64_t>();
      REQUIRE(b.inputs.to_vector<float>()[0] == static_cast<float>(ids[0] * 12));
    }
  }
}

TEST_CASE("DataLoader stops its workers when an epoch is left early", "[data][dataloader][workers]") {
  auto [x, y] = numbered(1000);
  DataLoader loader(x, y, {.batch_size = 4, .shuffle = true, .num_workers = 3, .prefetch_factor = 2});
  const int before = thread_count();
  for (int round = 0; round < 20; ++round) {
    int seen = 0;
    for (Batch& b : loader.epoch(round)) {
      REQUIRE(b.inputs.size(0) == 4);
      if (++seen == 3) break;
    }
    REQUIRE(seen == 3);
  }
  {
    // Started and dropped without reading, and never started at all.
    auto epoch = loader.epoch(0);
    auto it = epoch.begin();
    REQUIRE(it->targets.size(0) == 4);
    auto unused = loader.epoch(1);
  }
  REQUIRE(thread_count() == before);
  // A loader is reusable after an early exit: the next epoch is whole.
  REQUIRE(sorted(flat(run_epoch(loader, 7))) == range(1000));
  REQUIRE(thread_count() == before);
}

TEST_CASE("an exception in a worker reaches the loop at its batch", "[data][dataloader][workers]") {
  auto [x, y] = numbered(40);
  // Batch 5 (samples 20..23) fails; with 3 workers it is worker 5 % 3's.
  const std::pair<int, std::string> cases[] = {{0, "bad sample 20"},
                                               {1, "DataLoader worker 0 failed on batch 5: bad sample 20"},
                                               {3, "DataLoader worker 2 failed on batch 5: bad sample 20"}};
  for (const auto& [workers, message] : cases) {
    DataLoader loader(x, y, {.batch_size = 4, .num_workers = workers, .transform = [](Batch& b) {
                               if (b.targets.to_vector<int64_t>()[0] == 20) throw std::runtime_error("bad sample 20");
                             }});
    const int before = thread_count();
    std::vector<int64_t> seen;
    auto read_all = [&] {
      for (Batch& b : loader.epoch(0)) seen.push_back(b.targets.to_vector<int64_t>()[0]);
    };
    REQUIRE_THROWS_MATCHES(read_all(), std::runtime_error, Message(message));
    // Every batch before the failing one arrived, in order; none after it.
    REQUIRE(seen == std::vector<int64_t>{0, 4, 8, 12, 16});
    REQUIRE(thread_count() == before);
  }
}

TEST_CASE("a worker's exception keeps its Ember class and nests the original", "[data][dataloader][workers][errors]") {
  auto [x, y] = numbered(12);
  DataLoader loader(x, y, {.batch_size = 2, .num_workers = 2, .transform = [](Batch& b) {
                             if (b.targets.to_vector<int64_t>()[0] == 6) throw ShapeError("rows of 3 expected");
                           }});
  auto read_all = [&] {
    for (Batch& b : loader.epoch(0)) (void)b;
  };
  EXPECT_ERROR(read_all(), ShapeError, "DataLoader worker 1 failed on batch 3: rows of 3 expected");
  try {
    read_all();
    FAIL("no exception");
  } catch (const ShapeError& e) {
    REQUIRE_THROWS_MATCHES(std::rethrow_if_nested(e), ShapeError, Message("rows of 3 expected"));
  }
  // A resumed epoch counts batches from the epoch's start, not from where it resumed.
  auto read_from_2 = [&] {
    for (Batch& b : loader.epoch(0, 2)) (void)b;
  };
  EXPECT_ERROR(read_from_2(), ShapeError, "DataLoader worker 1 failed on batch 3: rows of 3 expected");
  // Something that is not a std::exception still arrives, as an ember::Error.
  DataLoader odd(x, y, {.batch_size = 4, .num_workers = 1, .transform = [](Batch&) { throw 42; }});
  auto read_odd = [&] {
    for (Batch& b : odd.epoch(0)) (void)b;
  };
  EXPECT_ERROR(read_odd(), Error, "DataLoader worker 0 failed on batch 0: an exception not derived from std::exception");
}

TEST_CASE("an epoch resumed at a batch gives the rest of the same order", "[data][dataloader][workers]") {
  auto [x, y] = numbered(23);
  for (int workers : {0, 1, 3}) {
    DataLoader loader(x, y, {.batch_size = 4, .shuffle = true, .seed = 11, .num_workers = workers});
    const auto whole = run_epoch(loader, 2);
    REQUIRE(whole.size() == 6);
    for (int64_t start : {0, 1, 5, 6}) {
      auto epoch = loader.epoch(2, start);
      std::vector<std::vector<int64_t>> rest;
      std::vector<int64_t> positions;
      for (auto it = epoch.begin(); it != epoch.end(); ++it) {
        positions.push_back(epoch.batch_index());
        rest.push_back(it->targets.to_vector<int64_t>());
      }
      REQUIRE(rest == std::vector<std::vector<int64_t>>(whole.begin() + start, whole.end()));
      std::vector<int64_t> want(static_cast<size_t>(6 - start));
      std::iota(want.begin(), want.end(), start);
      REQUIRE(positions == want);
      REQUIRE(epoch.batch_index() == 6);
    }
  }
  DataLoader loader(x, y, {.batch_size = 4});
  EXPECT_ERROR(loader.epoch(0, 7), ValueError, "DataLoader: start_batch must be in [0, 6], got 7");
  EXPECT_ERROR(loader.epoch(0, -1), ValueError, "DataLoader: start_batch must be in [0, 6], got -1");
}

TEST_CASE("an exception ends its epoch; iterating on stays at the end", "[data][dataloader][workers]") {
  auto [x, y] = numbered(8);
  DataLoader loader(x, y, {.batch_size = 2, .num_workers = 2, .transform = [](Batch& b) {
                             if (b.targets.to_vector<int64_t>()[0] == 2) throw ValueError("nope");
                           }});
  auto epoch = loader.epoch(0);
  auto it = epoch.begin();
  REQUIRE(it->targets.to_vector<int64_t>()[0] == 0);
  REQUIRE_THROWS_MATCHES(++it, ValueError, Message("DataLoader worker 1 failed on batch 1: nope"));
  REQUIRE(it == epoch.end());
  ++it;
  REQUIRE(it == epoch.end());
}

TEST_CASE("DataLoader shards: ranks together cover the data, padded like DistributedSampler", "[data][dataloader]") {
  auto [x, y] = numbered(11);
  for (bool shuffle : {false, true}) {
    DataLoader r0(x, y, {.batch_size = 2, .shuffle = shuffle, .seed = 3, .num_replicas = 2, .rank = 0});
    DataLoader r1(x, y, {.batch_size = 2, .shuffle = shuffle, .seed = 3, .prefetch_factor = 1, .num_replicas = 2, .rank = 1});
    DataLoader r1w(x, y,
                   {.batch_size = 2, .shuffle = shuffle, .seed = 3, .num_workers = 2, .num_replicas = 2, .rank = 1});
    REQUIRE(r0.num_samples() == 6);
    REQUIRE(r0.size() == 3);
    for (int64_t e : {0, 1}) {
      const auto a = flat(run_epoch(r0, e)), b = flat(run_epoch(r1, e));
      REQUIRE(flat(run_epoch(r1w, e)) == b);
      REQUIRE(a.size() == 6);
      REQUIRE(b.size() == 6);
      std::vector<int64_t> both = a;
      both.insert(both.end(), b.begin(), b.end());
      REQUIRE(std::set<int64_t>(both.begin(), both.end()).size() == 11);  // all covered, one twice
      // Interleaved, the two ranks give back the epoch's order with its first sample repeated.
      std::vector<int64_t> order = DataLoader(x, y, {.shuffle = shuffle, .seed = 3}).indices(e);
      for (size_t k = 0; k < 6; ++k) {
        REQUIRE(a[k] == order[(2 * k) % 11]);
        REQUIRE(b[k] == order[(2 * k + 1) % 11]);
      }
    }
  }
  // DistributedSampler's arithmetic: 10 samples on 4 ranks is 3 each, the padding wrapping around.
  REQUIRE(shard_indices(range(10), 4, 0) == std::vector<int64_t>{0, 4, 8});
  REQUIRE(shard_indices(range(10), 4, 3) == std::vector<int64_t>{3, 7, 1});
  REQUIRE(shard_indices(range(2), 5, 4) == std::vector<int64_t>{0});
  REQUIRE(shard_indices({}, 3, 1).empty());
}

TEST_CASE("DataLoader argument errors", "[data][dataloader][errors]") {
  auto [x, y] = numbered(6);
  EXPECT_ERROR(DataLoader(x.transpose(1, 2), y), ValueError, "DataLoader: inputs must be contiguous");
  EXPECT_ERROR(DataLoader(x, zeros({6, 2}).t()), ValueError, "DataLoader: targets must be contiguous");
  EXPECT_ERROR(DataLoader(zeros({6}, kMeta), y), ValueError, "DataLoader: inputs must be a CPU tensor, got device meta");
  EXPECT_ERROR(DataLoader(x, zeros({}, kInt64)), ValueError,
               "DataLoader: targets must have at least one dim (the sample dim)");
  EXPECT_ERROR(DataLoader(x, arange(5)), ValueError, "DataLoader: inputs has 6 samples but targets has 5");
  EXPECT_ERROR(DataLoader(x, y, {.batch_size = 0}), ValueError, "DataLoader: batch_size must be positive, got 0");
  EXPECT_ERROR(DataLoader(x, y, {.num_workers = -1}), ValueError, "DataLoader: num_workers must be non-negative, got -1");
  EXPECT_ERROR(DataLoader(x, y, {.prefetch_factor = 0}), ValueError, "DataLoader: prefetch_factor must be positive, got 0");
  EXPECT_ERROR(DataLoader(x, y, {.num_replicas = 0}), ValueError, "DataLoader: num_replicas must be positive, got 0");
  EXPECT_ERROR(DataLoader(x, y, {.num_replicas = 2, .rank = 2}), ValueError, "DataLoader: rank must be in [0, 1], got 2");
  EXPECT_ERROR(DataLoader(x, y, {.num_replicas = 2, .rank = -1}), ValueError,
               "DataLoader: rank must be in [0, 1], got -1");
  EXPECT_ERROR(DataLoader(Tensor(), y), ValueError, "the tensor is undefined (default-constructed)");
  // A contiguous slice of a bigger tensor is fine: rows start at its offset.
  DataLoader sliced(x.narrow(0, 2, 3), y.narrow(0, 2, 3), {.batch_size = 3});
  REQUIRE(flat(run_epoch(sliced, 0)) == std::vector<int64_t>{2, 3, 4});
}
