// SummaryWriter: each scalar becomes an Event record (event_proto.h) in TFRecord
// framing (tfrecord.h), appended to the event file and flushed.
#include "nn/serialize/summary_writer.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "kernels/base/error.h"
#include "nn/serialize/event_proto.h"
#include "nn/serialize/tfrecord.h"

namespace ember::serialize {
namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Two writers made in the same second by one process still get distinct files.
std::string event_file_name(double wall_time) {
  static std::atomic<uint64_t> counter{0};
  return "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." + hostname() + "." +
         std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace

SummaryWriter::SummaryWriter(const std::string& logdir) : logdir_(logdir) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) throw FormatError(logdir + ": cannot create the log directory: " + ec.message());
  const double t = now_seconds();
  path_ = (std::filesystem::path(logdir) / event_file_name(t)).string();
  // "x": never append to or truncate a file that already exists.
  file_ = std::fopen(path_.c_str(), "wbx");
  if (!file_) throw FormatError(path_ + ": cannot create the event file: " + std::strerror(errno));
  try {
    write_record(encode_file_version_event(t, "brain.Event:2"));
  } catch (...) {
    std::fclose(file_);
    std::remove(path_.c_str());  // a file without its version record is not an event file
    throw;
  }
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (...) {
  }
}

void SummaryWriter::write_record(const std::string& event) {
  const std::string record = tfrecord_frame(event);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw FormatError(path_ + ": write failed: " + std::strerror(errno));
}

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t step, std::optional<double> wall_time) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) throw ValueError("SummaryWriter: add_scalar called after close()");
  write_record(encode_scalar_event(wall_time.value_or(now_seconds()), step, tag, static_cast<float>(value)));
}

void SummaryWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ && std::fflush(file_) != 0) throw FormatError(path_ + ": write failed: " + std::strerror(errno));
}

void SummaryWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw FormatError(path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace ember::serialize
