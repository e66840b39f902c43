// libFuzzer target: the ONNX loader (protobuf parsing, the checker, initializers,
// node attributes, ordering, constant folding) on arbitrary bytes, and a run of
// whatever loads with zero-filled inputs of the declared shapes (open dims 1).
// Inputs declaring more than 64K elements are not run: the point is the loader and
// the ops' checks, and a model's compute grows with its input (an AveragePool of a
// 122 x 102 window over [65, 3, 32, 32] is 2.5G additions: 1.9 s in a release
// build, past libFuzzer's 10 s timeout under AddressSanitizer).
#include "ember.h"
#include "tests/fuzz/fuzz_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run(data, size, [](const std::string& path) {
    ember::onnx::Model m = ember::onnx::load(path);
    std::vector<ember::Tensor> inputs;
    for (const auto& v : m.inputs()) {
      ember::Shape shape;
      int64_t numel = 1;
      for (const auto& d : v.shape) {
        shape.push_back(d ? *d : 1);
        numel *= std::max<int64_t>(shape.back(), 1);
        if (numel > (1 << 16)) return;
      }
      inputs.push_back(ember::zeros(shape, v.dtype));
    }
    (void)m.run(inputs);
  });
}
