// PyTorch models through the importer: the models and data in tests/onnx/models/
// (written by make_models.py with torch.onnx.export) are loaded, run on the
// committed input batch and compared with PyTorch's committed output within 1e-4.
// Each model is also run on its first row alone, which checks that the batch
// axis the exporter left open ("N") really is free in Ember's plan, and on the
// emulated device `emu`, which must give the CPU's bits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "ember.h"
#include "kernels/cpu/isa.h"

using namespace ember;

namespace {

const std::string kModels = EMBER_ONNX_MODELS_DIR;

struct Expected {
  std::string name;
  DType input_dtype;
  Shape input_row;  // the input's shape without the batch axis
};

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.contiguous().to_vector<float>();
  const auto y = b.contiguous().to_vector<float>();
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

void check_model(const Expected& e) {
  const auto model = ember::onnx::load(kModels + "/" + e.name + ".onnx");
  REQUIRE(model.inputs().size() == 1);
  REQUIRE(model.outputs().size() == 1);
  const auto& in = model.inputs()[0];
  CHECK(in.name == "input");
  CHECK(in.dtype == e.input_dtype);
  REQUIRE(in.shape.size() == e.input_row.size() + 1);
  CHECK_FALSE(in.shape[0].has_value());
  CHECK(in.dim_names[0] == "N");
  for (size_t d = 0; d < e.input_row.size(); ++d) CHECK(in.shape[d + 1] == e.input_row[d]);
  CHECK(model.outputs()[0].dtype == kFloat32);

  const Tensor x = ember::onnx::load_tensor(kModels + "/" + e.name + "_input_0.pb");
  const Tensor want = ember::onnx::load_tensor(kModels + "/" + e.name + "_output_0.pb");
  REQUIRE(x.dtype() == e.input_dtype);
  REQUIRE(x.size(0) == 3);

  const auto y = model.run({x});
  REQUIRE(y.size() == 1);
  REQUIRE(y[0].shape() == want.shape());
  const float diff = max_abs_diff(y[0], want);
  INFO(e.name << ": max |ember - pytorch| over the batch = " << diff);
  CHECK(diff <= 1e-4f);

  // The same plan on `emu`, a device of its own with the CPU's kernels (tensor/emu.h):
  // the path a GPU takes, which must give the CPU's bits.
  const auto on_emu = ember::onnx::load(kModels + "/" + e.name + ".onnx", Device("emu:0"));
  const auto y_emu = on_emu.run({x});
  REQUIRE(y_emu.size() == 1);
  CHECK(y_emu[0].device() == Device("emu:0"));
  CHECK(y_emu[0].cpu().contiguous().to_vector<float>() == y[0].contiguous().to_vector<float>());

  const auto row = model.run({x.narrow(0, 0, 1).contiguous()});
  REQUIRE(row[0].shape() == want.narrow(0, 0, 1).shape());
  const float row_diff = max_abs_diff(row[0], want.narrow(0, 0, 1));
  INFO(e.name << ": max |ember - pytorch| for row 0 alone = " << row_diff);
  CHECK(row_diff <= 1e-4f);
}

}  // namespace

TEST_CASE("PyTorch MLP 784-256-128-10 (Gemm, Relu) matches PyTorch", "[onnx][pytorch]") {
  check_model({"mlp", kFloat32, {784}});
}

TEST_CASE("PyTorch ResNet-style CNN (grouped/dilated Conv, BatchNorm, residual Add, pools) matches PyTorch",
          "[onnx][pytorch]") {
  check_model({"resnet", kFloat32, {3, 32, 32}});
}

TEST_CASE("PyTorch transformer encoder (Gather, Erf GELU, attention, LayerNormalization) matches PyTorch",
          "[onnx][pytorch]") {
  check_model({"transformer", kInt64, {16}});
}

TEST_CASE("Ember's seed CNN exported from PyTorch with the seed weights matches PyTorch", "[onnx][pytorch]") {
  check_model({"seed_net", kFloat32, {1, 28, 28}});
}

TEST_CASE("Two 64-channel convolutions exported from PyTorch match PyTorch", "[onnx][pytorch]") {
  check_model({"conv_block", kFloat32, {64, 14, 14}});
}

TEST_CASE("onnx: the PyTorch-exported MLP quantized to int8 stays close and agrees on the class", "[onnx][quant]") {
  const auto model = ember::onnx::load(kModels + "/mlp.onnx");
  size_t rewritten = 0;
  const auto q = ember::onnx::quantize_dynamic(model, &rewritten);
  CHECK(rewritten == 3);  // the three Gemm layers
  const Tensor x = ember::onnx::load_tensor(kModels + "/mlp_input_0.pb");
  const Tensor yf = model.run({x})[0], yq = q.run({x})[0];
  // Three layers compound the per-layer bound; the logits stay within 2% of their
  // range and every row keeps its class.
  double range = (amax(yf) - amin(yf)).item<double>();
  double worst = amax(abs(sub(yq, yf))).item<double>();
  INFO("largest logit difference " << worst << " of a range " << range);
  CHECK(worst <= 0.02 * range);
  CHECK(argmax(yq, 1).to_vector<int64_t>() == argmax(yf, 1).to_vector<int64_t>());
}

// The MLP, the seed CNN and the 64-channel conv block as ONNX Runtime's dynamic
// quantization writes them
// (DynamicQuantizeLinear, MatMulInteger or ConvInteger, Cast, Mul; made by
// models/make_quantized.sh) give ONNX Runtime 1.30's outputs: the codes and int32
// sums are exact, and the float steps after them are the same few operations in
// the same order. Held to 1e-6 (they agreed in every bit when the data was made),
// on both CPU kernels and on emu. (Not row by row: DynamicQuantizeLinear takes its
// scale from the whole batch.)
TEST_CASE("onnx: models quantized as ONNX Runtime quantizes them give ONNX Runtime's output", "[onnx][quant]") {
  for (const std::string name : {"mlp", "seed_net", "conv_block"}) {
    const Tensor x = ember::onnx::load_tensor(kModels + "/" + name + "_input_0.pb");
    const Tensor want = serialize::load_npy(kModels + "/" + name + "_int8_ort_output_0.npy");
    for (const char* isa : {"generic", "auto"}) {
      REQUIRE(cpu::set_isa(isa));
      const auto model = ember::onnx::load(kModels + "/" + name + "_int8.onnx");
      const Tensor y = model.run({x})[0];
      INFO(name << " on " << isa << ": max |ember - onnxruntime| = " << max_abs_diff(y, want));
      REQUIRE(y.shape() == want.shape());
      CHECK(max_abs_diff(y, want) <= 1e-6f);
    }
    REQUIRE(cpu::set_isa("auto"));
    const auto on_emu = ember::onnx::load(kModels + "/" + name + "_int8.onnx", Device("emu:0"));
    INFO(name << " on emu");
    CHECK(max_abs_diff(on_emu.run({x.to(Device("emu:0"))})[0].cpu(), want) <= 1e-6f);
  }
}
