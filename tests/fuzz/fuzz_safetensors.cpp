// libFuzzer target: the safetensors reader (header JSON, offsets, dtypes, shapes)
// and the metadata reader, on arbitrary bytes.
#include "nn/serialize/safetensors.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run(data, size, [](const std::string& path) {
    try {
      (void)ember::serialize::read_safetensors_metadata(path);
    } catch (const ember::Error&) {
    }
    (void)ember::serialize::load_safetensors(path);
  });
}
