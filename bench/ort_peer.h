// ONNX Runtime as a peer of the onnx and infer suites: bench/peers/ort_bench.js run
// by node (onnxruntime-node, CPU provider) in a child process, one model at one
// batch size per run, intra-op threads = the bench's --threads. One place for how
// node and the npm package are found, so that both suites say the same thing when
// the peer is missing.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ember::bench {

// "" when the peer can run; otherwise why not (node not on PATH, or the package
// not installed in bench/peers/ort/node_modules: scripts/install-ort), for the
// suite's "peer: none" line.
std::string ort_peer_missing();

// The node executable the peer runs under (first on PATH), "" when there is none.
const std::string& ort_peer_node();

// Runs ort_bench.js on `model` with the rows of the TensorProto `input` repeated
// cyclically up to `batch` rows; `warmup` untimed calls, then `iters` timed ones.
// The script's JSON (median_us, p10_us, p90_us, p99_us, api_median_us,
// output_sum, output_abs_sum, ort: the package version), or nullopt with *why set.
std::optional<nlohmann::json> run_ort_peer(const std::string& model, const std::string& input, int64_t batch,
                                           int threads, int warmup, int iters, std::string* why);

// The peer's name in records: "onnxruntime-1.30" (the version the last run
// reported, else the pinned one), with " (absent)" or " (failed)" appended.
std::string ort_peer_name(const std::optional<nlohmann::json>& last_run, bool absent, bool failed);

// Whether Ember's output sums (of all values and of their absolute values) agree
// with those the peer reported, to 1e-4 of the absolute sum: the check that both
// sides computed the same thing. On disagreement *why says both pairs.
bool ort_sums_agree(double sum, double abs_sum, const nlohmann::json& peer_run, std::string* why);

}  // namespace ember::bench
