// An independent reader of TensorBoard event files, written from the format
// description alone (its own bitwise CRC-32C, TFRecord framing and protobuf
// decoding) so that the tests check SummaryWriter against something it does not
// share code with. Any malformed input raises ember::FormatError naming what is
// wrong, so the fuzz target (tests/fuzz/fuzz_event_reader.cpp) can run it on
// hostile bytes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace event_reader {

// One bit at a time, straight from the definition: reflected polynomial 0x82F63B78,
// register preset to all ones, result inverted.
uint32_t bitwise_crc32c(const std::string& s);
uint32_t masked(uint32_t crc);
// n little-endian bytes of s at `at`.
uint64_t read_le(const std::string& s, size_t at, int n);

// Splits a TFRecord file into its payloads, checking both CRCs of every record.
std::vector<std::string> read_records(const std::string& file);

// A protobuf field: varints and fixed values in `number`, length-delimited in `bytes`.
struct Field {
  int tag = 0, wire = 0;
  uint64_t number = 0;
  std::string bytes;
};
std::vector<Field> decode(const std::string& msg);
// The one field with this tag, which must have this wire type.
const Field& only(const std::vector<Field>& fields, int tag, int wire);

struct Scalar {
  std::string tag;
  int64_t step;
  float value;
  double wall_time;
};

// The file version from the first event and the scalars of all later ones, from
// the bytes of an event file.
std::pair<std::string, std::vector<Scalar>> parse_event_file(const std::string& bytes,
                                                             double* first_wall_time = nullptr);
// The same from a file (FormatError when it cannot be read).
std::pair<std::string, std::vector<Scalar>> read_event_file(const std::string& path, double* first_wall_time = nullptr);

}  // namespace event_reader
