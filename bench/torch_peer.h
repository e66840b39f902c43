// PyTorch as the peer of the train and infer suites: runs bench/peers/torch_seed_net.py
// under /usr/bin/python3 in a child process, in PyTorch's best CPU configuration,
// and returns the one line of JSON it prints; the child-process runner under it
// serves every peer script (the onnx suite's ONNX Runtime peer too). Also the
// process-memory probes, so that Ember's and a peer's peak RSS are measured alike.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ember::bench {

// Whether `/usr/bin/python3 -c "import torch"` succeeds (asked once, cached) and
// the peer script exists; otherwise why not, for the "peer: none" line.
bool torch_peer_available(std::string* why = nullptr);

// Runs the script with `args` (e.g. {"train", "--batch-sizes", "100,1000"}) and
// --threads `threads`, with torch.set_num_threads(threads), OMP_NUM_THREADS=threads,
// OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE=SkylakeX (avx512f) or Haswell (avx2).
// The parsed JSON, or nullopt with *why set when the child fails.
// `script` names another peer script in bench/peers/ (the quant suite's).
std::optional<nlohmann::json> run_torch_peer(const std::vector<std::string>& args, int threads,
                                             std::string* why, const std::string& script = "torch_seed_net.py");

// Runs argv (argv[0] a path) in a child process whose environment is ours with
// `overrides` replaced, its stderr on ours, and returns the last line of its stdout
// that parses as a JSON object; nullopt with *why set when it cannot run, exits
// non-zero or prints no such line. Every peer script goes through this.
std::optional<nlohmann::json> run_json_child(const std::vector<std::string>& argv,
                                             const std::map<std::string, std::string>& overrides,
                                             std::string* why);

// The environment the peer runs in, for the suite's header line.
std::string torch_peer_environment(int threads);

// Peak resident memory of this process, both sides measured the same way:
// reset_peak_rss() sets the kernel's high-water mark (VmHWM) to the current RSS
// by writing 5 to /proc/self/clear_refs (Linux >= 4.0); false where that is not
// allowed, and then peak_rss_mib() is the whole process's peak since it started.
bool reset_peak_rss();
double peak_rss_mib();
double current_rss_mib();

}  // namespace ember::bench
