// ProgressBar (see progress.h).
#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace train {

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), tty_(isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(double loss, int64_t samples) {
  ++done_;
  samples_ += samples;
  loss_sum_ += loss;
  if (!enabled_) return;
  if (tty_ || done_ >= next_report_) {
    draw(false);
    next_report_ = done_ + std::max<int64_t>(1, total_ / 10);
  }
}

void ProgressBar::finish() {
  if (enabled_) draw(true);
}

void ProgressBar::draw(bool final_line) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(samples_) / secs : 0;
  const int64_t timed = done_ - skipped_;  // batches done in this process
  const double left = timed > 0 ? secs / static_cast<double>(timed) * static_cast<double>(total_ - done_) : 0;
  constexpr int width = 30;
  const int filled = total_ > 0 ? static_cast<int>(width * done_ / total_) : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "%s%s [%s] %lld/%lld loss %.4f %.0f samples/s %s %.1fs%s", tty_ ? "\r" : "", label_.c_str(),
               bar.c_str(), static_cast<long long>(done_), static_cast<long long>(total_),
               timed ? loss_sum_ / static_cast<double>(timed) : 0.0, rate, final_line ? "took" : "left",
               final_line ? secs : left, (final_line || !tty_) ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace train
