// The C API's models: a built-in architecture chosen by name, its weights read from
// a safetensors file, run in eval mode with gradient recording off.
#include <functional>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "kernels/base/error.h"
#include "nn/models/network.h"
#include "nn/serialize/safetensors.h"
#include "tensor/graph.h"

namespace ember::capi {
namespace {

// Module::forward takes one tensor and gives one, so every architecture has one
// input and one output for now; the counts are here for the C API's sake.
struct Architecture {
  const char* name;
  std::function<std::shared_ptr<nn::Module>()> build;
  size_t num_inputs, num_outputs;
};

// The architectures ember_model_load knows. Adding one is a row here and a line in
// ember_c.h's and docs/capi.md's lists.
const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> known = {
      {"seed_network", [] { return std::make_shared<nn::Network>(); }, 1, 1},
  };
  return known;
}

const Architecture& find_architecture(const std::string& name) {
  std::string names;
  for (const Architecture& a : architectures()) {
    if (name == a.name) return a;
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  throw ValueError("ember_model_load: unknown architecture '" + name + "' (known: " + names + ")");
}

std::string count_str(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace
}  // namespace ember::capi

using namespace ember::capi;

extern "C" {

EMBER_C_API ember_status ember_model_load(const char* architecture, const char* weights_path, const char* device,
                                          ember_model** out) {
  constexpr const char* fn = "ember_model_load";
  return guard([&] {
    clear_out(out, fn);
    require(architecture, fn, "architecture");
    require(weights_path, fn, "weights_path");
    const Architecture& arch = find_architecture(architecture);
    const ember::Device dev = device ? parse_device(device, fn) : ember::kCPU;
    auto model = std::make_unique<ember_model>();
    model->module = arch.build();
    model->module->load_state_dict(ember::serialize::load_safetensors(weights_path));
    model->module->to(dev).eval();
    // Where the parameters now are: a bare "cuda" resolves to the current device.
    const std::vector<ember::Tensor> params = model->module->parameters();
    model->device = params.empty() ? dev : params.front().device();
    model->num_inputs = arch.num_inputs;
    model->num_outputs = arch.num_outputs;
    *out = model.release();
  });
}

EMBER_C_API size_t ember_model_num_inputs(const ember_model* model) { return model ? model->num_inputs : 0; }
EMBER_C_API size_t ember_model_num_outputs(const ember_model* model) { return model ? model->num_outputs : 0; }

// Safe to call from several threads on one model: grad mode is thread-local (the
// guard below turns it off for this thread only), the forward of a module in eval
// mode only reads its parameters, and each call's tensors are its own.
EMBER_C_API ember_status ember_model_run(ember_model* model, const ember_tensor* const* inputs, size_t n_inputs,
                                         ember_tensor** outputs, size_t n_outputs) {
  constexpr const char* fn = "ember_model_run";
  return guard([&] {
    require(outputs, fn, "outputs");
    for (size_t i = 0; i < n_outputs; ++i) outputs[i] = nullptr;  // null whenever the call fails
    require(model, fn, "model");
    if (n_outputs != model->num_outputs)
      throw InvalidArgument(std::string(fn) + ": n_outputs is " + std::to_string(n_outputs) + " but the model gives " +
                            count_str(model->num_outputs, "output"));
    if (n_inputs != model->num_inputs)
      throw InvalidArgument(std::string(fn) + ": n_inputs is " + std::to_string(n_inputs) + " but the model takes " +
                            count_str(model->num_inputs, "input"));
    require(inputs, fn, "inputs");
    for (size_t i = 0; i < n_inputs; ++i)
      require(inputs[i], fn, ("inputs[" + std::to_string(i) + "]").c_str());

    ember::NoGradGuard no_grad;
    ember::Tensor x = inputs[0]->tensor;
    if (x.device() != model->device) x = x.to(model->device);
    ember::Tensor y = model->module->forward(x);
    outputs[0] = new ember_tensor{std::move(y)};
  });
}

EMBER_C_API void ember_model_free(ember_model* model) { delete model; }

}  // extern "C"
