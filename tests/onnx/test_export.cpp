// onnx::save: the models of export_models.h, exported by Ember, against ONNX
// Runtime's outputs for the same files (committed in exported/ by make.sh); the
// shape of what is written (names, the open batch dim, opset); and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "../support/message_of.h"
#include "export_models.h"
#include "onnx/onnx_pb.h"

using namespace ember;
namespace fs = std::filesystem;
namespace eo = ember::onnx;

namespace {

const std::string kExported = EMBER_ONNX_EXPORTED_DIR;

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.detach().cpu().to(kFloat64).contiguous().to_vector<double>();
  const auto y = b.detach().cpu().to(kFloat64).contiguous().to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

bool equal(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && max_abs_diff(a, b) == 0; }

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("ember_export_" + std::to_string(::getpid()) + "_" + name);
}

std::vector<Tensor> run_fn(const eo::TracedFunction& fn, const std::vector<Tensor>& in) {
  NoGradGuard no_grad;
  return fn(in);
}

}  // namespace

TEST_CASE("onnx::save: exported models give ONNX Runtime's outputs within 1e-5", "[onnx][export]") {
  for (const auto& c : export_models::all_cases()) {
    INFO(c.name);
    // The committed inputs are the ones the cases build (else make.sh must be rerun).
    for (size_t i = 0; i < c.inputs.size(); ++i)
      REQUIRE(equal(serialize::load_npy(kExported + "/" + c.name + "_input_" + std::to_string(i) + ".npy"),
                    c.inputs[i]));
    const std::string bytes = eo::save_to_string(c.fn, c.inputs, c.named);
    const auto ours = run_fn(c.fn, c.inputs);
    const auto model = eo::load_from_string(bytes);
    const auto reloaded = model.run(c.inputs);
    REQUIRE(reloaded.size() == ours.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      const Tensor ort = serialize::load_npy(kExported + "/" + c.name + "_ort_output_" + std::to_string(i) + ".npy");
      CHECK(max_abs_diff(ours[i], ort) <= 1e-5);
      CHECK(max_abs_diff(reloaded[i], ort) <= 1e-5);
    }
  }
}

TEST_CASE("onnx::save: a module's file has its names, an open batch and opset 17", "[onnx][export]") {
  auto c = export_models::module_case("network", 1);
  c.module->train();
  const fs::path file = temp_path("network.onnx");
  eo::save(*c.module, c.inputs, file.string());
  CHECK(c.module->is_training());  // restored after the trace ran in eval mode

  ::onnx::ModelProto proto;
  {
    std::ifstream in(file, std::ios::binary);
    REQUIRE(proto.ParseFromIstream(&in));
  }
  CHECK(proto.opset_import(0).version() == 17);
  CHECK(proto.producer_name() == "ember");
  std::vector<std::string> inits;
  for (const auto& t : proto.graph().initializer()) inits.push_back(t.name());
  for (const char* p : {"conv1.weight", "conv1.bias", "conv2.weight", "fc1.weight", "fc2.bias", "out.weight"})
    CHECK(std::count(inits.begin(), inits.end(), p) == 1);

  const auto model = eo::load(file.string());
  REQUIRE(model.inputs().size() == 1);
  CHECK(model.inputs()[0].name == "input");
  CHECK(model.inputs()[0].dim_names[0] == "batch");
  CHECK_FALSE(model.inputs()[0].shape[0].has_value());
  CHECK(model.inputs()[0].shape[3] == 28);
  CHECK(model.outputs()[0].name == "output");
  CHECK(model.outputs()[0].dim_names[0] == "batch");
  c.module->eval();
  for (int64_t batch : {1, 7}) {
    const Tensor x = export_models::image_batch(batch, {1, 28, 28}, 5);
    CHECK(max_abs_diff(model.run({x})[0], run_fn(c.fn, {x})[0]) <= 1e-5);
  }
  fs::remove(file);
}

TEST_CASE("onnx::save: outputs that are inputs, repeated or constant", "[onnx][export]") {
  Tensor w = tensor({1.f, -2.f, 3.f});
  eo::TracedFunction fn = [w](const std::vector<Tensor>& in) {
    Tensor y = in[0] * w;
    return std::vector<Tensor>{in[0], y, y, w * 2.0};
  };
  const Tensor x = tensor({{0.5f, 1.f, 2.f}, {3.f, 4.f, 5.f}});
  eo::ExportOptions opt;
  opt.output_names = {"same", "y"};
  const auto model = eo::load_from_string(eo::save_to_string(fn, {x}, {{"w", w}}, opt));
  REQUIRE(model.outputs().size() == 4);
  CHECK(model.outputs()[0].name == "same");
  CHECK(model.outputs()[1].name == "y");
  CHECK(model.outputs()[2].name == "output_2");
  const auto out = model.run({x});
  const auto want = run_fn(fn, {x});
  for (size_t i = 0; i < 4; ++i) CHECK(equal(out[i], want[i]));
}

TEST_CASE("onnx::save: float16 modules export in float16", "[onnx][export]") {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(6, 5), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(5, 2)});
  net->half();
  const Tensor x = export_models::image_batch(3, {6}, 4).to(kFloat16);
  const fs::path file = temp_path("half.onnx");
  eo::save(*net, {x}, file.string());
  const auto model = eo::load(file.string());
  CHECK(model.inputs()[0].dtype == kFloat16);
  const Tensor y = model.run({x})[0];
  CHECK(y.dtype() == kFloat16);
  NoGradGuard no_grad;
  CHECK(max_abs_diff(y, net->forward(x)) <= 1e-3);
  fs::remove(file);
}

TEST_CASE("onnx::save: what it cannot export raises the documented errors", "[onnx][export][errors]") {
  const Tensor x = tensor({{0.5f, -1.f, 2.f}, {3.f, -4.f, 5.f}});
  const Tensor targets = tensor(std::vector<int64_t>{0, 2}, {2});

  CHECK(message_of<NotImplementedError>([&] {
          eo::save_to_string([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{cross_entropy(in[0], targets)}; },
                               {x}, {});
        }) == "onnx::save: a loss (CrossEntropyBackward0) cannot be exported");
  CHECK(message_of<NotImplementedError>([&] {
          eo::save_to_string([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].norm(3, {1})}; },
                               {x}, {});
        }) == "onnx::save: norm with p=3 (NormBackward0) cannot be exported");

  CHECK(message_of<ValueError>([&] { eo::save_to_string([](const std::vector<Tensor>& in) { return in; }, {}, {}); }) ==
        "onnx::save: no example inputs");
  CHECK(message_of<ValueError>([&] {
          eo::save_to_string([](const std::vector<Tensor>& in) { return in; }, {x, tensor({1.f, 2.f, 3.f})}, {});
        }) == "onnx::save: dynamic_batch needs every example input to have a dim 0 of one size; input 1 has shape [3] "
              "and input 0 has shape [2, 3]");
  CHECK(message_of<ValueError>([&] { eo::save_to_string([](const std::vector<Tensor>& in) { return in; }, {Tensor()}, {}); }) ==
        "onnx::save: example input 0 is undefined");
  CHECK(message_of<ValueError>([&] {
          eo::save_to_string([](const std::vector<Tensor>& in) { return in; }, {empty({2, 3}, {kFloat32, Device("meta")})}, {});
        }) == "onnx::save: example input 0 is on the meta device (it has no values to trace)");
  CHECK(message_of<ValueError>([&] {
          eo::save_to_string([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; }, {x}, {});
        }) == "onnx::save: the function returned no outputs");
  auto net = std::make_shared<nn::ReLU>();
  CHECK(message_of<ValueError>([&] { eo::save(*net, {x, x}, temp_path("two.onnx").string()); }) ==
        "onnx::save: a Module's forward takes one input; got 2 example inputs");

  // A mask from a comparison is not recorded, so the trace freezes it: the second
  // input of the verification exposes it.
  const std::string frozen = message_of<ValueError>([&] {
    eo::save_to_string([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * (in[0] > 0).to(kFloat32)}; },
                         {x}, {});
  });
  CHECK_THAT(frozen, Catch::StartsWith("onnx::save: the exported graph fails on a second input: ONNX op 'Mul' (node "
                                       "'/Mul_0', opset 17): The size of tensor a (4) must match the size of tensor b "
                                       "(2) at non-singleton dimension 0"));
  CHECK_THAT(frozen, Catch::Contains("freezes as a constant"));
  // Without a dynamic batch the same function still fails on other values.
  eo::ExportOptions fixed;
  fixed.dynamic_batch = false;
  CHECK_THAT(message_of<ValueError>([&] {
               eo::save_to_string(
                   [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * (in[0] > 0).to(kFloat32)}; },
                   {x}, {}, fixed);
             }),
             Catch::StartsWith("onnx::save: the exported graph does not reproduce the function on a second input: "
                               "output 'output' is off by"));

  // A shape that folds the batch into another dim is frozen at the example's
  // batch size; with dynamic_batch = false the same function exports.
  eo::TracedFunction flat = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].reshape({-1}) * 2.0}; };
  CHECK_THAT(message_of<ValueError>([&] { eo::save_to_string(flat, {x}, {}); }),
             Catch::StartsWith("onnx::save: the exported graph fails on a second input: ") &&
                 Catch::Contains("dynamic_batch = false"));
  const auto model = eo::load_from_string(eo::save_to_string(flat, {x}, {}, fixed));
  CHECK(equal(model.run({x})[0], run_fn(flat, {x})[0]));

  CHECK(message_of<FormatError>([&] { eo::save(*std::make_shared<nn::ReLU>(), {x}, "/nonexistent-folder/relu.onnx"); }) ==
        "/nonexistent-folder/relu.onnx: cannot create a temporary file beside it: No such file or directory");
}
