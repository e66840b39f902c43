// AtomicFile on POSIX: open(O_EXCL) a unique temporary name, write, fsync,
// close, rename(2). Every failure removes the temporary file before raising.
#include "nn/serialize/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kernels/base/error.h"

namespace ember::serialize {
namespace {

std::string unique_temp_name(const std::string& path) {
  // pid keeps processes apart, the counter keeps threads of one process apart.
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw FormatError(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_(unique_temp_name(path_)) {
  // 0666 before the umask, as a plain fopen would give the final file.
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) fail(path_, "cannot create a temporary file beside it", errno);
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      discard();
      fail(path_, "write failed", err);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    fail(path_, "fsync failed", err);
  }
  const int fd = fd_;
  fd_ = -1;
  // close can report a deferred write error (NFS); the data is not safe without it.
  if (::close(fd) != 0) {
    const int err = errno;
    discard();
    fail(path_, "close failed", err);
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    discard();
    fail(path_, "cannot rename the temporary file into place", err);
  }
  committed_ = true;
  // Best effort: the file is complete either way; this only makes the new name durable.
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ember::serialize
