// A minimal protocol-buffer encoder: just the wire types TensorBoard's Event and
// Summary messages use (varint, fixed64, fixed32, length-delimited). Written by
// hand so Ember needs no protobuf library for a handful of fields.
#pragma once

#include <cstdint>
#include <bit>
#include <string>
#include <string_view>

namespace ember::serialize {

class ProtoWriter {
 public:
  void varint_field(int field, uint64_t v) {
    key(field, kVarint);
    varint(v);
  }
  // int64 fields are plain varints of the two's-complement bits (not zigzag), so a
  // negative value takes ten bytes; that is the protobuf rule, not a choice here.
  void int64_field(int field, int64_t v) { varint_field(field, static_cast<uint64_t>(v)); }
  void double_field(int field, double v) {
    key(field, kFixed64);
    little_endian(v);
  }
  void float_field(int field, float v) {
    key(field, kFixed32);
    little_endian(v);
  }
  // Strings, bytes and embedded messages (pass the nested writer's bytes()).
  void bytes_field(int field, std::string_view v) {
    key(field, kLengthDelimited);
    varint(v.size());
    out_.append(v);
  }

  const std::string& bytes() const { return out_; }

 private:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  void key(int field, WireType type) { varint((static_cast<uint64_t>(field) << 3) | type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  // Fixed-width fields are little-endian whatever the host: emit the bits low byte first.
  void little_endian(double v) { bytes_low_first(std::bit_cast<uint64_t>(v), 8); }
  void little_endian(float v) { bytes_low_first(std::bit_cast<uint32_t>(v), 4); }
  void bytes_low_first(uint64_t bits, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }

  std::string out_;
};

}  // namespace ember::serialize
