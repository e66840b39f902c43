// Running ONNX Runtime's bench script (ort_peer.h) through the child-process runner
// that every peer uses (torch_peer.h).
#include "bench/ort_peer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "bench/torch_peer.h"

namespace ember::bench {
namespace {

const std::string kOrtScript = std::string(EMBER_BENCH_SOURCE_DIR) + "/peers/ort_bench.js";
const std::string kOrtPackage = std::string(EMBER_BENCH_SOURCE_DIR) + "/peers/ort/node_modules/onnxruntime-node";

}  // namespace

const std::string& ort_peer_node() {
  static const std::string node = [] {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin");
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && access((dir + "/node").c_str(), X_OK) == 0) return dir + "/node";
    return std::string();
  }();
  return node;
}

std::string ort_peer_missing() {
  if (ort_peer_node().empty()) return "node not found on PATH (scripts/install-deps installs nodejs)";
  if (access((kOrtPackage + "/package.json").c_str(), R_OK) != 0)
    return kOrtPackage + " not found (scripts/install-ort installs it)";
  return "";
}

std::optional<nlohmann::json> run_ort_peer(const std::string& model, const std::string& input, int64_t batch,
                                           int threads, int warmup, int iters, std::string* why) {
  auto j = run_json_child({ort_peer_node(), kOrtScript, "--model", model, "--input", input, "--batch",
                           std::to_string(batch), "--threads", std::to_string(threads), "--warmup",
                           std::to_string(warmup), "--iters", std::to_string(iters)},
                          {}, why);
  if (j && !j->contains("median_us")) {
    *why = "ort_bench.js printed no median_us";
    return std::nullopt;
  }
  return j;
}

std::string ort_peer_name(const std::optional<nlohmann::json>& last_run, bool absent, bool failed) {
  std::string name = "onnxruntime-1.30";
  if (last_run && last_run->contains("ort")) name = "onnxruntime-" + (*last_run)["ort"].get<std::string>().substr(0, 4);
  if (absent) name += " (absent)";
  else if (failed) name += " (failed)";
  return name;
}

bool ort_sums_agree(double sum, double abs_sum, const nlohmann::json& peer_run, std::string* why) {
  const double os = peer_run["output_sum"].get<double>(), oa = peer_run["output_abs_sum"].get<double>();
  const double tol = 1e-4 * std::max(1.0, oa);
  if (std::abs(sum - os) <= tol && std::abs(abs_sum - oa) <= tol) return true;
  *why = "ember's output sums (" + std::to_string(sum) + ", " + std::to_string(abs_sum) +
         ") differ from onnxruntime's (" + std::to_string(os) + ", " + std::to_string(oa) + ")";
  return false;
}

}  // namespace ember::bench
