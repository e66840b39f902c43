// AtomicFile: writes a file under a temporary name beside the target and renames
// it over the target only once every byte is on disk, so a crash or an error
// leaves either the old file or the new one, never a half-written mix.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>
#include <string>

EMBER_API_BEGIN

namespace ember::serialize {

class AtomicFile {
 public:
  // Creates `path`.tmp.<pid>.<n> in the target's folder (rename is atomic only
  // within one file system). FormatError when it cannot be created.
  explicit AtomicFile(std::string path);
  // Without commit() the temporary file is removed and the target left untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  // fsync, close, rename over the target, then fsync the folder so the rename
  // itself survives a crash. On failure the temporary file is removed and
  // FormatError raised.
  void commit();

 private:
  void discard() noexcept;

  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace ember::serialize

EMBER_API_END
