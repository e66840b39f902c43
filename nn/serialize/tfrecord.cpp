// TFRecord framing: length and data each followed by their masked CRC-32C.
#include "nn/serialize/tfrecord.h"

#include <cstdint>

#include "nn/serialize/crc32c.h"

namespace ember::serialize {
namespace {

void append_le(std::string& out, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_le(out, data.size(), 8);
  // The length gets its own CRC so a reader can trust it before allocating.
  append_le(out, mask_crc32c(crc32c(out.data(), 8)), 4);
  out.append(data);
  append_le(out, mask_crc32c(crc32c(data.data(), data.size())), 4);
  return out;
}

}  // namespace ember::serialize
