// save_safetensors: checks the names, builds the JSON header with each tensor's
// byte range in the order given, then streams header and data through an
// AtomicFile so that a failed save never leaves a partial file at `path`.
#include <bit>
#include <set>

#include <nlohmann/json.hpp>

#include "nn/serialize/atomic_file.h"
#include "nn/serialize/safetensors.h"
#include "nn/serialize/safetensors_header.h"

namespace ember::serialize {

// Tensor bytes are written as they sit in memory; the format is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

// Every argument is checked before the temporary file exists.
void check_arguments(const NamedTensors& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw ValueError("save_safetensors: tensor names must be non-empty");
    if (name == "__metadata__") throw ValueError("save_safetensors: the name '__metadata__' is reserved for metadata");
    if (!seen.insert(name).second) throw ValueError("save_safetensors: duplicate tensor name '" + name + "'");
    if (!t.defined()) throw ValueError("save_safetensors: tensor '" + name + "' is undefined");
    if (t.device().is_meta())
      throw DeviceError("save_safetensors: tensor '" + name + "' is on device meta and holds no data");
  }
}

// The header, space-padded so the data buffer starts 8-byte aligned in the file
// (as the reference writer does): a reader that maps the file can then use the data in place.
std::string make_header(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t end = offset + t.nbytes();
    header[name] = {{"dtype", safetensors_dtype_code(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::type_error&) {  // raised for invalid UTF-8
    throw ValueError("save_safetensors: tensor names and metadata must be valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

void save_safetensors(const NamedTensors& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  check_arguments(tensors);
  const std::string header = make_header(tensors, metadata);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));

  AtomicFile file(path);
  file.write(length, sizeof(length));
  file.write(header.data(), header.size());
  // One tensor at a time, so a model on the GPU never needs a second full copy on the host.
  for (const auto& [name, t] : tensors) {
    const Tensor host = t.cpu().contiguous();
    if (host.nbytes() > 0) file.write(host.data_ptr(), host.nbytes());
  }
  file.commit();
}

}  // namespace ember::serialize
