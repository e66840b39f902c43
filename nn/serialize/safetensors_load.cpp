// load_safetensors and read_safetensors_metadata: the file's size bounds the header
// length before the header is read, the header is validated whole against the size
// of the data buffer, and only then is each tensor's byte range read into a fresh
// tensor, so no read depends on a number that was not checked.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "nn/serialize/safetensors.h"
#include "nn/serialize/safetensors_header.h"
#include "tensor/ops.h"

namespace ember::serialize {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw FormatError(path + ": " + what); }

// A read-only file descriptor with its size, closed on every exit path.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    // O_NONBLOCK so that opening a FIFO by mistake returns at once; it is refused
    // below as not a regular file, and changes nothing for regular files.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) bad(path, std::string("cannot open for reading: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      bad(path, "not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }

  // Exactly n bytes at `offset`; a file that shrank since fstat raises rather than
  // leaving part of the buffer unwritten.
  void read_at(void* dst, uint64_t n, uint64_t offset) const {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) bad(path_, std::string("read failed: ") + std::strerror(errno));
      if (r == 0) bad(path_, "read failed: the file ended early (was it changed while being read?)");
      p += r;
      n -= static_cast<uint64_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Reads and validates the length field and the header; `data_start` receives the
// file offset of the data buffer.
SafetensorsHeader read_header(const std::string& path, const InputFile& file, uint64_t& data_start) {
  if (file.size() < 8)
    bad(path, "file holds " + std::to_string(file.size()) + " bytes, too few for the 8-byte header length");
  unsigned char raw[8];
  file.read_at(raw, 8, 0);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(raw[i]) << (8 * i);
  if (n > kMaxHeaderBytes)
    bad(path, "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxHeaderBytes) + "-byte limit");
  if (n > file.size() - 8)
    bad(path, "header length " + std::to_string(n) + " exceeds the " + std::to_string(file.size() - 8) +
                  " bytes after the length field");
  std::string text(n, '\0');
  file.read_at(text.data(), n, 8);
  data_start = 8 + n;
  return parse_safetensors_header(path, text, file.size() - data_start);
}

// Bytes other than 0 and 1 are not valid C++ bools; reading one would be undefined.
void check_bools(const std::string& path, const TensorEntry& e, const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] > 1)
      bad(path, "tensor '" + e.name + "': BOOL element " + std::to_string(i) + " holds byte " + std::to_string(p[i]) +
                    " (expected 0 or 1)");
}

}  // namespace

NamedTensors load_safetensors(const std::string& path) {
  std::map<std::string, std::string> unused;
  return load_safetensors(path, unused);
}

NamedTensors load_safetensors(const std::string& path, std::map<std::string, std::string>& metadata) {
  InputFile file(path);
  uint64_t data_start = 0;
  const SafetensorsHeader header = read_header(path, file, data_start);
  metadata = header.metadata;
  NamedTensors out;
  out.reserve(header.tensors.size());
  for (const TensorEntry& e : header.tensors) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) file.read_at(t.data_ptr(), e.end - e.begin, data_start + e.begin);
    if (e.dtype == DType::Bool) check_bools(path, e, t);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  InputFile file(path);
  uint64_t data_start = 0;
  return read_header(path, file, data_start).metadata;
}

}  // namespace ember::serialize
