// Event and Summary encoding for TensorBoard scalars (see event_proto.h).
#include "nn/serialize/event_proto.h"

#include "nn/serialize/protobuf_writer.h"

namespace ember::serialize {
namespace {

// Field numbers, named as in event.proto and summary.proto.
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimpleValue = 2;

}  // namespace

std::string encode_file_version_event(double wall_time, const std::string& file_version) {
  ProtoWriter event;
  event.double_field(kEventWallTime, wall_time);
  event.bytes_field(kEventFileVersion, file_version);
  return event.bytes();
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  ProtoWriter v;
  v.bytes_field(kValueTag, tag);
  v.float_field(kValueSimpleValue, value);
  ProtoWriter summary;
  summary.bytes_field(kSummaryValue, v.bytes());
  ProtoWriter event;
  event.double_field(kEventWallTime, wall_time);
  event.int64_field(kEventStep, step);
  event.bytes_field(kEventSummary, summary.bytes());
  return event.bytes();
}

}  // namespace ember::serialize
