// Printing: Tensor::str() and operator<< against PyTorch 1.13's repr() for the
// cases in print_cases.txt (written by make_print_cases.py; PyTorch is not needed
// here). Each case is rebuilt from its exact values and must print character for
// character the same, `dtype=torch.x` reading `dtype=ember.x`.
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "support/reference.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/ in the source tree (see tests/meson.build)"
#endif

using namespace ember;

namespace {

struct PrintCase {
  std::string name, dtype, transform, device;
  Shape shape;
  std::vector<double> values;
  std::string expected;
};

std::string rest(const std::string& line, const std::string& key) {
  REQUIRE(line.rfind(key + " ", 0) == 0);
  return line.substr(key.size() + 1);
}

std::vector<PrintCase> load_cases() {
  const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/tensor/print_cases.txt";
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::vector<PrintCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    PrintCase c;
    c.name = rest(line, "case");
    std::getline(in, line);
    c.dtype = rest(line, "dtype");
    std::getline(in, line);
    std::istringstream shape(line.substr(5));
    for (int64_t d; shape >> d;) c.shape.push_back(d);
    std::getline(in, line);
    c.transform = rest(line, "transform");
    std::getline(in, line);
    c.device = rest(line, "device");
    std::getline(in, line);
    std::istringstream values(line.substr(6));
    for (std::string v; values >> v;) c.values.push_back(std::strtod(v.c_str(), nullptr));
    std::getline(in, line);
    const int lines = std::stoi(rest(line, "expected"));
    for (int i = 0; i < lines; ++i) {
      std::getline(in, line);
      c.expected += (i ? "\n" : "") + line;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

TEST_CASE("tensors print exactly as PyTorch 1.13 prints them", "[print]") {
  const auto cases = load_cases();
  REQUIRE(cases.size() >= 60);
  for (const PrintCase& c : cases) {
    INFO("case: " << c.name);
    const DType dt = parse_dtype(c.dtype);
    Tensor t;
    if (c.device == "meta") {
      t = empty(c.shape, TensorOptions(dt, kMeta));
    } else {
      REQUIRE(static_cast<int64_t>(c.values.size()) == ref::numel(c.shape));
      t = ref::make(c.shape, dt, c.values);
    }
    if (c.transform == "t") t = t.t();
    CHECK(t.str() == c.expected);
    std::ostringstream os;
    os << t;
    CHECK(os.str() == c.expected);
  }
}

TEST_CASE("printing reads views through their strides", "[print]") {
  // The same values printed from a contiguous tensor and from a stepped, offset view.
  Tensor base = ref::make({6, 2}, kFloat32, {9, 9, 1.5, -2, 9, 9, 3, 4.25, 9, 9, 0, 1});
  Tensor view = base.slice(0, 1, std::nullopt, 2);
  CHECK(view.str() == "tensor([[ 1.5000, -2.0000],\n        [ 3.0000,  4.2500],\n        [ 0.0000,  1.0000]])");
  CHECK(base.expand({2, 6, 2})[1][5].str() == "tensor([0., 1.])");
}
