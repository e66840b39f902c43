// The independent event-file reader (see event_reader.h). Every read is bounds
// checked; a violation raises FormatError with what was expected.
#include "support/event_reader.h"

#include <bit>
#include <fstream>
#include <sstream>

#include "kernels/base/error.h"

namespace event_reader {
namespace {

[[noreturn]] void bad(const std::string& what) { throw ember::FormatError("event file: " + what); }

void expect(bool ok, const char* what) {
  if (!ok) bad(what);
}

}  // namespace

uint32_t bitwise_crc32c(const std::string& s) {
  uint32_t r = 0xffffffffu;
  for (unsigned char c : s) {
    r ^= c;
    for (int k = 0; k < 8; ++k) r = (r >> 1) ^ ((r & 1u) ? 0x82F63B78u : 0u);
  }
  return ~r;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t read_le(const std::string& s, size_t at, int n) {
  expect(at <= s.size() && s.size() - at >= static_cast<size_t>(n), "read past the end");
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    expect(file.size() - at >= 12, "a record's header is cut short");
    const uint64_t len = read_le(file, at, 8);
    expect(read_le(file, at + 8, 4) == masked(bitwise_crc32c(file.substr(at, 8))), "a length's CRC does not match");
    expect(len <= file.size() - at - 12 && file.size() - at - 12 - len >= 4, "a record is cut short");
    const std::string data = file.substr(at + 12, len);
    expect(read_le(file, at + 12 + len, 4) == masked(bitwise_crc32c(data)), "a record's CRC does not match");
    out.push_back(data);
    at += 12 + len + 4;
  }
  return out;
}

std::vector<Field> decode(const std::string& msg) {
  std::vector<Field> fields;
  size_t at = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      expect(shift < 70, "a varint runs past 10 bytes");
      expect(at < msg.size(), "a varint is cut short");
      const auto b = static_cast<unsigned char>(msg[at++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < msg.size()) {
    const uint64_t key = varint();
    Field f;
    f.tag = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.number = varint();
    } else if (f.wire == 1 || f.wire == 5) {
      const int n = f.wire == 1 ? 8 : 4;
      f.number = read_le(msg, at, n);
      at += n;
    } else if (f.wire == 2) {
      const uint64_t n = varint();
      expect(n <= msg.size() - at, "a length-delimited field runs past its message");
      f.bytes = msg.substr(at, n);
      at += n;
    } else {
      bad("unexpected wire type " + std::to_string(f.wire));
    }
    fields.push_back(f);
  }
  return fields;
}

const Field& only(const std::vector<Field>& fields, int tag, int wire) {
  const Field* found = nullptr;
  for (const Field& f : fields)
    if (f.tag == tag) {
      expect(found == nullptr, "a field appears twice");
      found = &f;
    }
  expect(found != nullptr, "a field is missing");
  expect(found->wire == wire, "a field has the wrong wire type");
  return *found;
}

std::pair<std::string, std::vector<Scalar>> parse_event_file(const std::string& bytes, double* first_wall_time) {
  const std::vector<std::string> records = read_records(bytes);
  expect(!records.empty(), "no records");
  const std::vector<Field> first = decode(records[0]);
  expect(first.size() == 2, "the first event is not wall_time and file_version");
  if (first_wall_time) *first_wall_time = std::bit_cast<double>(only(first, 1, 1).number);
  const std::string version = only(first, 3, 2).bytes;
  std::vector<Scalar> scalars;
  for (size_t i = 1; i < records.size(); ++i) {
    const std::vector<Field> event = decode(records[i]);
    expect(event.size() == 3, "an event is not wall_time, step and summary");
    const std::vector<Field> summary = decode(only(event, 5, 2).bytes);
    expect(summary.size() == 1, "a summary does not hold one value");
    const std::vector<Field> value = decode(only(summary, 1, 2).bytes);
    expect(value.size() == 2, "a value is not tag and simple_value");
    scalars.push_back({only(value, 1, 2).bytes, static_cast<int64_t>(only(event, 2, 0).number),
                       std::bit_cast<float>(static_cast<uint32_t>(only(value, 2, 5).number)),
                       std::bit_cast<double>(only(event, 1, 1).number)});
  }
  return {version, scalars};
}

std::pair<std::string, std::vector<Scalar>> read_event_file(const std::string& path, double* first_wall_time) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw ember::FormatError(path + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_event_file(s.str(), first_wall_time);
}

}  // namespace event_reader
