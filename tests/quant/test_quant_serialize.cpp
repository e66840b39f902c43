// Saving and loading quantized models (quant/serialize.h): the round trip gives
// identical outputs, the file holds int8 weights, and a mismatching file is refused
// with the documented messages (missing scale, wrong dtype, wrong shape, bad
// values) without changing the model. A float32 model saved by PyTorch loads,
// quantizes and runs.
#include <catch2/catch.hpp>

#include <filesystem>

#include "nn/nn.h"
#include "nn/serialize/safetensors.h"
#include "quant/quant.h"
#include "support/temp_dir.h"
#include "tensor/ops.h"

namespace {

using namespace ember;

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::shared_ptr<nn::Sequential> mlp() {
  auto m = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(12, 20), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(20, 5)});
  m->eval();
  return m;
}

serialize::NamedTensors edited(serialize::NamedTensors s, const std::string& name, const Tensor& value) {
  serialize::NamedTensors out;
  for (auto& [n, t] : s)
    if (n != name) out.emplace_back(n, t);
    else if (value.defined()) out.emplace_back(n, value);
  return out;
}

}  // namespace

TEST_CASE("a quantized model saves and loads with identical predictions", "[quant][serialize]") {
  test_support::TempDir dir;
  manual_seed(4);
  auto model = mlp();
  quant::quantize_dynamic(model);
  const Tensor x = randn({6, 12});
  const Tensor y = (*model)(x);
  const std::string path = dir.file("q.safetensors");
  quant::save_quantized(*model, path);
  CHECK(serialize::read_safetensors_metadata(path).at("ember.quantization") == "dynamic-int8");
  for (auto& [n, t] : serialize::load_safetensors(path))
    if (n == "0.weight") CHECK(t.dtype() == kInt8);

  manual_seed(99);  // a different float model: only the loaded values may matter
  auto fresh = mlp();
  quant::quantize_dynamic(fresh);
  CHECK(((*fresh)(x) - y).abs().max().item<float>() > 0);
  quant::load_quantized(*fresh, path);
  CHECK(((*fresh)(x) - y).abs().max().item<float>() == 0.0f);
  // A plain load_state_dict also repacks (the packed weights follow the buffers).
  auto other = mlp();
  quant::quantize_dynamic(other);
  other->load_state_dict(model->state_dict());
  CHECK(((*other)(x) - y).abs().max().item<float>() == 0.0f);
  // The file is at least 3.5x smaller than the float one for a large enough layer.
  auto big = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(256, 256)});
  serialize::save_safetensors(big->state_dict(), dir.file("f.safetensors"));
  quant::quantize_dynamic(big);
  quant::save_quantized(*big, dir.file("b.safetensors"));
  CHECK(double(std::filesystem::file_size(dir.file("f.safetensors"))) /
            double(std::filesystem::file_size(dir.file("b.safetensors"))) >=
        3.5);
}

TEST_CASE("loading a mismatching quantized file: documented errors, model unchanged", "[quant][serialize][errors]") {
  test_support::TempDir dir;
  manual_seed(5);
  auto model = mlp();
  quant::quantize_dynamic(model);
  const serialize::NamedTensors good = model->state_dict();
  const Tensor x = randn({2, 12});
  auto target = mlp();
  quant::quantize_dynamic(target);
  const Tensor before = (*target)(x);
  auto load = [&](const serialize::NamedTensors& s) {
    const std::string path = dir.file("bad.safetensors");
    serialize::save_safetensors(s, path);
    return error_text([&] { quant::load_quantized(*target, path); });
  };
  CHECK(load(edited(good, "2.weight_scale", Tensor())) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\tMissing key(s) in state_dict: "
        "\"2.weight_scale\". ");
  CHECK(load(edited(good, "0.weight", randn({20, 12}))) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\tdtype mismatch for 0.weight: copying a param "
        "with dtype float32 from checkpoint, the dtype in current model is int8.");
  CHECK(load(edited(good, "0.weight_scale", ones({1}))) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\tsize mismatch for 0.weight_scale: copying a "
        "param with shape [1] from checkpoint, the shape in current model is [20].");
  serialize::NamedTensors extra = good;
  extra.emplace_back("3.weight", zeros({1}, kInt8));
  CHECK(load(extra) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\tUnexpected key(s) in state_dict: \"3.weight\". ");
  CHECK(load(edited(good, "2.weight_scale", -ones({5}))) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\t2.weight: weight_scale must be positive and "
        "finite, got -1 at index 0");
  CHECK(load(edited(good, "0.weight_zero_point", ones({20}, kInt32))) ==
        "Error(s) in loading quantized state_dict for Sequential:\n\t0.weight: weight_zero_point must be 0 (int8 "
        "weights are quantized symmetrically), got 1 at index 0");
  // A float model's file into a quantized model: every quantized key is missing.
  CHECK(load(mlp()->state_dict()).rfind(
            "Error(s) in loading quantized state_dict for Sequential:\n\tMissing key(s) in state_dict: "
            "\"0.weight_scale\", \"0.weight_zero_point\", \"2.weight_scale\", \"2.weight_zero_point\". \n\tdtype "
            "mismatch for 0.weight: copying a param with dtype float32 from checkpoint, the dtype in current model is "
            "int8.",
            0) == 0);
  CHECK(((*target)(x) - before).abs().max().item<float>() == 0.0f);
  CHECK_THROWS_AS(quant::load_quantized(*target, dir.file("absent.safetensors")), FormatError);
}

TEST_CASE("a float32 model saved by PyTorch loads and quantizes", "[quant][serialize]") {
  // The seed network saved by PyTorch (tests/nn/make_safetensors_fixture.py).
  const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/../../nn/data/safetensors_seed_net.safetensors";
  auto net = std::make_shared<nn::Network>();
  net->load_state_dict(serialize::load_safetensors(path));
  net->eval();
  manual_seed(8);
  const Tensor x = rand({4, 1, 28, 28});
  const Tensor yf = (*net)(x);
  quant::quantize_dynamic(net);
  const Tensor yq = (*net)(x);
  CHECK((yq - yf).abs().max().item<double>() > 0);
  CHECK((yq - yf).abs().max().item<double>() < 0.05 * yf.abs().max().item<double>() + 1e-3);
  CHECK(yq.argmax(1).to_vector<int64_t>() == yf.argmax(1).to_vector<int64_t>());
}
