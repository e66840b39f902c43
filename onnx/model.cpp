// The public face of onnx/: load a file or bytes into a plan, run it, describe
// its inputs and outputs, read a serialized tensor.
#include <fstream>
#include <sstream>
#include <filesystem>

#include "kernels/base/error.h"
#include "onnx/onnx.h"
#include "onnx/onnx_pb.h"
#include "onnx/plan.h"
#include "onnx/tensor_proto.h"

namespace ember::onnx {

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path + ": cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Plan& must(const std::shared_ptr<const Plan>& p) {
  if (!p) throw ValueError("onnx::Model: the model is empty (default-constructed, not loaded)");
  return *p;
}
}  // namespace

const std::vector<ValueInfo>& Model::inputs() const { return must(plan_).inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return must(plan_).outputs; }
Device Model::device() const { return must(plan_).device; }
int64_t Model::opset() const { return must(plan_).opset; }
size_t Model::num_steps() const { return must(plan_).steps.size(); }
std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const { return must(plan_).run(inputs); }

Model load(const std::string& path, Device device) {
  Model m;
  std::string folder = std::filesystem::path(path).parent_path().string();
  m.plan_ = build_plan(read_file(path), device, folder.empty() ? "." : folder, path, true);
  return m;
}

Model load_from_string(const std::string& bytes, Device device, const std::string& folder) {
  Model m;
  m.plan_ = build_plan(bytes, device, folder, "<memory>", false);
  return m;
}

Tensor load_tensor(const std::string& path) {
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(read_file(path))) throw FormatError(path + ": not a serialized ONNX TensorProto");
  std::string folder = std::filesystem::path(path).parent_path().string();
  return tensor_from_proto(proto, path, folder.empty() ? "." : folder);
}

}  // namespace ember::onnx
