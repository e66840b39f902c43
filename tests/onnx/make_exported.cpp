// onnx-make-exported DIR: writes each model of export_models.h as DIR/<name>.onnx
// (through onnx::save) with its example inputs as DIR/<name>_input_<i>.npy. Run by
// tests/onnx/exported/make.sh, which then runs them in ONNX Runtime and commits
// the inputs and ONNX Runtime's outputs for test_export.cpp.
#include <cstdio>

#include "export_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: onnx-make-exported DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    for (const auto& c : export_models::all_cases()) {
      ember::onnx::save(c.fn, c.inputs, c.named, dir + "/" + c.name + ".onnx");
      for (size_t i = 0; i < c.inputs.size(); ++i)
        ember::serialize::save_npy(dir + "/" + c.name + "_input_" + std::to_string(i) + ".npy", c.inputs[i]);
      std::printf("%s: %zu inputs\n", c.name.c_str(), c.inputs.size());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnx-make-exported: %s\n", e.what());
    return 1;
  }
  return 0;
}
