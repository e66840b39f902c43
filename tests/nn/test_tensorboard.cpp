// TensorBoard event files: what SummaryWriter writes is read back by a reader
// written from the format description alone (tests/support/event_reader.h: its
// own bitwise CRC-32C, TFRecord framing and protobuf decoding), and the library's
// CRC-32C is held to published check values, one from a real TensorFlow event file.
#include <sys/resource.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/serialize/crc32c.h"
#include "nn/serialize/summary_writer.h"
#include "nn/serialize/tfrecord.h"
#include "support/event_reader.h"

using namespace ember;
using namespace ember::serialize;
using Catch::Matchers::Message;
namespace fs = std::filesystem;

namespace {

using namespace event_reader;
using Scalar_ = event_reader::Scalar;

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("ember_test_tensorboard." + std::to_string(::getpid()) + "." + std::to_string(n++));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Lowers a resource limit for one scope, so that the OS refuses a write or an open
// the way a full disk or an exhausted descriptor table would.
struct LimitGuard {
  int resource;
  rlimit saved{};
  LimitGuard(int r, rlim_t soft) : resource(r) {
    REQUIRE(getrlimit(resource, &saved) == 0);
    rlimit lowered = saved;
    lowered.rlim_cur = soft;
    REQUIRE(setrlimit(resource, &lowered) == 0);
  }
  ~LimitGuard() { setrlimit(resource, &saved); }
};

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE("crc32c matches published check values, table and bitwise alike", "[tensorboard][crc32c]") {
  const std::string digits = "123456789";
  REQUIRE(crc32c(digits.data(), digits.size()) == 0xE3069283u);
  REQUIRE(bitwise_crc32c(digits) == 0xE3069283u);
  REQUIRE(crc32c("", 0) == 0u);
  // RFC 3720 (iSCSI) section B.4.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) up[i] = static_cast<char>(i), down[i] = static_cast<char>(31 - i);
  const std::pair<std::string, uint32_t> rfc[] = {
      {zeros, 0x8A9136AAu}, {ones, 0x62A8AB43u}, {up, 0x46DD794Eu}, {down, 0x113FDB5Cu}};
  for (const auto& [bytes, expected] : rfc) {
    REQUIRE(crc32c(bytes.data(), bytes.size()) == expected);
    REQUIRE(bitwise_crc32c(bytes) == expected);
  }
  // Chaining continues a CRC across pieces.
  const std::string text = "The quick brown fox jumps over the lazy dog";
  REQUIRE(crc32c(text.data(), text.size()) == 0x22620404u);
  REQUIRE(crc32c(text.data() + 10, text.size() - 10, crc32c(text.data(), 10)) == 0x22620404u);
  // Every length and byte pattern up to 64 bytes: table against bitwise.
  std::string s;
  for (int n = 0; n < 64; ++n) {
    REQUIRE(crc32c(s.data(), s.size()) == bitwise_crc32c(s));
    s.push_back(static_cast<char>(n * 37 + 11));
  }
}

TEST_CASE("masked CRCs match TFRecord values from the field", "[tensorboard][crc32c]") {
  // Payload and checksum of a record in a real TensorFlow event file:
  // Event{file_version: "CRC test, one two"}, as quoted in TensorBoard's Rust reader.
  const std::string event = std::string("\x1a\x11") + "CRC test, one two";
  REQUIRE(mask_crc32c(crc32c(event.data(), event.size())) == 0x5794D08Au);
  REQUIRE(masked(bitwise_crc32c(event)) == 0x5794D08Au);
  const std::string other = "1234567890asdfghjkl";
  REQUIRE(mask_crc32c(crc32c(other.data(), other.size())) == 4134599430u);

  // The framed record: length, its masked CRC, payload, the payload's masked CRC.
  const std::string record = tfrecord_frame(event);
  REQUIRE(record.size() == 8 + 4 + event.size() + 4);
  REQUIRE(read_le(record, 0, 8) == event.size());
  REQUIRE(read_le(record, 8, 4) == masked(bitwise_crc32c(record.substr(0, 8))));
  REQUIRE(record.substr(12, event.size()) == event);
  REQUIRE(read_le(record, 12 + event.size(), 4) == 0x5794D08Au);
  REQUIRE(read_records(record) == std::vector<std::string>{event});
}

TEST_CASE("SummaryWriter writes scalars an independent reader reads back", "[tensorboard]") {
  TempDir dir;
  const std::string logdir = (dir.path / "runs" / "exp1").string();
  const double before = now();
  std::string path;
  const std::vector<Scalar_> logged = {
      {"loss", 0, 2.5f, 0},
      {"loss", 1, 1.25f, 0},
      {"accuracy", 1, 0.1f, 0},      // stored as float32: 0.1 rounds
      {"loss/train", 100, -3.75f, 0},
      {"lr", int64_t(1) << 40, 1e-8f, 0},  // a multi-byte varint
      {"neg", -1, 0.0f, 0},            // negative int64: a ten-byte varint
      {"ünï", 7, 65504.0f, 0},
  };
  {
    SummaryWriter w(logdir);
    path = w.path();
    REQUIRE(w.logdir() == logdir);
    REQUIRE(fs::is_directory(logdir));
    const std::string name = fs::path(path).filename().string();
    REQUIRE(name.rfind("events.out.tfevents.", 0) == 0);
    REQUIRE(fs::path(path).parent_path() == fs::path(logdir));
    for (const Scalar_& s : logged) w.add_scalar(s.tag, s.tag == "accuracy" ? 0.1 : s.value, s.step);
    // Each scalar is in the file already, before flush or close.
    REQUIRE(read_event_file(path).second.size() == logged.size());
    w.add_scalar("walltime", 1.0, 3, 1234567890.5);
    w.flush();
  }  // the destructor closes
  const double after = now();

  double wall = 0;
  const auto [version, scalars] = read_event_file(path, &wall);
  REQUIRE(version == "brain.Event:2");
  REQUIRE(wall >= std::floor(before));
  REQUIRE(wall <= after);
  REQUIRE(scalars.size() == logged.size() + 1);
  for (size_t i = 0; i < logged.size(); ++i) {
    INFO(i);
    CHECK(scalars[i].tag == logged[i].tag);
    CHECK(scalars[i].step == logged[i].step);
    CHECK(scalars[i].value == logged[i].value);
    CHECK(scalars[i].wall_time >= std::floor(before));
    CHECK(scalars[i].wall_time <= after);
  }
  CHECK(scalars.back().tag == "walltime");
  CHECK(scalars.back().wall_time == 1234567890.5);
}

TEST_CASE("the independent reader refuses a damaged event file", "[tensorboard]") {
  TempDir dir;
  std::string path;
  {
    SummaryWriter w(dir.path.string());
    path = w.path();
    w.add_scalar("loss", 0.5, 1);
    w.add_scalar("accuracy", 0.75, 2);
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  REQUIRE(parse_event_file(bytes).second.size() == 2);
  // Every single-bit change breaks a CRC or the framing; the reader says so with
  // FormatError (tests/fuzz/fuzz_event_reader.cpp feeds it hostile bytes).
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = static_cast<char>(changed[i] ^ 0x04);
    REQUIRE_THROWS_AS(parse_event_file(changed), FormatError);
  }
  REQUIRE_THROWS_MATCHES(parse_event_file(bytes.substr(0, bytes.size() - 1)), FormatError,
                         Message("event file: a record is cut short"));
  REQUIRE_THROWS_MATCHES(parse_event_file(""), FormatError, Message("event file: no records"));
}

TEST_CASE("SummaryWriter: two writers get two files; close is final", "[tensorboard][errors]") {
  TempDir dir;
  SummaryWriter a(dir.path.string()), b(dir.path.string());
  REQUIRE(a.path() != b.path());
  a.add_scalar("x", 1, 0);
  b.add_scalar("y", 2, 0);
  a.close();
  a.close();  // a second close does nothing
  a.flush();
  REQUIRE_THROWS_MATCHES(a.add_scalar("x", 1, 1), ValueError, Message("SummaryWriter: add_scalar called after close()"));
  b.close();
  REQUIRE(read_event_file(a.path()).second.size() == 1);
  REQUIRE(read_event_file(b.path()).second[0].tag == "y");
}

TEST_CASE("SummaryWriter: a log directory that cannot be created", "[tensorboard][errors]") {
  TempDir dir;
  fs::create_directories(dir.path);
  const std::string file = (dir.path / "plain_file").string();
  std::ofstream(file) << "x";
  const std::string logdir = file + "/runs";
  REQUIRE_THROWS_MATCHES(SummaryWriter(logdir), FormatError,
                         Message(logdir + ": cannot create the log directory: Not a directory"));
}

TEST_CASE("SummaryWriter: an event file that cannot be created or written", "[tensorboard][errors]") {
  TempDir dir;
  const std::string logdir = dir.path.string();
  std::exception_ptr raised;
  {
    // No file descriptor left. Only the constructor runs inside the limit: sanitizer
    // runtimes need descriptors of their own.
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    LimitGuard limit(RLIMIT_NOFILE, static_cast<rlim_t>(lowest_free));
    try {
      SummaryWriter w(logdir);
    } catch (...) {
      raised = std::current_exception();
    }
  }
  std::string error = "no exception";
  try {
    if (raised) std::rethrow_exception(raised);
  } catch (const FormatError& e) {
    error = e.what();
  } catch (...) {
    error = "another exception";
  }
  // The file name holds the time, host and pid; the rest of the message is fixed.
  const std::string head = logdir + "/events.out.tfevents.", tail = ": cannot create the event file: Too many open files";
  INFO(error);
  REQUIRE(error.rfind(head, 0) == 0);
  REQUIRE(error.size() > head.size() + tail.size());
  REQUIRE(error.compare(error.size() - tail.size(), tail.size(), tail) == 0);
  REQUIRE(fs::is_empty(logdir));

  SummaryWriter w(logdir);
  const auto size = fs::file_size(w.path());
  std::signal(SIGXFSZ, SIG_IGN);  // report EFBIG from write() instead of killing the process
  LimitGuard limit(RLIMIT_FSIZE, static_cast<rlim_t>(size));
  REQUIRE_THROWS_MATCHES(w.add_scalar("x", 1, 0), FormatError, Message(w.path() + ": write failed: File too large"));
}
