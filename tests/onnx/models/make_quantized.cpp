// onnx-make-quantized IN.onnx OUT.onnx [TENSOR.pb TENSOR.npy]: rewrites a float model the way ONNX
// Runtime's dynamic quantization (onnxruntime.quantization.quantize_dynamic)
// does, so that Ember's quantized ops can be tested and benchmarked on the graphs
// people actually ship. Every Conv with a constant weight becomes ConvInteger
// between the same nodes (quantize_conv below); every Gemm (transA 0, transB 1, alpha and beta 1) and
// MatMul with a constant 2-D float32 weight becomes
//   DynamicQuantizeLinear(x) -> x_q, x_scale, x_zero
//   MatMulInteger(x_q, W_q, x_zero, 0) -> Cast(float) -> Mul(x_scale * W_scale) [-> Add(C)]
// with W quantized per output column, symmetric, to int8 (W_scale = max |W[:, j]| / 127).
// Made models are committed (tests/onnx/models/mlp_int8.onnx, seed_net_int8.onnx) with ONNX Runtime's
// outputs for them (make_quantized.sh). The optional pair converts an input from
// ONNX's tensor file to .npy, which the ONNX Runtime runner reads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ember.h"
#include "onnx/onnx_pb.h"

namespace {

const ::onnx::TensorProto* find_initializer(const ::onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<float> floats_of(const ::onnx::TensorProto& t) {
  if (t.has_raw_data()) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
    return v;
  }
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

int64_t int_attr(const ::onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

float float_attr(const ::onnx::NodeProto& n, const std::string& name, float fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return fallback;
}

::onnx::NodeProto make_node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  ::onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(out[0] + "_" + op);
  for (auto& s : in) n.add_input(s);
  for (auto& s : out) n.add_output(s);
  return n;
}

template <class T>
void add_initializer(::onnx::GraphProto& g, const std::string& name, int elem, std::vector<int64_t> dims,
                     const std::vector<T>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}


void add_cast_to_float(std::vector<::onnx::NodeProto>& nodes, const std::string& in, const std::string& out) {
  auto cast = make_node("Cast", {in}, {out});
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::FLOAT);
  nodes.push_back(cast);
}

// A Conv with a constant float32 weight W [M, C / group, kH, kW] becomes
//   DynamicQuantizeLinear(x) -> ConvInteger(x_q, W_q, x_zero, 0) -> Cast(float)
//   -> Mul(x_scale * W_scale) [-> Add(B as [M, 1, 1])]
// with W quantized per output channel, symmetric, to int8; the Conv's attributes
// carry over. Returns 1, or 0 (the node kept as it is) for any other Conv.
int quantize_conv(::onnx::GraphProto& g, const ::onnx::NodeProto& n, std::vector<::onnx::NodeProto>& nodes) {
  const ::onnx::TensorProto* w = find_initializer(g, n.input(1));
  const ::onnx::TensorProto* b = n.input_size() > 2 && !n.input(2).empty() ? find_initializer(g, n.input(2)) : nullptr;
  if (!w || w->data_type() != ::onnx::TensorProto::FLOAT || w->dims_size() != 4 ||
      (n.input_size() > 2 && !n.input(2).empty() && !b)) {
    nodes.push_back(n);
    return 0;
  }
  const std::vector<float> wv = floats_of(*w);
  const int64_t m = w->dims(0), per = int64_t(wv.size()) / m;
  std::vector<float> scale(static_cast<size_t>(m));
  std::vector<int8_t> q(wv.size());
  for (int64_t o = 0; o < m; ++o) {
    float mx = 0;
    for (int64_t i = 0; i < per; ++i) mx = std::max(mx, std::fabs(wv[size_t(o * per + i)]));
    const float s = mx > 0 ? mx / 127.0f : 1.0f;
    scale[size_t(o)] = s;
    for (int64_t i = 0; i < per; ++i)
      q[size_t(o * per + i)] = int8_t(std::lround(std::min(127.0f, std::max(-127.0f, std::nearbyint(wv[size_t(o * per + i)] / s)))));
  }
  const std::string base = n.output(0);
  add_initializer(g, base + "_W_q", ::onnx::TensorProto::INT8, {w->dims(0), w->dims(1), w->dims(2), w->dims(3)}, q);
  add_initializer(g, base + "_W_scale", ::onnx::TensorProto::FLOAT, {m, 1, 1}, scale);
  add_initializer(g, base + "_W_zero", ::onnx::TensorProto::INT8, {}, std::vector<int8_t>{0});
  nodes.push_back(make_node("DynamicQuantizeLinear", {n.input(0)}, {base + "_x_q", base + "_x_scale", base + "_x_zero"}));
  auto conv = make_node("ConvInteger", {base + "_x_q", base + "_W_q", base + "_x_zero", base + "_W_zero"},
                        {base + "_sums"});
  for (const auto& a : n.attribute()) *conv.add_attribute() = a;
  nodes.push_back(conv);
  add_cast_to_float(nodes, base + "_sums", base + "_sums_f");
  nodes.push_back(make_node("Mul", {base + "_x_scale", base + "_W_scale"}, {base + "_scale"}));
  nodes.push_back(make_node("Mul", {base + "_sums_f", base + "_scale"}, {b ? base + "_scaled" : base}));
  if (b) {
    add_initializer(g, base + "_B", ::onnx::TensorProto::FLOAT, {m, 1, 1}, floats_of(*b));
    nodes.push_back(make_node("Add", {base + "_scaled", base + "_B"}, {base}));
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: onnx-make-quantized IN.onnx OUT.onnx [TENSOR.pb TENSOR.npy]\n");
    return 2;
  }
  ::onnx::ModelProto model;
  std::ifstream in(argv[1], std::ios::binary);
  if (!model.ParseFromIstream(&in)) {
    std::fprintf(stderr, "onnx-make-quantized: %s does not parse\n", argv[1]);
    return 1;
  }
  for (auto& op : *model.mutable_opset_import())
    if (op.domain().empty() && op.version() < 11) op.set_version(11);  // DynamicQuantizeLinear
  ::onnx::GraphProto& g = *model.mutable_graph();
  std::vector<::onnx::NodeProto> nodes;
  int rewritten = 0;
  for (const auto& n : g.node()) {
    if (n.op_type() == "Conv") {
      rewritten += quantize_conv(g, n, nodes);
      continue;
    }
    const bool gemm = n.op_type() == "Gemm", matmul = n.op_type() == "MatMul";
    const ::onnx::TensorProto* w = (gemm || matmul) ? find_initializer(g, n.input(1)) : nullptr;
    if (!w || w->data_type() != ::onnx::TensorProto::FLOAT || w->dims_size() != 2 ||
        (gemm && (int_attr(n, "transA", 0) != 0 || int_attr(n, "transB", 0) != 1 ||
                  float_attr(n, "alpha", 1) != 1 || float_attr(n, "beta", 1) != 1))) {
      nodes.push_back(n);
      continue;
    }
    // W as [K, N] (Gemm's transB weight is [N, K]).
    const std::vector<float> wv = floats_of(*w);
    const int64_t rows = w->dims(0), cols = w->dims(1);
    const int64_t k = gemm ? cols : rows, n_out = gemm ? rows : cols;
    auto at = [&](int64_t p, int64_t j) { return gemm ? wv[size_t(j * cols + p)] : wv[size_t(p * cols + j)]; };
    std::vector<float> scale(static_cast<size_t>(n_out));
    std::vector<int8_t> q(static_cast<size_t>(k * n_out));
    for (int64_t j = 0; j < n_out; ++j) {
      float m = 0;
      for (int64_t p = 0; p < k; ++p) m = std::max(m, std::fabs(at(p, j)));
      const float s = m > 0 ? m / 127.0f : 1.0f;
      scale[size_t(j)] = s;
      for (int64_t p = 0; p < k; ++p)
        q[size_t(p * n_out + j)] = int8_t(std::lround(std::min(127.0f, std::max(-127.0f, std::nearbyint(at(p, j) / s)))));
    }
    const std::string base = n.output(0);
    add_initializer(g, base + "_W_q", ::onnx::TensorProto::INT8, {k, n_out}, q);
    add_initializer(g, base + "_W_scale", ::onnx::TensorProto::FLOAT, {n_out}, scale);
    add_initializer(g, base + "_W_zero", ::onnx::TensorProto::INT8, {}, std::vector<int8_t>{0});
    nodes.push_back(make_node("DynamicQuantizeLinear", {n.input(0)}, {base + "_x_q", base + "_x_scale", base + "_x_zero"}));
    nodes.push_back(make_node("MatMulInteger", {base + "_x_q", base + "_W_q", base + "_x_zero", base + "_W_zero"},
                              {base + "_sums"}));
    add_cast_to_float(nodes, base + "_sums", base + "_sums_f");
    nodes.push_back(make_node("Mul", {base + "_x_scale", base + "_W_scale"}, {base + "_scale"}));
    const bool bias = gemm && n.input_size() > 2 && !n.input(2).empty();
    nodes.push_back(make_node("Mul", {base + "_sums_f", base + "_scale"}, {bias ? base + "_scaled" : base}));
    if (bias) nodes.push_back(make_node("Add", {base + "_scaled", n.input(2)}, {base}));
    ++rewritten;
  }
  // Drop the float weights that no node reads any more.
  std::map<std::string, int> uses;
  for (const auto& n : nodes)
    for (const auto& s : n.input()) ++uses[s];
  auto* inits = g.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i)
    if (!uses.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = n;
  std::ofstream out(argv[2], std::ios::binary);
  if (!model.SerializeToOstream(&out)) {
    std::fprintf(stderr, "onnx-make-quantized: cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("%s: %d layers quantized\n", argv[2], rewritten);
  if (argc == 5) ember::serialize::save_npy(argv[4], ember::onnx::load_tensor(argv[3]));
  return 0;
}
