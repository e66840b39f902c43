// The two TensorBoard Event messages Ember writes, encoded as protobuf bytes:
// the file-version event that opens every event file, and a scalar summary.
// Field numbers follow tensorflow/core/util/event.proto and summary.proto.
#pragma once

#include <cstdint>
#include <string>

namespace ember::serialize {

// Event{wall_time = 1: double, file_version = 3: string}
std::string encode_file_version_event(double wall_time, const std::string& file_version);

// Event{wall_time = 1, step = 2: int64, summary = 5: Summary{value = 1: Value{tag = 1:
// string, simple_value = 2: float}}}
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);

}  // namespace ember::serialize
