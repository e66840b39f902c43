// FileReader: the bytes of a file, inflated on the fly when the file is gzip.
// Data files ship both plain and gzipped (Debian gzips MNIST), so readers above
// this one never care which; gzip is recognised by its magic bytes, not the name.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

EMBER_API_BEGIN

namespace ember::data {

class FileReader {
 public:
  // Opens `path`; FormatError "{path}: cannot open: {reason}" when it cannot.
  explicit FileReader(const std::string& path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads up to n bytes of (decompressed) data into dst and returns how many it
  // read: fewer than n only at the end of the data. A damaged gzip stream or a
  // failing read raises FormatError naming the file.
  size_t read(void* dst, size_t n);
  // Reads to the end, discarding, and returns how many bytes that was.
  uint64_t skip_to_end();

  bool compressed() const { return inflater_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  size_t read_raw(void* dst, size_t n);
  size_t inflate_some(void* dst, size_t n);  // n fits zlib's 32-bit counts

  struct Inflater;  // zlib state, kept out of this header
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;  // closed even when the constructor throws
  std::unique_ptr<Inflater> inflater_;
};

}  // namespace ember::data

EMBER_API_END
