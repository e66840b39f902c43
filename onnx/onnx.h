// ONNX models in and out of Ember: load a model file into an execution plan of
// tensor ops and run it on any device Ember has; save an Ember module (or any
// function of tensors) as a model file by tracing one forward pass. The plan is built once at load (nodes
// sorted, constant subgraphs folded, weights placed on the device, each
// intermediate freed at its last use); run() only walks it, so one Model may be
// run from several threads at once. Nothing of protobuf or the ONNX library
// appears here: this header is all a user includes. See docs/onnx.md.
#pragma once

#include "kernels/base/export.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::nn {
class Module;
}

namespace ember::onnx {

// A graph input or output: its name, element type and shape. A dimension the
// model leaves open (a symbolic batch size "N", or nothing at all) is nullopt,
// and dim_names holds its symbol ("" when the model gives none).
struct ValueInfo {
  std::string name;
  DType dtype = kFloat32;
  std::vector<std::optional<int64_t>> shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;  // false when the model says nothing of the rank
};

class Plan;

class Model {
 public:
  Model() = default;
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  Device device() const;
  int64_t opset() const;
  // Number of steps the plan runs per call, after constant folding.
  size_t num_steps() const;
  // Runs the graph on `inputs` (one per graph input, in graph order, on any
  // device: they are moved to the model's device) and returns one tensor per graph
  // output, on the model's device. Thread-safe: the plan is never written to.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  friend Model load(const std::string& path, Device device);
  friend Model load_from_string(const std::string& bytes, Device device, const std::string& folder);
  friend Model quantize_dynamic(const Model& model, size_t* rewritten);
  std::shared_ptr<const Plan> plan_;
};

// Loads `path` (a serialized ModelProto). External data files are looked up
// next to the model. Raises FormatError for a file that is not a valid model
// (the problem named) and NotImplementedError for an op or attribute Ember does
// not run (naming the op, the node and the opset).
Model load(const std::string& path, Device device = kCPU);
// The same from the bytes of a model already in memory; `folder` is where its
// external data files are ("" forbids external data).
Model load_from_string(const std::string& bytes, Device device = kCPU, const std::string& folder = "");

// int8 dynamic quantization of an imported model, as quant::quantize_dynamic does
// for nn::Linear: every MatMul whose second input is a constant float32 matrix, and
// every Gemm with a constant float32 B (transA = 0, alpha = 1), runs as an int8
// Linear (weights quantized per output channel, symmetric; activations per call
// from their min and max; docs/quant.md gives the error bound). Other steps are
// shared with `model`, which is left as it was. Returns the number of steps
// rewritten through `rewritten` when not null.
Model quantize_dynamic(const Model& model, size_t* rewritten = nullptr);

// ---- export ----
struct ExportOptions {
  // Graph input and output names, in order; missing ones are "input", "input_1",
  // ... and "output", "output_1", ...
  std::vector<std::string> input_names, output_names;
  // Dim 0 of every input, and of every output as long as the inputs', is the
  // symbol "batch": the file runs at any batch size. Every example input then
  // needs at least one dim and the same size in dim 0.
  bool dynamic_batch = true;
  // Reload the written graph and check it against the traced function: on the
  // example inputs, and on a second input of other values (and, with
  // dynamic_batch, another batch size). ValueError when they differ.
  bool verify = true;
};

// A function of tensors to export: inputs in, outputs out, through Ember ops.
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Writes `module` (one input: example_inputs has one tensor) as an ONNX model
// (opset 17) to `path`, by running one forward pass in eval mode on the example
// and recording its ops; the module's training mode is restored after.
// Parameters and buffers keep their dotted names as initializers. The file is
// checked by the ONNX checker and strict shape inference, written under a
// temporary name and renamed (a failure leaves `path` as it was). Raises
// NotImplementedError for an op with no ONNX form here (docs/onnx.md lists them),
// ValueError for bad examples or a failed verification, FormatError for I/O.
void save(nn::Module& module, const std::vector<Tensor>& example_inputs, const std::string& path,
          const ExportOptions& options = {});
// The same for any function: `named` names the tensors it reads besides its
// inputs (parameters, buffers), which become initializers under those names;
// other constants are written as "const", "scalar", ...
void save(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
          const std::vector<std::pair<std::string, Tensor>>& named, const std::string& path,
          const ExportOptions& options = {});
// The serialized ModelProto instead of a file.
std::string save_to_string(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
                           const std::vector<std::pair<std::string, Tensor>>& named,
                           const ExportOptions& options = {});

// Reads a serialized TensorProto (the test_data_set_*/input_0.pb files of the
// ONNX test suite) into a CPU tensor.
Tensor load_tensor(const std::string& path);

}  // namespace ember::onnx

EMBER_API_END
