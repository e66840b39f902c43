// Saving and loading tensors in the safetensors format (Hugging Face's): an 8-byte
// little-endian header length N, N bytes of JSON naming each tensor's dtype, shape
// and byte range, then the raw little-endian, row-major data. See docs/errors.md.
#pragma once

#include "kernels/base/export.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::serialize {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes `tensors` in the given order (their data lies back to back in that order)
// with optional string metadata ("__metadata__"). Tensors on any device are copied
// to the CPU and made contiguous one at a time. Names must be non-empty, unique and
// not "__metadata__" (ValueError). The file is written under a temporary name in
// the same folder and renamed over `path` only when complete (FormatError on I/O
// failure; `path` is then left as it was).
void save_safetensors(const NamedTensors& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});

// Reads every tensor into CPU tensors that own their memory, ordered by where
// their data lies in the file (by data_offsets; zero-byte tensors sharing an offset
// by name), so a file from save_safetensors comes back in the order it was given
// (up to zero-byte tensors written next to each other). The whole header
// is validated against the file size before any tensor data is read; a bad or
// hostile file raises FormatError naming the file and the problem.
NamedTensors load_safetensors(const std::string& path);

// The same, also filling `metadata` ("__metadata__"), from one open of the file: a
// file replaced meanwhile by another renamed over it (a new checkpoint) cannot give
// the tensors of one version and the metadata of the other.
NamedTensors load_safetensors(const std::string& path, std::map<std::string, std::string>& metadata);

// The "__metadata__" map (empty when absent), after the same header validation.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

}  // namespace ember::serialize

EMBER_API_END
