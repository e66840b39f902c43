// libFuzzer target: the tests' independent TensorBoard event-file reader
// (tests/support/event_reader.h): TFRecord framing with both CRCs, protobuf
// varints and length-delimited fields, the Event/Summary/Value layout. It parses
// bytes in memory, so no scratch file is needed; like every target, it may reject
// input only with an ember::Error.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "kernels/base/error.h"
#include "support/event_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    double wall = 0;
    (void)event_reader::parse_event_file(std::string(reinterpret_cast<const char*>(data), size), &wall);
  } catch (const ember::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected %s\n", e.what());
    std::abort();
  }
  return 0;
}
