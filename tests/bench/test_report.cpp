// ember-bench --report: the Markdown table's ratios (worked out by hand here) and
// the SVG chart's bars and escaping.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "bench/report.h"

using ember::bench::Record;

namespace {

std::vector<Record> sample() {
  return {
      // a time: Ember 30 us, peer 20 us, floor 10 us -> 1.5x the peer, 3x the floor
      {"infer", "seed batch 1", "us (lower is better)", 30, "onnxruntime-1.30", 20.0, 10.0},
      // a rate: Ember 40 GB/s, peer 80, floor 100 -> 2x slower than the peer, 2.5x the floor
      {"infer", "copy <1 MiB>", "GB/s", 40, "torch|1.13", 80.0, 100.0},
      // no peer, no floor
      {"softmax", "rows", "GB/s", 12, "", std::nullopt, std::nullopt},
  };
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("bench report: tables with the ratios, one chart per suite", "[bench]") {
  ember::bench::RunContext ctx{"Test CPU, 2 cores online", "ember test cpu_kernels=avx2", "2026-12-01T00:00:00Z", 2,
                               0.5, 1.25};
  const auto dir = std::filesystem::temp_directory_path() / ("ember_report_" + std::to_string(::getpid()));
  std::string err;
  REQUIRE(ember::bench::write_report(dir.string(), sample(), ctx, &err));
  const std::string md = read(dir / "report.md");
  CHECK(md.find("| seed batch 1 | us (lower is better) | 30 | onnxruntime-1.30 | 20 | 10 | 1.5 | 3 |") !=
        std::string::npos);
  CHECK(md.find("| copy <1 MiB> | GB/s | 40 | torch\\|1.13 | 80 | 100 | 2 | 2.5 |") != std::string::npos);
  CHECK(md.find("| rows | GB/s | 12 | - | - | - | - | - |") != std::string::npos);
  CHECK(md.find("![infer](infer.svg)") != std::string::npos);
  CHECK(md.find("load average: 0.5 at the start, 1.25 at the end") != std::string::npos);

  const std::string svg = read(dir / "infer.svg");
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  // background + 3 legend swatches + 3 bars for each of the two cases
  CHECK(count(svg, "<rect") == 1 + 3 + 6);
  CHECK(svg.find("copy &lt;1 MiB&gt; (GB/s)") != std::string::npos);
  CHECK(svg.find("<1 MiB>") == std::string::npos);
  // each case's largest value spans the full bar width (380), the others in proportion
  CHECK(svg.find("width=\"380\" height=\"12\" fill=\"#d9480f\"") != std::string::npos);  // Ember's 30 us
  CHECK(svg.find("width=\"253\" height=\"12\" fill=\"#1c7ed6\"") != std::string::npos);  // 20/30 of it
  // the peer's bar says which peer it is (a case may have one record per peer)
  CHECK(svg.find("class=\"value\">20 onnxruntime-1.30</text>") != std::string::npos);
  CHECK(svg.find("class=\"value\">30</text>") != std::string::npos);  // Ember's value alone
  CHECK(svg.find("Test CPU, 2 cores online; 2 threads") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "softmax.svg"));
  std::filesystem::remove_all(dir);

  CHECK_FALSE(ember::bench::write_report("/proc/no-such-folder/x", sample(), ctx, &err));
  CHECK(err.rfind("/proc/no-such-folder/x: cannot create the report folder", 0) == 0);
}
