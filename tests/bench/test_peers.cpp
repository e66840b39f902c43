// The peer plumbing of ember-bench that needs no peer installed: the child-process
// runner every peer script goes through (torch_peer.h) and the ONNX Runtime peer's
// output-sum check and record name (ort_peer.h).
#include <catch2/catch.hpp>

#include "bench/ort_peer.h"
#include "bench/torch_peer.h"

using ember::bench::ort_peer_name;
using ember::bench::ort_sums_agree;
using ember::bench::run_json_child;

TEST_CASE("bench peers: a child's result is the last line of JSON it prints", "[bench]") {
  std::string why;
  const auto j = run_json_child({"/bin/sh", "-c", "echo warming up; echo '{\"a\": 1}'; echo '{\"a\": 2}'; echo done"},
                                {}, &why);
  REQUIRE(j);
  CHECK((*j)["a"] == 2);

  // The overrides reach the child's environment.
  const auto env = run_json_child({"/bin/sh", "-c", "echo \"{\\\"v\\\": \\\"$EMBER_TEST_VAR\\\"}\""},
                                  {{"EMBER_TEST_VAR", "x1"}}, &why);
  REQUIRE(env);
  CHECK((*env)["v"] == "x1");

  CHECK_FALSE(run_json_child({"/bin/sh", "-c", "echo '{}'; exit 3"}, {}, &why));
  CHECK(why.find("exited with status 3") != std::string::npos);
  CHECK_FALSE(run_json_child({"/bin/sh", "-c", "echo no json here"}, {}, &why));
  CHECK(why.find("printed no JSON line") != std::string::npos);
  CHECK_FALSE(run_json_child({"/no/such/program"}, {}, &why));
  CHECK(why.rfind("cannot run /no/such/program", 0) == 0);
}

TEST_CASE("bench peers: onnxruntime's output sums must match Ember's to 1e-4 of the absolute sum", "[bench]") {
  const nlohmann::json run = {{"output_sum", 374.81248}, {"output_abs_sum", 597.35367}, {"ort", "1.30.0"}};
  std::string why;
  CHECK(ort_sums_agree(374.8124786, 597.3536674, run, &why));
  CHECK(ort_sums_agree(374.81248 + 0.05, 597.35367, run, &why));  // tolerance 0.0597
  CHECK_FALSE(ort_sums_agree(374.81248 + 0.07, 597.35367, run, &why));
  CHECK(why.rfind("ember's output sums (374.882480, 597.353670) differ from onnxruntime's", 0) == 0);
  CHECK_FALSE(ort_sums_agree(374.81248, -597.35367, run, &why));
  // Near zero the tolerance is absolute: 1e-4.
  const nlohmann::json tiny = {{"output_sum", 0.0}, {"output_abs_sum", 0.0}};
  CHECK(ort_sums_agree(5e-5, 5e-5, tiny, &why));
  CHECK_FALSE(ort_sums_agree(2e-4, 2e-4, tiny, &why));
}

TEST_CASE("bench peers: onnxruntime's record name carries the version it reported", "[bench]") {
  const nlohmann::json run = {{"ort", "1.31.2"}};
  CHECK(ort_peer_name(run, false, false) == "onnxruntime-1.31");
  CHECK(ort_peer_name(std::nullopt, false, false) == "onnxruntime-1.30");
  CHECK(ort_peer_name(std::nullopt, true, false) == "onnxruntime-1.30 (absent)");
  CHECK(ort_peer_name(run, false, true) == "onnxruntime-1.31 (failed)");
}
