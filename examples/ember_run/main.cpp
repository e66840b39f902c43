// ember-run: runs an ONNX model on inputs from files, the way a user tries a
// model before embedding it.
//
//   ember-run model.onnx --input x.npy [--input y.npy ...] [--output out.npy ...]
//             [--expect want.npy ...] [--device cuda] [--threads N] [--int8] [--bench [--runs N]]
//
// One --input per graph input and one --output per graph output, in graph
// order; inputs may be NumPy .npy files or serialized ONNX TensorProto (.pb)
// files. Without --output each output is printed. --expect compares the outputs
// with reference files within ONNX's test tolerance (|got - want| <= atol +
// rtol |want|) and fails when they differ. --int8 runs MatMul and Gemm with
// constant weights as int8 Linears. --bench prints latency percentiles.
// Any failure prints "ember-run: <message>" and exits 1 (2 for a bad command line).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "ember.h"

using namespace ember;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor read_tensor(const std::string& path) {
  if (ends_with(path, ".pb")) return onnx::load_tensor(path);
  return serialize::load_npy(path);
}

std::string names(const std::vector<onnx::ValueInfo>& v) {
  std::string s;
  for (const auto& i : v) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

// Empty when `got` matches `want`; otherwise the first difference.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  auto g = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  auto w = want.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])))
      return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
  }
  return "";
}

int run(int argc, char** argv) {
  CLI::App app{"ember-run: run an ONNX model on inputs from .npy or .pb files"};
  std::string model_path, device_name = "cpu";
  std::vector<std::string> inputs, outputs, expects;
  bool bench = false, int8 = false;
  int runs = 100, threads = 0;
  double rtol = 1e-3, atol = 1e-7;
  app.add_option("model", model_path, "the .onnx file")->required();
  app.add_option("--input", inputs, "an input (.npy or .pb), one per graph input, in order");
  app.add_option("--output", outputs, "where to write an output (.npy), one per graph output, in order");
  app.add_option("--expect", expects, "a reference output (.npy or .pb) to compare with, one per graph output");
  app.add_option("--rtol", rtol, "relative tolerance of --expect")->capture_default_str();
  app.add_option("--atol", atol, "absolute tolerance of --expect")->capture_default_str();
  app.add_option("--device", device_name, "cpu or cuda")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (default: Ember's default)");
  app.add_flag("--bench", bench, "time repeated runs and print latency percentiles");
  app.add_flag("--int8", int8, "run MatMul/Gemm with constant weights as int8 Linears (onnx::quantize_dynamic)");
  app.add_option("--runs", runs, "timed runs for --bench")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (bench && runs < 1) throw ValueError("--runs must be at least 1");
  if (threads > 0) set_num_threads(threads);
  Device device(device_name);
  onnx::Model model = onnx::load(model_path, device);
  if (int8) {
    size_t rewritten = 0;
    model = onnx::quantize_dynamic(model, &rewritten);
    std::cerr << "ember-run: " << rewritten << " MatMul/Gemm steps run in int8\n";
  }
  if (inputs.size() != model.inputs().size())
    throw ValueError("the model has " + std::to_string(model.inputs().size()) + " inputs (" + names(model.inputs()) +
                     ") but " + std::to_string(inputs.size()) + " --input were given");
  if (!outputs.empty() && outputs.size() != model.outputs().size())
    throw ValueError("the model has " + std::to_string(model.outputs().size()) + " outputs (" +
                     names(model.outputs()) + ") but " + std::to_string(outputs.size()) + " --output were given");
  if (!expects.empty() && expects.size() != model.outputs().size())
    throw ValueError("the model has " + std::to_string(model.outputs().size()) + " outputs (" +
                     names(model.outputs()) + ") but " + std::to_string(expects.size()) + " --expect were given");
  std::vector<Tensor> xs;
  for (const auto& p : inputs) xs.push_back(read_tensor(p).to(device));
  std::vector<Tensor> ys = model.run(xs);

  for (size_t i = 0; i < outputs.size(); ++i) serialize::save_npy(outputs[i], ys[i]);
  if (outputs.empty() && expects.empty())
    for (size_t i = 0; i < ys.size(); ++i)
      std::cout << model.outputs()[i].name << ": " << dtype_name(ys[i].dtype()) << " " << shape_str(ys[i].shape())
                << "\n" << ys[i].cpu().str() << "\n";
  int mismatches = 0;
  for (size_t i = 0; i < expects.size(); ++i) {
    std::string diff = compare(ys[i], read_tensor(expects[i]), rtol, atol);
    if (!diff.empty()) {
      std::cerr << "ember-run: output '" << model.outputs()[i].name << "' differs from " << expects[i] << ": " << diff
                << "\n";
      ++mismatches;
    }
  }
  if (!expects.empty() && !mismatches) std::cout << "outputs match " << expects.size() << " reference(s)\n";

  if (bench) {
    for (int w = 0; w < std::max(runs / 10, 3); ++w) model.run(xs);
    std::vector<double> us;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      auto out = model.run(xs);
      if (device.is_cuda()) out[0].cpu();  // wait for the device
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    auto pct = [&](double p) { return us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))]; };
    std::printf("latency over %d runs (us): min %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d threads, %s)\n",
                runs, us.front(), pct(0.5), pct(0.9), pct(0.99), us.back(), get_num_threads(), cpu_kernels().c_str());
  }
  return mismatches ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ember-run: " << e.what() << "\n";
    return 1;
  }
}
