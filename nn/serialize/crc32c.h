// CRC-32C (Castagnoli), the checksum TFRecord files carry, and TFRecord's masking
// of it. Table-driven, one byte per step: event files are small, so the speed of a
// slicing-by-8 or SSE4.2 version would buy nothing here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::serialize {

// CRC-32C of n bytes, continuing from `crc` (the CRC of the bytes before them; 0 to
// start), so that crc32c(ab) == crc32c(b, crc32c(a)).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// TFRecord stores CRCs masked (rotated and offset) because a CRC taken over data
// that itself embeds CRCs is weak; the mask breaks that structure.
constexpr uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ember::serialize
