// libFuzzer target: loading a quantized state dict (int8 weights, scales, zero
// points, checked against the model) into the int8 seed network, and the same file
// as a float32 state dict into the float seed network.
#include <memory>

#include "nn/models/network.h"
#include "nn/serialize/safetensors.h"
#include "quant/quantize_dynamic.h"
#include "quant/serialize.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run(data, size, [](const std::string& path) {
    auto q = ember::quant::quantize_dynamic(std::make_shared<ember::nn::Network>());
    try {
      ember::quant::load_quantized(*q, path);
    } catch (const ember::Error&) {
    }
    ember::nn::Network net;
    net.load_state_dict(ember::serialize::load_safetensors(path));
  });
}
