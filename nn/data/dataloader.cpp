// DataLoader: the batch plan of an epoch, the row gather that makes a batch, and
// the worker pool. Workers own batches round-robin and put them in a window of
// num_workers * prefetch_factor batches past the one the loop reads next; the loop
// takes them by number, so they arrive in order however the workers race.
#include "nn/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "kernels/cpu/take.h"
#include "nn/data/sampler.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::data {
namespace {

void check_source(const Tensor& t, const char* which) {
  if (!t.device().is_cpu())
    throw ValueError(msg("DataLoader: ", which, " must be a CPU tensor, got device ", t.device()));
  if (!t.is_contiguous()) throw ValueError(msg("DataLoader: ", which, " must be contiguous"));
  if (t.dim() == 0) throw ValueError(msg("DataLoader: ", which, " must have at least one dim (the sample dim)"));
}

// Copies rows `index[0..count)` of `src` (rows along dim 0) into a new tensor with
// cpu::take, which prefetches each scattered row ahead of its copy. `team`: on the
// loop's thread (no workers) the copy splits the batch in equal parts over the
// thread team, so the worker threads do not wait through it and each thread finds
// in its own cache most of the images its share of the first convolution reads (all
// of them while the convolution's split, which follows the threads' speeds, is
// even). A worker thread copies alone.
Tensor gather_rows(const Tensor& src, const int64_t* index, int64_t count, bool team) {
  Shape shape = src.shape();
  shape[0] = count;
  Tensor out = empty(shape, src.dtype());
  int64_t row_elems = 1;
  for (size_t d = 1; d < shape.size(); ++d) row_elems *= shape[d];
  if (row_elems == 0 || count == 0) return out;
  cpu::take(src.element_size(), 1, src.size(0), row_elems, index, count, src.data_ptr(), out.data_ptr(), team);
  return out;
}

// A worker's exception, raised on the loop's thread: the same Ember class with the
// batch named, the original nested inside.
[[noreturn]] void rethrow_from_worker(std::exception_ptr error, int64_t worker, int64_t batch) {
  const std::string where = msg("DataLoader worker ", worker, " failed on batch ", batch, ": ");
  try {
    std::rethrow_exception(error);
  }
#define EMBER_RETHROW_AS(Class) \
  catch (const Class& e) {      \
    std::throw_with_nested(Class(where + e.what())); \
  }
  EMBER_RETHROW_AS(DeviceError)
  EMBER_RETHROW_AS(DTypeError)
  EMBER_RETHROW_AS(ShapeError)
  EMBER_RETHROW_AS(IndexError)
  EMBER_RETHROW_AS(ValueError)
  EMBER_RETHROW_AS(NotImplementedError)
  EMBER_RETHROW_AS(OutOfMemoryError)
  EMBER_RETHROW_AS(CudaError)
  EMBER_RETHROW_AS(FormatError)
  EMBER_RETHROW_AS(DistError)
  EMBER_RETHROW_AS(Error)
#undef EMBER_RETHROW_AS
  catch (const std::exception& e) {
    std::throw_with_nested(Error(where + e.what()));
  } catch (...) {
    std::throw_with_nested(Error(where + "an exception not derived from std::exception"));
  }
}

}  // namespace

struct EpochState {
  Tensor inputs, targets;
  DataLoaderOptions options;
  std::vector<int64_t> order;
  int64_t num_batches = 0;
  int64_t start_batch = 0;  // the first batch this pass makes (a resumed epoch skips the others)

  // The loop's side.
  bool started = false, done = false;
  int64_t next = 0;  // the batch the loop takes next
  int64_t current_index = 0;  // the batch `current` is (num_batches once done)
  Batch current;

  // Shared with workers, under `mutex`. A slot carries a batch or what making it threw.
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable made_cv, space_cv;
  std::map<int64_t, Slot> made;
  int64_t taken = 0;  // batches the loop has taken; workers stay within the window past it
  bool stop = false;
  std::vector<std::thread> workers;

  ~EpochState() { stop_workers(); }

  // on_loop: called on the loop's thread (no workers), where the copy may use the team.
  Batch make_batch(int64_t b, bool on_loop) const {
    const int64_t first = b * options.batch_size;
    const int64_t count = std::min<int64_t>(options.batch_size, static_cast<int64_t>(order.size()) - first);
    Batch batch{gather_rows(inputs, order.data() + first, count, on_loop),
                gather_rows(targets, order.data() + first, count, on_loop)};
    if (options.transform) options.transform(batch);
    return batch;
  }

  void start_workers() {
    const int64_t n = std::min<int64_t>(options.num_workers, num_batches - start_batch);
    try {
      for (int64_t w = 0; w < n; ++w) workers.emplace_back([this, w, n] { work(w, n); });
    } catch (...) {
      stop_workers();
      throw;
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    space_cv.notify_all();
    for (std::thread& t : workers) t.join();
    workers.clear();
  }

  void work(int64_t w, int64_t stride) {
    const int64_t window = stride * options.prefetch_factor;
    for (int64_t b = start_batch + w; b < num_batches; b += stride) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        space_cv.wait(lock, [&] { return stop || b < taken + window; });
        if (stop) return;
      }
      Slot slot;
      try {
        slot.batch = make_batch(b, false);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = slot.error != nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex);
        made.emplace(b, std::move(slot));
      }
      made_cv.notify_all();
      // The loop rethrows when it reaches batch b; nothing after it will be read.
      if (failed) return;
    }
  }

  Batch take(int64_t b) {
    if (workers.empty()) return make_batch(b, true);
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      // The owner of b always gets to make it: its earlier batches are all below b,
      // hence taken or made, and b lies inside the window.
      made_cv.wait(lock, [&] { return made.count(b) > 0; });
      auto it = made.find(b);
      slot = std::move(it->second);
      made.erase(it);
      taken = b + 1;
    }
    space_cv.notify_all();
    // Worker w makes batches start_batch + w, + w + num_workers, ...
    if (slot.error) rethrow_from_worker(slot.error, (b - start_batch) % static_cast<int64_t>(workers.size()), b);
    return std::move(slot.batch);
  }

  void advance() {
    if (done) return;
    current = Batch{};
    if (next >= num_batches) {
      done = true;
      current_index = num_batches;
      return;
    }
    try {
      current_index = next;
      current = take(next++);
    } catch (...) {
      // The epoch ends with the error; the workers stop now rather than at destruction.
      done = true;
      current_index = num_batches;
      stop_workers();
      throw;
    }
  }
};

DataLoader::DataLoader(Tensor inputs, Tensor targets, Options options)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), options_(std::move(options)) {
  check_source(inputs_, "inputs");
  check_source(targets_, "targets");
  if (inputs_.size(0) != targets_.size(0))
    throw ValueError(msg("DataLoader: inputs has ", inputs_.size(0), " samples but targets has ", targets_.size(0)));
  const Options& o = options_;
  if (o.batch_size < 1) throw ValueError(msg("DataLoader: batch_size must be positive, got ", o.batch_size));
  if (o.num_workers < 0) throw ValueError(msg("DataLoader: num_workers must be non-negative, got ", o.num_workers));
  if (o.prefetch_factor < 1)
    throw ValueError(msg("DataLoader: prefetch_factor must be positive, got ", o.prefetch_factor));
  if (o.num_replicas < 1) throw ValueError(msg("DataLoader: num_replicas must be positive, got ", o.num_replicas));
  if (o.rank < 0 || o.rank >= o.num_replicas)
    throw ValueError(msg("DataLoader: rank must be in [0, ", o.num_replicas - 1, "], got ", o.rank));
}

int64_t DataLoader::num_samples() const {
  const int64_t n = inputs_.size(0);
  return (n + options_.num_replicas - 1) / options_.num_replicas;
}

int64_t DataLoader::size() const {
  const int64_t n = num_samples(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::indices(int64_t epoch) const {
  const int64_t n = inputs_.size(0);
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = shuffled_indices(n, options_.seed, epoch);
  } else {
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (options_.num_replicas > 1) order = shard_indices(order, options_.num_replicas, options_.rank);
  return order;
}

DataLoader::Epoch DataLoader::epoch(int64_t epoch, int64_t start_batch) const {
  if (start_batch < 0 || start_batch > size())
    throw ValueError(msg("DataLoader: start_batch must be in [0, ", size(), "], got ", start_batch));
  auto state = std::make_unique<EpochState>();
  state->inputs = inputs_;
  state->targets = targets_;
  state->options = options_;
  state->order = indices(epoch);
  state->num_batches = size();
  state->start_batch = state->next = state->taken = state->current_index = start_batch;
  return Epoch(std::move(state));
}

DataLoader::Epoch::Epoch(std::unique_ptr<EpochState> state) : state_(std::move(state)) {}
DataLoader::Epoch::Epoch(Epoch&&) noexcept = default;
DataLoader::Epoch& DataLoader::Epoch::operator=(Epoch&&) noexcept = default;
DataLoader::Epoch::~Epoch() = default;

int64_t DataLoader::Epoch::size() const { return state_->num_batches; }
int64_t DataLoader::Epoch::batch_index() const { return state_->current_index; }

DataLoader::Epoch::iterator DataLoader::Epoch::begin() {
  EpochState& s = *state_;
  if (!s.started) {
    s.started = true;
    if (s.options.num_workers > 0) {
      try {
        s.start_workers();
      } catch (...) {
        s.done = true;  // no threads to be had: the epoch is over before it began
        throw;
      }
    }
    s.advance();
  }
  return iterator(&s);
}

Batch& DataLoader::Epoch::iterator::operator*() const { return state_->current; }

DataLoader::Epoch::iterator& DataLoader::Epoch::iterator::operator++() {
  state_->advance();
  return *this;
}

bool DataLoader::Epoch::iterator::operator==(std::default_sentinel_t) const { return state_->done; }

}  // namespace ember::data
