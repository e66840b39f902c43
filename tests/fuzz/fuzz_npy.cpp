// libFuzzer target: the .npy reader (magic, version, the header dict, sizes).
#include "nn/serialize/npy.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run(data, size, [](const std::string& path) { (void)ember::serialize::load_npy(path); });
}
