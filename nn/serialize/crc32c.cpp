// Table-driven CRC-32C: the 256-entry table is built at compile time from the
// reflected Castagnoli polynomial 0x82F63B78.
#include "nn/serialize/crc32c.h"

#include <array>

namespace ember::serialize {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

// Entry b is the CRC register after shifting byte b through eight steps.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r & 1u) ? (r >> 1) ^ kPolynomial : r >> 1;
    table[b] = r;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  // The register holds the complement between calls so that chaining works.
  uint32_t r = ~crc;
  for (size_t i = 0; i < n; ++i) r = kTable[(r ^ p[i]) & 0xffu] ^ (r >> 8);
  return ~r;
}

}  // namespace ember::serialize
