// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// with every integer little-endian.
#pragma once

#include <string>
#include <string_view>

namespace ember::serialize {

// The record holding `data`, ready to append to a file.
std::string tfrecord_frame(std::string_view data);

}  // namespace ember::serialize
