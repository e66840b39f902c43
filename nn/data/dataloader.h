// DataLoader: batches of a dataset held as two tensors (inputs [N, ...] and
// targets [N, ...], PyTorch's TensorDataset), in a shuffled or fixed order, made on
// the calling thread or ahead of time by background worker threads.
//
//   DataLoader loader(images, labels, {.batch_size = 64, .shuffle = true, .num_workers = 2});
//   for (int64_t e = 0; e < epochs; ++e)
//     for (Batch& batch : loader.epoch(e)) train_step(batch.inputs, batch.targets);
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::data {

struct Batch {
  Tensor inputs;   // [b, ...inputs' sample shape], a new contiguous tensor
  Tensor targets;  // [b, ...targets' sample shape]
};

// What one pass over the data shares with its worker threads (dataloader.cpp).
struct EpochState;

// Defined at namespace scope so that `DataLoader(x, y, {.batch_size = 32})` works.
struct DataLoaderOptions {
  int64_t batch_size = 1;
  // The order of epoch e is shuffled_indices(N, seed, e): a function of (seed, e).
  bool shuffle = false;
  uint64_t seed = 0;
  // Drop the last batch when it would be smaller than batch_size.
  bool drop_last = false;
  // 0: batches are made on the thread that iterates. N > 0: N threads make them
  // ahead, worker w making batches w, w + N, ...; they arrive in order all the same.
  int num_workers = 0;
  // With workers, at most num_workers * prefetch_factor batches wait made but unread.
  int prefetch_factor = 2;
  // Data parallelism: this process is rank `rank` of `num_replicas` and sees only
  // shard_indices(order, num_replicas, rank); see nn/data/sampler.h.
  int64_t num_replicas = 1;
  int64_t rank = 0;
  // Runs on each batch on the thread that made it (a worker when num_workers > 0),
  // for augmentation or conversion. An exception it throws reaches the loop: as it
  // was without workers; from a worker, as the same Ember error class (ember::Error
  // for other exceptions) with the message "DataLoader worker {w} failed on batch
  // {b}: {what}" and the original nested (std::rethrow_if_nested gets it back).
  std::function<void(Batch&)> transform = nullptr;
};

class DataLoader {
 public:
  using Options = DataLoaderOptions;
  class Epoch;

  // inputs and targets: contiguous CPU tensors of at least one dim, with equal
  // sizes in dim 0 (the sample dim). Raises ValueError otherwise, or for options
  // out of range. Batches copy rows: later writes to inputs are seen by later batches.
  DataLoader(Tensor inputs, Tensor targets, Options options = {});

  // Batches per epoch.
  int64_t size() const;
  // Samples this rank visits per epoch (ceil(N / num_replicas)).
  int64_t num_samples() const;
  // The sample indices epoch `epoch` visits, in order.
  std::vector<int64_t> indices(int64_t epoch) const;
  // One pass over the data, for a range-for. Workers, if any, start at begin() and
  // are stopped and joined when the Epoch is destroyed, even after a break.
  // start_batch > 0 resumes an epoch (from a checkpoint): the pass begins at that
  // batch of the same order, the batches before it are neither made nor read.
  // ValueError unless 0 <= start_batch <= size().
  Epoch epoch(int64_t epoch, int64_t start_batch = 0) const;

  const Options& options() const { return options_; }

 private:
  Tensor inputs_, targets_;
  Options options_;
};

class DataLoader::Epoch {
 public:
  class iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const;

   private:
    friend class Epoch;
    explicit iterator(EpochState* state) : state_(state) {}
    EpochState* state_ = nullptr;
  };

  Epoch(Epoch&&) noexcept;
  Epoch& operator=(Epoch&&) noexcept;
  ~Epoch();

  // Single pass: begin() starts the epoch; a second call continues where it is.
  iterator begin();
  std::default_sentinel_t end() const { return {}; }
  // Batches in the whole epoch, including any skipped by start_batch.
  int64_t size() const;
  // The index in the epoch of the batch the loop holds now (start_batch for the
  // first one); size() once the epoch is over.
  int64_t batch_index() const;

 private:
  friend class DataLoader;
  explicit Epoch(std::unique_ptr<EpochState> state);
  std::unique_ptr<EpochState> state_;
};

}  // namespace ember::data

EMBER_API_END
