// The safetensors header: dtype codes, the header-size limit and the validation of
// a header against the data buffer that follows it. Shared by the reader and the
// writer; not part of the public API.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace ember::serialize {

// The reference implementation's limit; a larger length is refused before any
// allocation, so a hostile length field cannot make the reader allocate gigabytes.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// "F32", "BF16", "BOOL", ... for each Ember dtype, and back.
const char* safetensors_dtype_code(DType dtype);
std::optional<DType> parse_safetensors_dtype(std::string_view code);

struct TensorEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range in the data buffer
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // ordered by (begin, end, name)
  std::map<std::string, std::string> metadata;
};

// Parses and checks `json` (the header of file `path`, named in every message)
// against a data buffer of `data_size` bytes: types of every field, dtypes, shapes
// that cannot overflow, offsets inside the buffer matching the shapes, and ranges
// that tile the buffer exactly (no overlap, no gap, no trailing bytes), as the
// reference implementation requires. FormatError on the first problem.
SafetensorsHeader parse_safetensors_header(const std::string& path, std::string_view json, uint64_t data_size);

}  // namespace ember::serialize
