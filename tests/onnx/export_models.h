// The models onnx::save is checked with, rebuilt the same way by the program that
// writes the ONNX Runtime reference data (make_exported.cpp, run by
// tests/onnx/exported/make.sh) and by the tests that compare with it
// (test_export.cpp): fixed seeds, fixed inputs. "network" is the seed CNN and
// "mlp" the MLP train_fashion_mnist trains (its own make_model); "zoo" is a
// function of two inputs that goes through every op family the exporter lowers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember.h"
#include "models.h"  // examples/train_fashion_mnist: make_model("network" | "mlp")

namespace export_models {

using namespace ember;

struct ExportCase {
  std::string name;
  onnx::TracedFunction fn;
  std::vector<std::pair<std::string, Tensor>> named;  // parameters and buffers
  std::vector<Tensor> inputs;                         // the committed example inputs
  std::shared_ptr<nn::Module> module;                 // set for the two modules
};

inline Tensor image_batch(int64_t n, const Shape& row, uint64_t seed) {
  Generator gen(seed);
  Shape shape{n};
  shape.insert(shape.end(), row.begin(), row.end());
  return rand(shape, {}, &gen);
}

inline ExportCase module_case(const std::string& name, uint64_t seed) {
  manual_seed(seed);
  auto module = train::make_model(name);
  module->eval();
  nn::NamedTensors named = module->named_parameters();
  for (auto& b : module->named_buffers()) named.push_back(b);
  auto fn = [module](const std::vector<Tensor>& in) { return std::vector<Tensor>{module->forward(in[0])}; };
  return {name, fn, named, {image_batch(4, {1, 28, 28}, seed + 100)}, module};
}

// Every op family onnx::save lowers, in one graph: convolution with groups,
// dilation and padding, both pools, pad (reflect and constant), the elementwise
// rows, reductions, views, cat, where with a constant mask, take with indices
// from a graph input (an embedding), layer norm, softmax, matmul.
inline ExportCase zoo_case() {
  Generator gen(7);
  auto p = [&](const Shape& s) { return randn(s, {}, &gen) * 0.3; };
  std::vector<std::pair<std::string, Tensor>> named = {
      {"conv.weight", p({6, 1, 3, 3})}, {"conv.bias", p({6})},  {"emb.weight", p({11, 8})},
      {"ln.weight", p({8}) + 1.0},      {"ln.bias", p({8})},    {"proj", p({24, 8})},
  };
  auto param = [named](const std::string& n) {
    for (const auto& [k, v] : named)
      if (k == n) return v;
    throw ValueError(n);
  };
  Tensor mask = tensor(std::vector<uint8_t>{1, 0, 1, 1, 0, 1, 0, 0}, {8}).to(kBool);
  onnx::TracedFunction fn = [param, mask](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];    // [N, 3, 8, 8]
    const Tensor& ids = in[1];  // [N, 5] int64
    Tensor c = conv2d(pad(x, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}, PadMode::Reflect), param("conv.weight"),
                      param("conv.bias"), {1, 1}, {2, 2}, {2, 2}, 3);                      // [N, 6, 8, 8]
    Tensor m = std::get<0>(max_pool2d_with_indices(c.relu(), {3, 3}, {2, 2}, {1, 1}));      // [N, 6, 4, 4]
    Tensor a = avg_pool2d(pad(m, {{0, 0}, {0, 0}, {0, 1}, {1, 0}}, PadMode::Constant, 0.5), {2, 2}, {1, 1});
    Tensor f = a.flatten(1).slice(1, 0, 96, 2).slice(1, 0, 24);                            // [N, 96] -> [N, 24]
    Tensor h = matmul(f.gelu(), param("proj"));                                            // [N, 8]
    Tensor e = embedding(param("emb.weight"), ids);                                        // [N, 5, 8]
    Tensor t = layer_norm(e + h.reshape({-1, 1, 8}), {8}, param("ln.weight"), param("ln.bias"));
    Tensor u = where(mask, t.tanh(), t.sigmoid()) * 2.0 - t.erf() / 3.0;
    Tensor v = (u.abs() + 1.0).sqrt().log() + (u.abs() + 0.5).rsqrt() + u.sin() * u.cos() + u.softplus().exp().neg();
    Tensor w = maximum(v, t) - minimum(v, 0.25) + pow(u.abs() + 0.1, 1.5);
    Tensor s = w.softmax(-1) + w.log_softmax(1).permute({0, 2, 1}).permute({0, 2, 1});
    Tensor r = cat({s.sum({1}), s.mean({2}, true).squeeze(2), s.var({1}), s.amax({1}),
                    std::get<0>(w.max(1)), w.norm(2, {1}), w.select(1, 3)},
                   1);                                                                     // [N, 53]
    Tensor g = r.reshape({r.shape()[0], -1, 1}).expand({r.shape()[0], r.shape()[1], 2}).contiguous();
    return std::vector<Tensor>{r, g.amin({2})};
  };
  Generator ig(8);
  std::vector<int64_t> idv;
  for (int i = 0; i < 3 * 5; ++i) idv.push_back((i * 7 + 3) % 11);
  return {"zoo", fn, named, {rand({3, 3, 8, 8}, {}, &ig), tensor(idv, {3, 5})}, nullptr};
}

inline std::vector<ExportCase> all_cases() { return {module_case("network", 1), module_case("mlp", 2), zoo_case()}; }

}  // namespace export_models
