// The IDX reader against files written here byte by byte (plain and gzipped), two
// committed fixtures written by Python (tests/nn/data/make_idx_fixtures.py), and
// every kind of damaged or hostile file, each error asserted by its exact text.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember.h"
#include "nn/data/idx.h"

using namespace ember;
using ember::data::read_idx;
using Catch::Matchers::Message;
using Bytes = std::vector<uint8_t>;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

#include "support/temp_dir.h"

using test_support::TempDir;

namespace {

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

void put_u32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX file: magic 00 00 <type> <rank>, big-endian dims, then `payload` as is.
Bytes idx(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) put_u32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Values stored big-endian, as IDX keeps them.
template <class T>
Bytes big_endian(const std::vector<T>& values) {
  Bytes b;
  for (T v : values) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    for (size_t i = sizeof(T); i-- > 0;) b.push_back(raw[i]);  // the tests run on little-endian hosts
  }
  return b;
}

// One gzip member holding `plain`.
Bytes gzip(const Bytes& plain) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&z, plain.size()) + 32);
  z.next_in = const_cast<uint8_t*>(plain.data());
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

Bytes iota_bytes(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 3 + 1);
  return b;
}

}  // namespace

TEST_CASE("IDX uint8 files read plain and gzipped alike", "[data][idx]") {
  TempDir dir;
  const Bytes payload = iota_bytes(2 * 3 * 4);
  const Bytes file = idx(0x08, {2, 3, 4}, payload);
  write_file(dir.file("plain"), file);
  write_file(dir.file("packed.bin"), gzip(file));  // gzip is told by its magic, not its name
  for (const char* name : {"plain", "packed.bin"}) {
    Tensor t = read_idx(dir.file(name));
    REQUIRE(t.dtype() == kUInt8);
    REQUIRE(t.shape() == Shape{2, 3, 4});
    REQUIRE(t.is_contiguous());
    REQUIRE(t.to_vector<uint8_t>() == std::vector<uint8_t>(payload.begin(), payload.end()));
  }
}

TEST_CASE("IDX element types, ranks and empty dims", "[data][idx]") {
  TempDir dir;
  const std::vector<int8_t> i8 = {-128, -1, 0, 1, 127};
  write_file(dir.file("i8"), idx(0x09, {5}, big_endian(i8)));
  Tensor t = read_idx(dir.file("i8"));
  REQUIRE(t.dtype() == kInt8);
  REQUIRE(t.to_vector<int8_t>() == i8);

  const std::vector<int32_t> i32 = {INT32_MIN, -2, 0, 0x01020304, INT32_MAX, 7};
  write_file(dir.file("i32"), idx(0x0c, {3, 2}, big_endian(i32)));
  t = read_idx(dir.file("i32"));
  REQUIRE(t.dtype() == kInt32);
  REQUIRE(t.shape() == Shape{3, 2});
  REQUIRE(t.to_vector<int32_t>() == i32);

  const std::vector<float> f32 = {1.5f, -0.0f, 3.0e38f, 1e-40f};
  write_file(dir.file("f32"), gzip(idx(0x0d, {1, 1, 2, 2}, big_endian(f32))));
  t = read_idx(dir.file("f32"));
  REQUIRE(t.dtype() == kFloat32);
  REQUIRE(t.shape() == Shape{1, 1, 2, 2});
  REQUIRE(t.to_vector<float>() == f32);

  const std::vector<double> f64 = {3.141592653589793, -1e300};
  write_file(dir.file("f64"), idx(0x0e, {2}, big_endian(f64)));
  t = read_idx(dir.file("f64"));
  REQUIRE(t.dtype() == kFloat64);
  REQUIRE(t.to_vector<double>() == f64);

  // A dim of 0 is an empty dataset, not an error.
  write_file(dir.file("empty"), gzip(idx(0x08, {0, 28, 28}, {})));
  t = read_idx(dir.file("empty"));
  REQUIRE(t.shape() == Shape{0, 28, 28});
  REQUIRE(t.numel() == 0);
}

TEST_CASE("IDX in a gzip file of several members", "[data][idx]") {
  // gzip(1) concatenates members when files are joined with cat; the data runs on.
  TempDir dir;
  const Bytes payload = iota_bytes(100);
  const Bytes file = idx(0x08, {10, 10}, payload);
  Bytes joined = gzip(Bytes(file.begin(), file.begin() + 30));
  const Bytes second = gzip(Bytes(file.begin() + 30, file.end()));
  joined.insert(joined.end(), second.begin(), second.end());
  write_file(dir.file("joined.gz"), joined);
  REQUIRE(read_idx(dir.file("joined.gz")).to_vector<uint8_t>() == std::vector<uint8_t>(payload.begin(), payload.end()));
}

TEST_CASE("IDX fixtures written by Python read as Python wrote them", "[data][idx]") {
  Tensor t = read_idx(EMBER_TEST_DATA_DIR "/idx_uint8_2x3x4.idx3-ubyte.gz");
  REQUIRE(t.dtype() == kUInt8);
  REQUIRE(t.shape() == Shape{2, 3, 4});
  std::vector<uint8_t> want;
  for (int i = 0; i < 24; ++i) want.push_back(static_cast<uint8_t>((7 * i) % 256));
  REQUIRE(t.to_vector<uint8_t>() == want);

  t = read_idx(EMBER_TEST_DATA_DIR "/idx_float32_2x3.idx2");
  REQUIRE(t.dtype() == kFloat32);
  REQUIRE(t.shape() == Shape{2, 3});
  REQUIRE(t.to_vector<float>() == std::vector<float>{1.5f, -2.25f, 0.001f, 3.0e38f, -0.0f, 65504.0f});
}

TEST_CASE("IDX files that cannot be read", "[data][idx][errors]") {
  TempDir dir;
  EXPECT_ERROR(read_idx(dir.file("missing")), FormatError, dir.file("missing") + ": cannot open: No such file or directory");
  EXPECT_ERROR(read_idx(dir.path), FormatError, dir.path + ": read error: Is a directory");
}

TEST_CASE("IDX headers that are wrong", "[data][idx][errors]") {
  TempDir dir;
  const std::string p = dir.file("bad");
  auto check = [&](const Bytes& bytes, const std::string& problem) {
    write_file(p, bytes);
    EXPECT_ERROR(read_idx(p), FormatError, p + ": " + problem);
  };
  check({}, "truncated: the file ends inside the IDX header (0 of 4 bytes)");
  check({0, 0, 8}, "truncated: the file ends inside the IDX header (3 of 4 bytes)");
  check({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3}, "truncated: the file ends inside the IDX header (12 of 16 bytes)");
  check({'h', 'e', 'l', 'l', 'o', '\n'}, "not an IDX file (bad magic 0x68656c6c)");
  check({0, 1, 8, 1, 0, 0, 0, 0}, "not an IDX file (bad magic 0x00010801)");
  // int16 (0x0b) is a real IDX type, but Ember has no int16 dtype.
  check(idx(0x0b, {2}, {0, 1, 0, 2}),
        "unsupported IDX element type 0x0b (supported: 0x08 uint8, 0x09 int8, 0x0c int32, 0x0d float32, 0x0e float64)");
  check(idx(0x07, {1}, {0}),
        "unsupported IDX element type 0x07 (supported: 0x08 uint8, 0x09 int8, 0x0c int32, 0x0d float32, 0x0e float64)");
  check({0, 0, 8, 0}, "unsupported IDX rank 0 (expected 1 to 4)");
  check(idx(0x08, {1, 1, 1, 1, 1}, {7}), "unsupported IDX rank 5 (expected 1 to 4)");
}

TEST_CASE("IDX data that disagrees with its header", "[data][idx][errors]") {
  TempDir dir;
  const std::string p = dir.file("bad");
  auto check = [&](const Bytes& bytes, const std::string& problem) {
    write_file(p, bytes);
    EXPECT_ERROR(read_idx(p), FormatError, p + ": " + problem);
    // The same inside gzip: the sizes are those of the decompressed data.
    write_file(p, gzip(bytes));
    EXPECT_ERROR(read_idx(p), FormatError, p + ": " + problem);
  };
  check(idx(0x08, {2, 3, 4}, iota_bytes(20)), "truncated: header says 24 bytes of data but the file has 20");
  check(idx(0x08, {2, 3, 4}, iota_bytes(25)), "trailing data: header says 24 bytes of data but the file has 25");
  check(idx(0x08, {2, 3, 4}, iota_bytes(1000)), "trailing data: header says 24 bytes of data but the file has 1000");
  check(idx(0x0c, {3}, iota_bytes(11)), "truncated: header says 12 bytes of data but the file has 11");
  check(idx(0x08, {4}, {}), "truncated: header says 4 bytes of data but the file has 0");
  // A labels header stuck on an images file's size: lying sizes, in both directions.
  check(idx(0x08, {60000, 28, 28}, iota_bytes(10)), "truncated: header says 47040000 bytes of data but the file has 10");
}

TEST_CASE("IDX headers claiming huge sizes raise before allocating", "[data][idx][errors]") {
  TempDir dir;
  const std::string p = dir.file("huge");
  auto check = [&](const Bytes& bytes, const std::string& problem) {
    write_file(p, bytes);
    EXPECT_ERROR(read_idx(p), FormatError, p + ": " + problem);
  };
  // 2^62 bytes fit in 64 bits: the data is simply not there, and nothing of that size is allocated.
  check(idx(0x08, {1u << 31, 1u << 31}, iota_bytes(16)),
        "truncated: header says 4611686018427387904 bytes of data but the file has 16");
  // 2^62 elements of 4 or 8 bytes, or four dims of 2^32 - 1, overflow.
  check(idx(0x0c, {1u << 31, 1u << 31}, {}),
        "IDX dims [2147483648, 2147483648] are too large (the data size overflows 64 bits)");
  check(idx(0x0e, {1u << 31, 1u << 31}, {}),
        "IDX dims [2147483648, 2147483648] are too large (the data size overflows 64 bits)");
  check(idx(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {}),
        "IDX dims [4294967295, 4294967295, 4294967295, 4294967295] are too large (the data size overflows 64 bits)");
  // A zero dim makes the product 0 whatever the others say.
  check(idx(0x08, {0xffffffffu, 0, 0xffffffffu}, {1}), "trailing data: header says 0 bytes of data but the file has 1");
}

TEST_CASE("damaged gzip files", "[data][idx][errors]") {
  TempDir dir;
  const std::string p = dir.file("bad.gz");
  const Bytes good = gzip(idx(0x08, {2, 3, 4}, iota_bytes(24)));
  auto check = [&](const Bytes& bytes, const std::string& problem) {
    write_file(p, bytes);
    EXPECT_ERROR(read_idx(p), FormatError, p + ": " + problem);
  };
  // The messages in parentheses are zlib's own, stable across zlib 1.2 and 1.3.
  check({0x1f, 0x8b}, "corrupt gzip data: unexpected end of file");
  check(Bytes(good.begin(), good.begin() + good.size() / 2), "corrupt gzip data: unexpected end of file");
  check(Bytes(good.begin(), good.end() - 1), "corrupt gzip data: unexpected end of file");
  Bytes b = good;
  b[2] = 0;  // compression method 0 does not exist
  check(b, "corrupt gzip data: unknown compression method");
  b = good;
  b[10] = 0x07;  // first deflate block: final, with the reserved block type 3
  check(b, "corrupt gzip data: invalid block type");
  b = good;
  b[b.size() - 8] ^= 0xff;  // CRC-32 of the data
  check(b, "corrupt gzip data: incorrect data check");
  b = good;
  b[b.size() - 4] ^= 0x01;  // length of the data
  check(b, "corrupt gzip data: incorrect length check");
  b = good;
  b.insert(b.end(), {0, 0, 0, 0});
  check(b, "trailing garbage after the gzip data");
  // Valid gzip of something that is not IDX, or of nothing at all.
  check(gzip({'<', 'h', 't', 'm', 'l', '>'}), "not an IDX file (bad magic 0x3c68746d)");
  check(gzip({}), "truncated: the file ends inside the IDX header (0 of 4 bytes)");
}

TEST_CASE("IDX reader survives random damage without crashing", "[data][idx][errors]") {
  // Every single-byte change and every truncation of a small file, plain and
  // gzipped: each must read or raise FormatError, never crash or raise anything else.
  TempDir dir;
  const std::string p = dir.file("fuzz");
  const Bytes plain = idx(0x0c, {2, 3}, iota_bytes(24));
  for (const Bytes& good : {plain, gzip(plain)}) {
    for (size_t cut = 0; cut <= good.size(); ++cut) {
      write_file(p, Bytes(good.begin(), good.begin() + cut));
      try {
        read_idx(p);
        REQUIRE(cut == good.size());
      } catch (const FormatError&) {
      }
    }
    for (size_t i = 0; i < good.size(); ++i)
      for (uint8_t x : {0x01, 0x80, 0xff}) {
        Bytes b = good;
        b[i] ^= x;
        write_file(p, b);
        try {
          read_idx(p);
        } catch (const FormatError&) {
        }
      }
  }
}
