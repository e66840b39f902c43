// The ONNX project's conformance data, run through Ember: every test folder of
// the `node`, `pytorch-converted` and `pytorch-operator` sets holds a model.onnx
// and test_data_set_*/ folders of input_*.pb and output_*.pb tensors. Each
// test's outputs are compared with ONNX's tolerance (|got - want| <= 1e-7 +
// 1e-3 |want|; integers and bools exactly). A model that uses an op or attribute
// Ember does not run is "skipped" with that reason; anything else that differs
// or raises is a failure.
//
//   onnx-conformance [--data DIR] [--set node|pytorch-converted|pytorch-operator]
//                    [--gaps FILE] [--device cpu|cuda|emu] [--list]
//
// The model sets must pass except for the tests named in the gaps file (one
// name per line: the ones docs/onnx.md lists as not yet supported), and a test
// named there that passes is an error too, so the file stays true. Node tests
// must never fail; they may be skipped. Exits 77 when the data is missing (DIR
// defaults to $EMBER_ONNX_TEST_DATA, else Debian's folder) or when --device cuda
// has no CUDA device.
//
// With --device cuda the models are loaded onto the GPU and the same rules hold
// against the same reference outputs. A node test skipped there that passes on
// the CPU (an op or dtype without a CUDA kernel) is listed with its reason as a
// gap of that device; it is not an error, so that one run shows them all.
// --device emu (Ember's accelerator emulated in host memory, tensor/emu.h) runs
// the same device path on any machine: the CPU kernels, but every weight, input
// and output crossing to a device of its own. emu has every CPU kernel, so there
// a test skipped that the CPU passes is an error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

enum class Outcome { Pass, Fail, Skip };

struct Result {
  Outcome outcome;
  std::string detail;
};

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// Empty when equal within tolerance; otherwise what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + " but expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + " but expected " + shape_str(want.shape());
  if (!is_floating(want.dtype())) {
    Tensor g = got.cpu().to(kInt64).contiguous(), w = want.to(kInt64).contiguous();
    auto gv = g.to_vector<int64_t>(), wv = w.to_vector<int64_t>();
    for (size_t i = 0; i < gv.size(); ++i)
      if (gv[i] != wv[i])
        return "element " + std::to_string(i) + " is " + std::to_string(gv[i]) + ", expected " + std::to_string(wv[i]);
    return "";
  }
  auto gv = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  auto wv = want.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i) {
    double g = gv[i], w = wv[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w)))
      return "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

Result run_test(const fs::path& dir, const Device& device) {
  onnx::Model model;
  try {
    model = onnx::load((dir / "model.onnx").string(), device);
  } catch (const NotImplementedError& e) {
    return {Outcome::Skip, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::Fail, std::string("load: ") + e.what()};
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::Fail, "no test_data_set folder"};
  for (const auto& set : sets) {
    std::vector<Tensor> inputs, wants, got;
    try {
      for (const auto& p : numbered(set, "input_")) inputs.push_back(onnx::load_tensor(p.string()));
      for (const auto& p : numbered(set, "output_")) wants.push_back(onnx::load_tensor(p.string()));
      got = model.run(inputs);
    } catch (const NotImplementedError& e) {
      return {Outcome::Skip, e.what()};
    } catch (const std::exception& e) {
      return {Outcome::Fail, set.filename().string() + ": " + e.what()};
    }
    if (got.size() < wants.size())
      return {Outcome::Fail, "returned " + std::to_string(got.size()) + " outputs, expected " +
                                 std::to_string(wants.size())};
    for (size_t i = 0; i < wants.size(); ++i) {
      std::string diff = compare(got[i], wants[i]);
      if (!diff.empty()) return {Outcome::Fail, set.filename().string() + ": output " + std::to_string(i) + ": " + diff};
    }
  }
  return {Outcome::Pass, ""};
}

}  // namespace

int main(int argc, char** argv) {
  const char* data_env = std::getenv("EMBER_ONNX_TEST_DATA");
  std::string data = data_env && *data_env ? data_env : "/usr/share/libonnx-testdata/data", gaps_file;
  std::string device_name = "cpu";
  std::vector<std::string> sets;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--set" && i + 1 < argc) sets.push_back(argv[++i]);
    else if (a == "--gaps" && i + 1 < argc) gaps_file = argv[++i];
    else if (a == "--device" && i + 1 < argc) device_name = argv[++i];
    else if (a == "--list") list = true;
    else {
      std::cerr << "usage: onnx-conformance [--data DIR] [--set NAME]... [--gaps FILE] [--device cpu|cuda|emu] [--list]\n";
      return 2;
    }
  }
  if (device_name != "cpu" && device_name != "cuda" && device_name != "emu") {
    std::cerr << "onnx-conformance: --device must be cpu, cuda or emu, got '" << device_name << "'\n";
    return 2;
  }
  if (device_name == "cuda" && !cuda::is_available()) {
    std::cout << "no CUDA device (ember::cuda::is_available() is false): skipped\n";
    return 77;
  }
  const Device device = device_name == "cpu" ? kCPU : Device(device_name + ":0");
  if (sets.empty()) sets = {"node", "pytorch-converted", "pytorch-operator"};
  if (!fs::exists(data)) {
    std::cout << "ONNX test data not found at " << data << " (Debian package libonnx-testdata): skipped\n";
    return 77;
  }
  std::set<std::string> gaps;
  if (!gaps_file.empty()) {
    std::ifstream in(gaps_file);
    if (!in) {
      std::cerr << "cannot read " << gaps_file << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') gaps.insert(line.substr(0, line.find(' ')));
  }
  set_num_threads(2);
  int bad = 0;
  for (const auto& set : sets) {
    std::vector<fs::path> tests;
    for (const auto& entry : fs::directory_iterator(fs::path(data) / set))
      if (fs::exists(entry.path() / "model.onnx")) tests.push_back(entry.path());
    std::sort(tests.begin(), tests.end());
    std::map<Outcome, int> count;
    std::map<std::string, int> skip_reasons;
    std::vector<std::string> device_gaps;  // skipped on the device, passed on the CPU
    for (const auto& t : tests) {
      std::string name = t.filename().string();
      Result r = run_test(t, device);
      bool model_set = set != "node";
      bool device_gap = !model_set && r.outcome == Outcome::Skip && !device.is_cpu() &&
                        run_test(t, kCPU).outcome == Outcome::Pass;
      if (device_gap) device_gaps.push_back(name + ": " + r.detail);
      bool known_gap = gaps.count(name) != 0;
      ++count[r.outcome];
      const char* word = r.outcome == Outcome::Pass ? "pass" : r.outcome == Outcome::Fail ? "FAIL" : "skip";
      bool error = r.outcome == Outcome::Fail && !(model_set && known_gap);
      if (model_set && r.outcome == Outcome::Skip && !known_gap) error = true;
      if (model_set && r.outcome == Outcome::Pass && known_gap) {
        error = true;
        r.detail = "passes but is listed as a gap";
      }
      if (r.outcome == Outcome::Skip) {
        // "ONNX op 'Foo' (node 'n', opset 13): X is not supported" -> "Foo: X is not supported"
        std::string reason = r.detail;
        auto colon = reason.find("): ");
        if (reason.rfind("ONNX op '", 0) == 0 && colon != std::string::npos)
          reason = reason.substr(9, reason.find('\'', 9) - 9) + ": " + reason.substr(colon + 3);
        auto type = reason.find("ONNX element type ");
        if (type != std::string::npos) reason = reason.substr(type);
        auto graph_value = reason.find("graph value '");
        if (graph_value != std::string::npos) reason = "a graph value that is not a tensor (sequence, optional)";
        skip_reasons[reason]++;
      }
      if (device_gap && device.type() == DeviceType::Emu) {
        error = true;
        r.detail = "passes on the CPU but skipped on emu: " + r.detail;
      }
      if (error) ++bad;
      if (list || error)
        std::cout << (error ? "ERROR " : "") << set << "/" << name << ": " << word
                  << (r.detail.empty() ? "" : " (" + r.detail + ")") << "\n";
    }
    std::cout << set << (device.is_cpu() ? "" : " on " + device.str()) << ": " << tests.size() << " tests, "
              << count[Outcome::Pass] << " passed, " << count[Outcome::Fail] << " failed, " << count[Outcome::Skip]
              << " skipped";
    if (!device.is_cpu() && set == "node") std::cout << " (" << device_gaps.size() << " of them pass on the CPU)";
    std::cout << "\n";
    for (const auto& gap : device_gaps) std::cout << "  " << device << " gap: " << gap << "\n";
    if (list)
      for (const auto& [reason, k] : skip_reasons) std::cout << "  skipped " << k << ": " << reason << "\n";
  }
  std::cout << (bad ? std::to_string(bad) + " unexpected results\n" : "all results as expected\n");
  return bad ? 1 : 0;
}
