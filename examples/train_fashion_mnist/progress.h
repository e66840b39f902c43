// A one-line progress bar for an epoch: batches done, running loss, samples per
// second and time left, redrawn in place on a terminal and printed every tenth of
// the epoch otherwise (so logs stay short).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace train {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total_batches, bool enabled);
  // A resumed epoch: `batches` of it were done before (they count in the bar, not in
  // the running loss or the rate).
  void resume_at(int64_t batches) { done_ = skipped_ = batches; }
  // After each batch: its loss and how many samples it held.
  void update(double loss, int64_t samples);
  void finish();

 private:
  void draw(bool final_line);

  std::string label_;
  int64_t total_, done_ = 0, skipped_ = 0, samples_ = 0;
  double loss_sum_ = 0;
  bool enabled_, tty_;
  int64_t next_report_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace train
