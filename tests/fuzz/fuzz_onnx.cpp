// libFuzzer target: the ONNX loader (protobuf parsing, the checker, initializers,
// node attributes, ordering, constant folding) on arbitrary bytes, and a run of
// whatever loads with zero-filled inputs of the declared shapes (open dims 1).
// Two bounds keep one run's compute within libFuzzer's timeout, since the point
// is the loader and the ops' checks, not how long a legitimate model may compute:
// inputs declaring more than 64K elements are not run (an AveragePool of a
// 122 x 102 window over [65, 3, 32, 32] is 2.5G additions: 1.9 s in a release
// build, past the 10 s timeout under AddressSanitizer), nor are models with a
// window (a pool's or convolution's kernel_shape, or a Conv weight's spatial dims) of more than
// 4096 positions (a SAME_UPPER AveragePool of a 41982 x 7 window over a 32 x 32
// image pads it to 42K rows and sums 294K values per output).
#include <algorithm>
#include <fstream>
#include <map>

#include "ember.h"
#include "onnx/onnx_pb.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

constexpr int64_t kMaxWindow = 4096;

int64_t product(const google::protobuf::RepeatedField<int64_t>& v, int from = 0) {
  int64_t p = 1;
  for (int i = from; i < v.size(); ++i) p = v.Get(i) > 0 && p <= kMaxWindow ? p * std::min(v.Get(i), kMaxWindow + 1) : p;
  return p;
}

// Whether some node of the (already loaded, so valid) model slides a window of
// more than kMaxWindow positions.
bool has_wide_window(const std::string& path) {
  ::onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  if (!m.ParseFromIstream(&in)) return true;
  std::map<std::string, const ::onnx::TensorProto*> inits;
  for (const auto& t : m.graph().initializer()) inits[t.name()] = &t;
  for (const auto& n : m.graph().node()) {
    const std::string& op = n.op_type();
    const bool windowed = op == "AveragePool" || op == "MaxPool" || op == "LpPool" || op == "Conv" ||
                          op == "ConvTranspose" || op == "ConvInteger" || op == "QLinearConv";
    for (const auto& a : n.attribute())
      if (windowed && a.name() == "kernel_shape" && product(a.ints()) > kMaxWindow) return true;
    if ((n.op_type() == "Conv" || n.op_type() == "ConvTranspose" || n.op_type() == "ConvInteger" ||
         n.op_type() == "QLinearConv") && n.input_size() > 1) {
      const auto it = inits.find(n.input(n.op_type() == "QLinearConv" ? 3 : 1));
      if (it != inits.end() && product(it->second->dims(), 2) > kMaxWindow) return true;
    }
  }
  return false;
}

}  // namespace

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
    if (has_wide_window(path)) return;
    (void)m.run(inputs);
  });
}
