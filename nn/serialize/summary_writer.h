// SummaryWriter: logs scalars (losses, accuracies, learning rates) to a TensorBoard
// event file, as torch.utils.tensorboard.SummaryWriter does, so that
// `tensorboard --logdir DIR` plots Ember training runs.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

EMBER_API_BEGIN

namespace ember::serialize {

class SummaryWriter {
 public:
  // Creates `logdir` (and its parents) and a new event file in it named
  // events.out.tfevents.<unix seconds>.<hostname>.<pid>.<n>, as PyTorch names them;
  // the file opens with the "brain.Event:2" version record. FormatError when the
  // folder or file cannot be created.
  explicit SummaryWriter(const std::string& logdir);
  // Closes the file; errors here are swallowed (a destructor cannot raise).
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One point of the curve `tag`. TensorBoard stores scalars as float32. The wall
  // time defaults to now (seconds since the Unix epoch). Each record is handed to
  // the OS at once, so a crashed run keeps every point logged before the crash.
  void add_scalar(const std::string& tag, double value, int64_t step,
                  std::optional<double> wall_time = std::nullopt);
  void flush();
  // Later add_scalar calls raise ValueError; flush() and close() become no-ops.
  void close();

  const std::string& logdir() const { return logdir_; }
  // The event file's full path.
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);

  std::string logdir_, path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;  // one writer may be shared by threads (a data loader, a trainer)
};

}  // namespace ember::serialize

EMBER_API_END
