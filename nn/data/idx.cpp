// read_idx: header first, then exactly as many data bytes as the header promises.
// The data is read into a buffer that grows only as bytes arrive, so a hostile
// header claiming terabytes costs what the file really holds, not what it claims.
#include "nn/data/idx.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "nn/data/file_reader.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::data {
namespace {

constexpr int kMaxRank = 4;

// The Ember dtype for an IDX type code; false when Ember has none or the code is unknown.
bool dtype_for(unsigned code, DType* out) {
  switch (code) {
    case 0x08: *out = kUInt8; return true;
    case 0x09: *out = kInt8; return true;
    case 0x0c: *out = kInt32; return true;
    case 0x0d: *out = kFloat32; return true;
    case 0x0e: *out = kFloat64; return true;
    default: return false;
  }
}

std::string hex(uint64_t value, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buf;
}

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reads n bytes or raises the "ends inside the header" error; `header_bytes` is
// the whole header's length for the message, `before` how much of it came earlier.
void read_header(FileReader& in, unsigned char* dst, size_t n, size_t before, size_t header_bytes) {
  const size_t got = in.read(dst, n);
  if (got < n)
    throw FormatError(msg(in.path(), ": truncated: the file ends inside the IDX header (", before + got, " of ",
                          header_bytes, " bytes)"));
}

// Big-endian file bytes into host-order elements of `esize` bytes each.
void copy_from_big_endian(void* dst, const unsigned char* src, size_t nbytes, size_t esize) {
  if (esize == 1 || std::endian::native == std::endian::big) {
    if (nbytes) std::memcpy(dst, src, nbytes);
    return;
  }
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < nbytes; i += esize) {
    if (esize == 4) {
      uint32_t v;
      std::memcpy(&v, src + i, 4);
      v = __builtin_bswap32(v);
      std::memcpy(out + i, &v, 4);
    } else {
      uint64_t v;
      std::memcpy(&v, src + i, 8);
      v = __builtin_bswap64(v);
      std::memcpy(out + i, &v, 8);
    }
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  FileReader in(path);

  unsigned char magic[4];
  read_header(in, magic, 4, 0, 4);
  if (magic[0] != 0 || magic[1] != 0)
    throw FormatError(msg(path, ": not an IDX file (bad magic ", hex(big_endian_u32(magic), 8), ")"));
  DType dtype;
  if (!dtype_for(magic[2], &dtype))
    throw FormatError(msg(path, ": unsupported IDX element type ", hex(magic[2], 2),
                          " (supported: 0x08 uint8, 0x09 int8, 0x0c int32, 0x0d float32, 0x0e float64)"));
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxRank)
    throw FormatError(msg(path, ": unsupported IDX rank ", rank, " (expected 1 to ", kMaxRank, ")"));

  unsigned char dims[4 * kMaxRank];
  read_header(in, dims, 4 * rank, 4, 4 + 4 * rank);
  Shape shape(rank);
  for (int d = 0; d < rank; ++d) shape[d] = big_endian_u32(dims + 4 * d);

  // Four dims of up to 2^32 - 1 can overflow 64 bits: check every product.
  const size_t esize = dtype_size(dtype);
  int64_t numel = 1, nbytes = 0;
  bool overflow = false;
  for (int64_t s : shape) overflow = overflow || __builtin_mul_overflow(numel, s, &numel);
  overflow = overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(esize), &nbytes);
  if (overflow)
    throw FormatError(msg(path, ": IDX dims ", shape_str(shape), " are too large (the data size overflows 64 bits)"));

  // Ask for one byte more than promised, to tell "exactly right" from "too long".
  const uint64_t want = static_cast<uint64_t>(nbytes) + 1;
  // The buffer grows with what has arrived (64 KiB, then doubling), never with what
  // the header claims: a tiny file claiming a gigabyte costs a few kilobytes.
  std::vector<unsigned char> data;
  uint64_t have = 0;
  while (have < want) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(want - have, std::max<uint64_t>(have, 1 << 16)));
    data.resize(have + chunk);
    const size_t got = in.read(data.data() + have, chunk);
    have += got;
    if (got < chunk) break;
  }
  if (have < static_cast<uint64_t>(nbytes))
    throw FormatError(msg(path, ": truncated: header says ", nbytes, " bytes of data but the file has ", have));
  if (have > static_cast<uint64_t>(nbytes))
    throw FormatError(msg(path, ": trailing data: header says ", nbytes, " bytes of data but the file has ",
                          have + in.skip_to_end()));

  Tensor out = empty(shape, dtype);
  copy_from_big_endian(out.data_ptr(), data.data(), static_cast<size_t>(nbytes), esize);
  return out;
}

}  // namespace ember::data
