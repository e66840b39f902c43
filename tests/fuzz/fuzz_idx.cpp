// libFuzzer target: the IDX reader (MNIST's format), plain and gzip-compressed
// (gzip is recognised by its magic bytes, so the corpus holds both kinds).
#include "nn/data/idx.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run(data, size, [](const std::string& path) { (void)ember::data::read_idx(path); });
}
