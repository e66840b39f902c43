// FileReader: plain files through stdio, gzip files through zlib's inflate (not
// gzread: its messages carry zlib's own "<fd:N>" prefix and it silently drops
// garbage after the compressed data, where we want every anomaly reported).
// A build without zlib (-Dzlib=disabled) reads plain files only and names the
// problem when it meets a gzip one.
#include "nn/data/file_reader.h"

#include "ember_config.h"

#if EMBER_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kernels/base/error.h"

namespace ember::data {

#if EMBER_HAVE_ZLIB
struct FileReader::Inflater {
  z_stream z{};
  unsigned char in[1 << 16];
  // True between two gzip members: gzip allows several concatenated members, and
  // the end of the file is only a clean end here.
  bool between_members = false;
  bool done = false;
  ~Inflater() { inflateEnd(&z); }
};
#else
struct FileReader::Inflater {};
#endif

FileReader::FileReader(const std::string& path) : path_(path) {
  file_.reset(std::fopen(path.c_str(), "rb"));
  if (!file_) throw FormatError(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2];
  const size_t got = read_raw(magic, 2);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
#if !EMBER_HAVE_ZLIB
    throw FormatError(path + ": gzip-compressed, and this build of Ember has no zlib; decompress it first (gunzip)");
#else
    inflater_ = std::make_unique<Inflater>();
    // 16 + MAX_WBITS: expect a gzip wrapper and check its CRC and length. It can
    // fail only for want of memory.
    if (inflateInit2(&inflater_->z, 16 + MAX_WBITS) != Z_OK)
      throw FormatError(path + ": cannot open: " + std::strerror(ENOMEM));
    std::memcpy(inflater_->in, magic, 2);
    inflater_->z.next_in = inflater_->in;
    inflater_->z.avail_in = 2;
#endif
  } else {
    // Not gzip: the bytes just peeked belong to the data, so read again from the start.
    if (got > 0 && std::fseek(file_.get(), 0, SEEK_SET) != 0)
      throw FormatError(path + ": cannot open: " + std::strerror(errno));
  }
}

FileReader::~FileReader() = default;

size_t FileReader::read(void* dst, size_t n) {
  if (!inflater_) return read_raw(dst, n);
  // zlib counts in 32 bits, so inflate at most 1 GiB per call.
  auto* out = static_cast<unsigned char*>(dst);
  size_t total = 0;
  while (total < n) {
    const size_t chunk = std::min<size_t>(n - total, size_t{1} << 30);
    const size_t got = inflate_some(out + total, chunk);
    total += got;
    if (got < chunk) break;
  }
  return total;
}

uint64_t FileReader::skip_to_end() {
  unsigned char buf[1 << 16];
  uint64_t total = 0;
  for (size_t got; (got = read(buf, sizeof buf)) > 0;) total += got;
  return total;
}

size_t FileReader::read_raw(void* dst, size_t n) {
  const size_t got = std::fread(dst, 1, n, file_.get());
  if (got < n && std::ferror(file_.get())) throw FormatError(path_ + ": read error: " + std::strerror(errno));
  return got;
}

#if EMBER_HAVE_ZLIB
size_t FileReader::inflate_some(void* dst, size_t n) {
  Inflater& s = *inflater_;
  z_stream& z = s.z;
  z.next_out = static_cast<unsigned char*>(dst);
  z.avail_out = static_cast<uInt>(n);
  const uInt asked = z.avail_out;
  while (z.avail_out > 0 && !s.done) {
    if (z.avail_in == 0) {
      const size_t got = read_raw(s.in, sizeof s.in);
      if (got == 0) {
        if (s.between_members) {
          s.done = true;
          break;
        }
        throw FormatError(path_ + ": corrupt gzip data: unexpected end of file");
      }
      z.next_in = s.in;
      z.avail_in = static_cast<uInt>(got);
    }
    if (s.between_members) {
      // Another member may follow; anything else (zero padding, junk) is reported
      // rather than ignored, as gzip(1) would warn.
      if (z.next_in[0] != 0x1f) throw FormatError(path_ + ": trailing garbage after the gzip data");
      s.between_members = false;
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      s.between_members = true;
      inflateReset(&z);
    } else if (rc != Z_OK) {
      throw FormatError(path_ + ": corrupt gzip data: " + (z.msg ? z.msg : zError(rc)));
    }
  }
  return asked - z.avail_out;
}
#else
// Never reached: without zlib the constructor refuses gzip files.
size_t FileReader::inflate_some(void*, size_t) { return 0; }
#endif

}  // namespace ember::data
