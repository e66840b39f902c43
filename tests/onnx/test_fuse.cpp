// The plan's fused steps (onnx/fuse.cpp): Conv -> Relu -> MaxPool(2x2), Gemm ->
// Relu and an integer product's Cast -> Mul -> Add -> Relu become one step each, whose values are checked against float64 loops over
// the three (or two) ops' definitions and, bit for bit, against the same graph
// with the value between the ops also read as a graph output, which keeps every
// step. Calls the fused op does not cover (auto_pad's uneven padding, outputs
// smaller than a window, a C of another shape) run the original steps, with their
// errors naming their own nodes.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "ember.h"
#include "../support/message_of.h"
#include "model_builder.h"
#include "nn/amp/autocast.h"
#include "../kernels/isa_guard.h"
#include "onnx/plan.h"
#include "onnx/window.h"

using namespace ember;
using namespace ember_test;

namespace {

// A graph output whose rank Ember does not check.
void add_output(::onnx::GraphProto* g, const std::string& name) {
  auto* v = g->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  v->mutable_type()->mutable_tensor_type()->mutable_shape();  // the checker wants one; outputs are not checked
}

void ints_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t i : v) a->add_ints(i);
}

void int_attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void float_attr(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// Random uint8 codes.
Tensor integer_codes_u8(const Shape& shape, std::mt19937& g) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::uniform_int_distribution<int> u(0, 255);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(g);
  return tensor(v, shape).to(kUInt8);
}

std::vector<float> wave(int64_t n, double f, double scale) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(std::sin(f * static_cast<double>(i) + 0.3) * scale));
  return v;
}

// ---- Conv -> Relu -> MaxPool ----

struct ConvBlock {
  int64_t c = 3, c_out = 5, k = 3, stride = 1, pad = 1, dilation = 1, groups = 1;
  bool bias = true;
  std::string auto_pad;              // "" leaves pads explicit
  std::vector<int64_t> pool{2, 2};  // the MaxPool's kernel_shape and strides; {} for no MaxPool
};

std::vector<float> conv_weight(const ConvBlock& s) { return wave(s.c_out * (s.c / s.groups) * s.k * s.k, 0.71, 0.5); }
std::vector<float> conv_bias(const ConvBlock& s) { return wave(s.c_out, 1.3, 0.2); }

// x [N, c, H, W] -> Conv -> Relu (-> MaxPool) -> y; `expose` also makes the values
// between them graph outputs, so that nothing is fused.
std::string conv_block_model(const ConvBlock& s, bool expose) {
  auto m = new_model("conv_block");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {std::string("N"), std::string("C"), std::string("H"), std::string("W")});
  add_initializer(g, "w", {s.c_out, s.c / s.groups, s.k, s.k}, conv_weight(s));
  std::vector<std::string> conv_in{"x", "w"};
  if (s.bias) {
    add_initializer(g, "b", {s.c_out}, conv_bias(s));
    conv_in.push_back("b");
  }
  auto* conv = add_node(g, "Conv", conv_in, {"z"}, "conv");
  ints_attr(conv, "kernel_shape", {s.k, s.k});
  ints_attr(conv, "strides", {s.stride, s.stride});
  ints_attr(conv, "dilations", {s.dilation, s.dilation});
  int_attr(conv, "group", s.groups);
  if (s.auto_pad.empty()) ints_attr(conv, "pads", {s.pad, s.pad, s.pad, s.pad});
  else {
    auto* a = conv->add_attribute();
    a->set_name("auto_pad");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(s.auto_pad);
  }
  if (s.pool.empty()) {
    add_node(g, "Relu", {"z"}, {"y"}, "relu");
    add_output(g, "y");
    if (expose) add_output(g, "z");
    return bytes_of(m);
  }
  add_node(g, "Relu", {"z"}, {"r"}, "relu");
  auto* pool = add_node(g, "MaxPool", {"r"}, {"y"}, "pool");
  ints_attr(pool, "kernel_shape", s.pool);
  ints_attr(pool, "strides", s.pool);
  add_output(g, "y");
  if (expose) {
    add_output(g, "z");
    add_output(g, "r");
  }
  return bytes_of(m);
}

// The block by its definition in float64: y[n][o][i][j] = max over the 2x2 window
// of relu(b[o] + sum w[o][c][ky][kx] x[n][g*cg + c][i*s + ky*d - p][j*s + kx*d - p]),
// or without the pool that relu itself. pad_begin may differ from pad_end (auto_pad).
std::vector<double> conv_block_reference(const ConvBlock& s, const Tensor& xt, int64_t pad_begin, int64_t pad_end) {
  const auto x = xt.to_vector<float>();
  const auto w = conv_weight(s), b = conv_bias(s);
  const int64_t n = xt.size(0), h = xt.size(2), wd = xt.size(3), cg = s.c / s.groups, og = s.c_out / s.groups;
  const int64_t span = s.dilation * (s.k - 1) + 1;
  const int64_t ho = (h + pad_begin + pad_end - span) / s.stride + 1, wo = (wd + pad_begin + pad_end - span) / s.stride + 1;
  const bool pool = !s.pool.empty();
  const int64_t win = pool ? 2 : 1;
  std::vector<double> y;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < s.c_out; ++o)
      for (int64_t pi = 0; pi < ho / win; ++pi)
        for (int64_t pj = 0; pj < wo / win; ++pj) {
          double best = -INFINITY;
          for (int64_t i = win * pi; i < win * pi + win; ++i)
            for (int64_t j = win * pj; j < win * pj + win; ++j) {
              double acc = s.bias ? b[size_t(o)] : 0.0;
              for (int64_t c = 0; c < cg; ++c)
                for (int64_t ky = 0; ky < s.k; ++ky)
                  for (int64_t kx = 0; kx < s.k; ++kx) {
                    const int64_t yy = i * s.stride + ky * s.dilation - pad_begin;
                    const int64_t xx = j * s.stride + kx * s.dilation - pad_begin;
                    if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                    acc += double(w[size_t(((o * cg + c) * s.k + ky) * s.k + kx)]) *
                           x[size_t(((in * s.c + (o / og) * cg + c) * h + yy) * wd + xx)];
                  }
              best = std::max(best, std::max(acc, 0.0));
            }
          y.push_back(best);
        }
  return y;
}

void check_close(const Tensor& got, const std::vector<double>& want) {
  const auto g = got.contiguous().to_vector<float>();
  REQUIRE(g.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(g[i] - want[i]) <= 1e-5 + 1e-5 * std::fabs(want[i]))) ++bad;
  CHECK(bad == 0);
}

// ---- Gemm -> Relu ----

struct GemmBlock {
  int64_t m = 4, k = 6, n = 5;
  bool trans_b = true;
  std::vector<int64_t> c_dims{5};  // {} for no C
  float alpha = 1, beta = 1;
};

std::string gemm_relu_model(const GemmBlock& s, bool expose) {
  auto m = new_model("gemm_relu");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {std::string("M"), std::string("K")});
  add_initializer(g, "B", s.trans_b ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n},
                  wave(s.n * s.k, 0.53, 0.6));
  std::vector<std::string> in{"x", "B"};
  if (!s.c_dims.empty()) {
    int64_t count = 1;
    for (int64_t d : s.c_dims) count *= d;
    add_initializer(g, "C", s.c_dims, wave(count, 0.9, 0.3));
    in.push_back("C");
  }
  auto* gemm = add_node(g, "Gemm", in, {"z"}, "gemm");
  int_attr(gemm, "transB", s.trans_b ? 1 : 0);
  if (s.alpha != 1) float_attr(gemm, "alpha", s.alpha);
  if (s.beta != 1) float_attr(gemm, "beta", s.beta);
  add_node(g, "Relu", {"z"}, {"y"}, "relu");
  add_output(g, "y");
  if (expose) add_output(g, "z");
  return bytes_of(m);
}

// relu(alpha x . B' + beta C) in float64, C broadcast from its shape.
std::vector<double> gemm_relu_reference(const GemmBlock& s, const Tensor& xt) {
  const auto x = xt.to_vector<float>();
  const auto bv = wave(s.n * s.k, 0.53, 0.6);
  int64_t count = 1;
  for (int64_t d : s.c_dims) count *= d;
  const auto cv = wave(count, 0.9, 0.3);
  std::vector<double> y;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < s.k; ++p)
        acc += double(x[size_t(i * s.k + p)]) * bv[size_t(s.trans_b ? j * s.k + p : p * s.n + j)];
      double c = 0;
      if (s.c_dims.size() == 1) c = cv[size_t(s.c_dims[0] == 1 ? 0 : j)];
      if (s.c_dims.size() == 2) c = cv[size_t((s.c_dims[0] == 1 ? 0 : i) * s.c_dims[1] + (s.c_dims[1] == 1 ? 0 : j))];
      y.push_back(std::max(s.alpha * acc + s.beta * c, 0.0));
    }
  return y;
}

}  // namespace

TEST_CASE("onnx fuse: Conv -> Relu (-> MaxPool(2x2)) is one step, equal to the ops apart", "[onnx][fuse]") {
  struct Case {
    const char* what;
    ConvBlock s;
    int64_t n, h, w, pad_begin, pad_end;
  };
  std::vector<Case> cases;
  cases.push_back({"3x3, padding 1, bias", ConvBlock{}, 2, 11, 10, 1, 1});
  ConvBlock grouped;
  grouped.c = 4, grouped.c_out = 6, grouped.groups = 2, grouped.stride = 2, grouped.dilation = 2, grouped.pad = 2;
  grouped.bias = false;
  cases.push_back({"groups 2, stride 2, dilation 2, no bias, odd output", grouped, 3, 13, 12, 2, 2});
  ConvBlock same_upper;
  same_upper.k = 2, same_upper.auto_pad = "SAME_UPPER";  // padding 0 before, 1 after: the ops one by one
  cases.push_back({"SAME_UPPER with an even kernel", same_upper, 1, 8, 7, 0, 1});
  ConvBlock wide;
  wide.c = 16, wide.c_out = 40, wide.k = 5, wide.pad = 0;  // the stride-1 direct kernels' channel share at batch 1
  cases.push_back({"40 channels of one image", wide, 1, 16, 16, 0, 0});
  ConvBlock no_pool;
  no_pool.pool = {};
  cases.push_back({"Conv -> Relu, a batch", no_pool, 3, 9, 8, 1, 1});
  ConvBlock no_pool_wide = wide;
  no_pool_wide.pool = {}, no_pool_wide.pad = 2;
  cases.push_back({"Conv -> Relu, 40 channels of one image", no_pool_wide, 1, 14, 14, 2, 2});
  ConvBlock no_pool_strided = grouped;
  no_pool_strided.pool = {};
  cases.push_back({"Conv -> Relu, strided and grouped (the im2col path)", no_pool_strided, 2, 11, 11, 2, 2});
  ConvBlock no_pool_same = same_upper;
  no_pool_same.pool = {};
  cases.push_back({"Conv -> Relu, SAME_UPPER with an even kernel", no_pool_same, 2, 7, 7, 0, 1});
  ConvBlock lanes;  // weights packed at load (onnx/prepack.cpp): the lane tiles at batch 1, rows shared
  lanes.c = 16, lanes.c_out = 64, lanes.pool = {};
  cases.push_back({"Conv -> Relu, 64 channels of one image (a packed weight)", lanes, 1, 14, 14, 1, 1});
  ConvBlock lanes_grouped = lanes;
  lanes_grouped.groups = 2, lanes_grouped.bias = false;
  cases.push_back({"Conv -> Relu, 2 groups of 32 channels, a batch (a packed weight)", lanes_grouped, 2, 9, 7, 1, 1});
  // The plan keeps only the packed copy (onnx/prepack.cpp): the calls the lane
  // tiles do not take read it too, and so does the Conv node when the fused step
  // runs its nodes one by one (SAME_UPPER with an even kernel pads one side only).
  cases.push_back({"Conv -> Relu, rows too narrow for the lane tiles (a packed weight)", lanes, 2, 5, 3, 1, 1});
  cases.push_back({"Conv -> Relu, one output row of one image (a packed weight)", lanes, 1, 1, 100, 1, 1});
  ConvBlock lanes_same = lanes;
  lanes_same.k = 2, lanes_same.auto_pad = "SAME_UPPER";
  cases.push_back({"Conv -> Relu, SAME_UPPER with an even kernel (a packed weight, the nodes apart)", lanes_same, 2, 6,
                   7, 0, 1});
  ember::testing::IsaGuard guard;
  set_num_threads(2);  // one image's 40 channels are shared out on a team
  for (const Case& c : cases) {
    SECTION(c.what) {
      const Tensor x = randn({c.n, c.s.c, c.h, c.w});
      const auto fused = ember::onnx::load_from_string(conv_block_model(c.s, false));
      const auto apart = ember::onnx::load_from_string(conv_block_model(c.s, true));
      CHECK(fused.num_steps() == 1);
      CHECK(apart.num_steps() == (c.s.pool.empty() ? 2 : 3));
      const Tensor y = fused.run({x})[0];
      check_close(y, conv_block_reference(c.s, x, c.pad_begin, c.pad_end));
      CHECK(y.to_vector<float>() == apart.run({x})[0].to_vector<float>());
      // On a device of its own the fused op runs the three ops there.
      const auto on_emu = ember::onnx::load_from_string(conv_block_model(c.s, false), Device("emu:0"));
      check_close(on_emu.run({x})[0].cpu(), conv_block_reference(c.s, x, c.pad_begin, c.pad_end));
    }
  }
}

TEST_CASE("onnx prepack: a plan packs constant Conv weights the lane tiles use, once, at load", "[onnx][fuse]") {
  // The packed weight is a constant input after X, W and B, on fused and unfused
  // steps alike; the values are tested above (the cases with a packed weight).
  auto packed_inputs = [](const std::string& bytes) {
    const auto plan = ember::onnx::build_plan(bytes, kCPU, "", "<memory>", false);
    std::vector<size_t> counts;
    for (const auto& step : plan->steps) counts.push_back(step.inputs.size());
    return counts;
  };
  ConvBlock lanes;
  lanes.c = 16, lanes.c_out = 64, lanes.pool = {};
  CHECK(packed_inputs(conv_block_model(lanes, false)) == std::vector<size_t>{4});
  CHECK(packed_inputs(conv_block_model(lanes, true)) == std::vector<size_t>{4, 1});  // Conv, then Relu apart
  lanes.bias = false;  // B absent before the packed weight
  CHECK(packed_inputs(conv_block_model(lanes, false)) == std::vector<size_t>{4});
  // Weights no lane tile reads stay as they are: 5 channels, stride 2, and the
  // pooled block (conv2d_relu_pool2x2 has no use for a packed weight).
  CHECK(packed_inputs(conv_block_model(ConvBlock{}, false)) == std::vector<size_t>{3});
  ConvBlock pooled = lanes;
  pooled.pool = {2, 2};
  CHECK(packed_inputs(conv_block_model(pooled, false)) == std::vector<size_t>{2});
  lanes.stride = 2;
  CHECK(packed_inputs(conv_block_model(lanes, false)) == std::vector<size_t>{2});
  // Two Convs of one weight share one packed copy.
  auto m = new_model("shared_weight");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {int64_t{1}, int64_t{32}, int64_t{8}, int64_t{8}});
  add_initializer(g, "w", {32, 32, 3, 3}, wave(32 * 32 * 9, 0.37, 0.2));
  for (const char* name : {"c1", "c2"}) {
    auto* conv = add_node(g, "Conv", {name[1] == '1' ? "x" : "z", "w"}, {name[1] == '1' ? "z" : "y"}, name);
    ints_attr(conv, "pads", {1, 1, 1, 1});
  }
  add_output(g, "y");
  const auto plan = ember::onnx::build_plan(bytes_of(m), kCPU, "", "<memory>", false);
  REQUIRE(plan->steps.size() == 2);
  CHECK(plan->constants.size() == 2);  // the weight and its one packed copy
  CHECK(plan->steps[0].inputs.size() == 4);
  CHECK(plan->steps[1].inputs.size() == 4);
  CHECK(plan->steps[0].inputs[3].index == plan->steps[1].inputs[3].index);
  // Only the packed copy holds the values: the weight is a meta tensor of its shape.
  const Tensor& plain = plan->constants[plan->steps[0].inputs[1].index];
  CHECK(plain.device() == kMeta);
  CHECK(plain.shape() == Shape{32, 32, 3, 3});
  CHECK(plan->constants[plan->steps[0].inputs[3].index].device() == kCPU);
  // A weight some other step reads too (a stride-2 Conv), or a graph output, keeps
  // its plain copy.
  for (bool as_output : {false, true}) {
    auto m2 = new_model("weight_read_elsewhere");
    auto* g2 = m2.mutable_graph();
    set_input(g2->add_input(), "x", {int64_t{1}, int64_t{32}, int64_t{8}, int64_t{8}});
    add_initializer(g2, "w", {32, 32, 3, 3}, wave(32 * 32 * 9, 0.37, 0.2));
    ints_attr(add_node(g2, "Conv", {"x", "w"}, {"z"}, "c1"), "pads", {1, 1, 1, 1});
    auto* c2 = add_node(g2, "Conv", {"z", "w"}, {"y"}, "c2");
    ints_attr(c2, "pads", {1, 1, 1, 1});
    if (!as_output) ints_attr(c2, "strides", {2, 2});
    add_output(g2, "y");
    if (as_output) add_output(g2, "w");
    const auto kept = ember::onnx::build_plan(bytes_of(m2), kCPU, "", "<memory>", false);
    INFO("the weight is " << (as_output ? "a graph output" : "read by a stride-2 Conv"));
    REQUIRE(kept->steps.size() == 2);
    CHECK(kept->steps[0].inputs.size() == 4);
    CHECK(kept->constants[kept->steps[0].inputs[1].index].device() == kCPU);
  }
}

TEST_CASE("onnx prepack: bad input to a Conv whose plan keeps only the packed weight", "[onnx][fuse]") {
  // The errors of the ops apart, not a meta tensor's device error: an input smaller
  // than the kernel (the fused step then runs its nodes one by one), and input
  // channels that do not match the weight, fused and not.
  ConvBlock lanes;
  lanes.c = 16, lanes.c_out = 64, lanes.pool = {}, lanes.pad = 0;
  for (bool expose : {false, true}) {
    INFO((expose ? "the nodes apart" : "fused"));
    const auto model = ember::onnx::load_from_string(conv_block_model(lanes, expose));
    CHECK_THROWS_MATCHES(model.run({randn({1, 16, 2, 5})}), ShapeError,
                         Catch::Matchers::Message("ONNX op 'Conv' (node 'conv', opset 13): Calculated padded input size per channel: (2 x 5). Kernel "
                                 "size: (3 x 3). Kernel size can't be greater than actual input size"));
    CHECK_THROWS_MATCHES(model.run({randn({1, 8, 6, 6})}), ShapeError,
                         Catch::Matchers::Message("ONNX op 'Conv' (node 'conv', opset 13): Given groups=1, weight of size [64, 16, 3, 3], expected "
                                 "input[1, 8, 6, 6] to have 16 channels, but got 8 channels instead"));
  }
}

TEST_CASE("onnx fuse: what is not fused stays as it was", "[onnx][fuse]") {
  ConvBlock pool3;
  pool3.pool = {3, 3};  // Conv -> Relu fused, the 3x3 pool apart
  CHECK(ember::onnx::load_from_string(conv_block_model(pool3, false)).num_steps() == 2);
  GemmBlock scaled;
  scaled.alpha = 0.5f;
  CHECK(ember::onnx::load_from_string(gemm_relu_model(scaled, false)).num_steps() == 2);
  // A Conv whose output a second node reads.
  auto m = new_model("conv_relu");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {int64_t{1}, int64_t{1}, int64_t{5}, int64_t{5}});
  add_initializer(g, "w", {2, 1, 3, 3}, wave(18, 0.4, 1.0));
  add_node(g, "Conv", {"x", "w"}, {"z"});
  add_node(g, "Relu", {"z"}, {"r"});
  add_node(g, "Add", {"z", "r"}, {"y"});
  add_output(g, "y");
  CHECK(ember::onnx::load_from_string(bytes_of(m)).num_steps() == 3);
}

TEST_CASE("onnx fuse: a block's errors name the node that fails, as the steps apart do", "[onnx][fuse][errors]") {
  const ConvBlock s;
  const auto fused = ember::onnx::load_from_string(conv_block_model(s, false));
  const auto apart = ember::onnx::load_from_string(conv_block_model(s, true));
  // Two channels where the weight has three: the Conv's error.
  const Tensor two_channels = randn({1, 2, 8, 8});
  const std::string conv_error = message_of<ShapeError>([&] { apart.run({two_channels}); });
  CHECK(conv_error.rfind("ONNX op 'Conv' (node 'conv', opset 13): ", 0) == 0);
  CHECK(message_of<ShapeError>([&] { fused.run({two_channels}); }) == conv_error);
  // A 1x1 image padded to 3x3 gives a 1x1 convolution output, smaller than the
  // pool's window: the fused op does not cover it and the MaxPool's own outcome
  // comes back, whichever it is.
  const Tensor tiny = randn({1, 3, 1, 1});
  std::string apart_error, fused_error;
  std::vector<float> apart_y, fused_y;
  try {
    apart_y = apart.run({tiny})[0].to_vector<float>();
  } catch (const Error& e) {
    apart_error = e.what();
  }
  try {
    fused_y = fused.run({tiny})[0].to_vector<float>();
  } catch (const Error& e) {
    fused_error = e.what();
  }
  CHECK(fused_error == apart_error);
  CHECK(fused_y == apart_y);
  CHECK(apart_error.rfind("ONNX op 'MaxPool' (node 'pool', opset 13): ", 0) == 0);  // max_pool2d: too small
}

TEST_CASE("onnx fuse: Gemm -> Relu is one step, equal to the two ops", "[onnx][fuse]") {
  struct Case {
    const char* what;
    GemmBlock s;
    size_t steps;
  };
  std::vector<Case> cases;
  cases.push_back({"transB, a bias per output", GemmBlock{}, 1});
  GemmBlock plain;
  plain.trans_b = false, plain.c_dims = {};
  cases.push_back({"B as [k, n], no C", plain, 1});
  GemmBlock full_c;
  full_c.c_dims = {4, 5};  // C [M, N]: not one value per output, the two ops run
  cases.push_back({"C of the output's shape", full_c, 1});
  GemmBlock one_c;
  one_c.c_dims = {1};
  cases.push_back({"C of one value", one_c, 1});
  GemmBlock wide;
  wide.m = 3, wide.k = 256, wide.n = 120, wide.c_dims = {120};
  cases.push_back({"the seed network's first hidden layer", wide, 1});
  for (const Case& c : cases) {
    SECTION(c.what) {
      const Tensor x = randn({c.s.m, c.s.k});
      const auto fused = ember::onnx::load_from_string(gemm_relu_model(c.s, false));
      const auto apart = ember::onnx::load_from_string(gemm_relu_model(c.s, true));
      CHECK(fused.num_steps() == c.steps);
      CHECK(apart.num_steps() == 2);
      const Tensor y = fused.run({x})[0];
      check_close(y, gemm_relu_reference(c.s, x));
      CHECK(y.to_vector<float>() == apart.run({x})[0].to_vector<float>());
    }
  }
  // A wrong k: addmm's error through the Gemm's node, as apart.
  const GemmBlock s;
  const auto fused = ember::onnx::load_from_string(gemm_relu_model(s, false));
  const auto apart = ember::onnx::load_from_string(gemm_relu_model(s, true));
  const Tensor wrong = randn({2, 7});
  const std::string error = message_of<ShapeError>([&] { apart.run({wrong}); });
  CHECK(error.rfind("ONNX op 'Gemm' (node 'gemm', opset 13): ", 0) == 0);
  CHECK(message_of<ShapeError>([&] { fused.run({wrong}); }) == error);
  // Under bfloat16 autocast the two ops run (linear_relu would round the product
  // and the bias once, where Gemm and the Add round twice).
  const Tensor x = randn({4, 6});
  nn::amp::AutocastGuard autocast(DeviceType::CPU, kBFloat16);
  const Tensor y = fused.run({x})[0], want = apart.run({x})[0];
  CHECK(y.dtype() == kBFloat16);
  CHECK(y.to(kFloat32).to_vector<float>() == want.to(kFloat32).to_vector<float>());
}

TEST_CASE("onnx fuse: quantize_dynamic keeps the Relu of a fused Gemm", "[onnx][fuse][quant]") {
  GemmBlock s;
  s.m = 6, s.k = 32, s.n = 12, s.c_dims = {12};
  const Tensor x = randn({s.m, s.k});
  const auto fused = ember::onnx::load_from_string(gemm_relu_model(s, false));
  const auto apart = ember::onnx::load_from_string(gemm_relu_model(s, true));
  size_t rewritten = 0;
  const auto q_fused = ember::onnx::quantize_dynamic(fused, &rewritten);
  CHECK(rewritten == 1);
  const auto q_apart = ember::onnx::quantize_dynamic(apart, &rewritten);
  CHECK(rewritten == 1);
  const auto a = q_apart.run({x});
  const Tensor y = q_fused.run({x})[0];
  CHECK(y.to_vector<float>() == a[0].to_vector<float>());  // relu of the same int8 Gemm
  CHECK_FALSE(y.to_vector<float>() == fused.run({x})[0].to_vector<float>());  // and it ran in int8
  CHECK(min(a[1]).item<float>() < 0);  // the Relu had negatives to clear
}

// ---- MatMulInteger / ConvInteger -> Cast -> Mul -> [Add] -> [Relu] ----

namespace {

struct IntegerChain {
  bool conv = false;         // ConvInteger on [1, 4, 6, 6] with a 3x3 window, else MatMulInteger [M, 12] x [12, 8]
  bool scale_first = false;  // Mul(scale, sums) rather than Mul(sums, scale)
  bool add = true, relu = true;
  bool bias_per_row = false;  // a bias along another axis than the scale's: the ops apart run
};

// a (uint8, with its zero point a graph input) times constant int8 codes; the
// scale a graph input (as ONNX Runtime's graphs compute it from DynamicQuantizeLinear).
std::string integer_chain_model(const IntegerChain& s, bool expose) {
  auto m = new_model("integer_chain");
  auto* g = m.mutable_graph();
  const int64_t out = 8;
  if (s.conv) {
    set_input(g->add_input(), "a", {int64_t{1}, int64_t{4}, int64_t{6}, int64_t{6}}, ::onnx::TensorProto::UINT8);
    std::vector<int8_t> w;
    for (int64_t i = 0; i < out * 4 * 9; ++i) w.push_back(int8_t((i * 53 + 7) % 256 - 128));
    add_raw_initializer(g, "w", {out, 4, 3, 3}, ::onnx::TensorProto::INT8, w);
  } else {
    set_input(g->add_input(), "a", {std::string("M"), int64_t{12}}, ::onnx::TensorProto::UINT8);
    std::vector<int8_t> w;
    for (int64_t i = 0; i < 12 * out; ++i) w.push_back(int8_t((i * 53 + 7) % 256 - 128));
    add_raw_initializer(g, "w", {12, out}, ::onnx::TensorProto::INT8, w);
  }
  set_input(g->add_input(), "a_zero", {}, ::onnx::TensorProto::UINT8);
  const std::vector<int64_t> per_out = s.conv ? std::vector<int64_t>{out, 1, 1} : std::vector<int64_t>{out};
  if (s.conv) set_input(g->add_input(), "scale", {std::string("S"), int64_t{1}, int64_t{1}});
  else set_input(g->add_input(), "scale", {std::string("S")});
  add_node(g, s.conv ? "ConvInteger" : "MatMulInteger", {"a", "w", "a_zero"}, {"sums"}, "integer");
  int_attr(add_node(g, "Cast", {"sums"}, {"f"}, "cast"), "to", ::onnx::TensorProto::FLOAT);
  add_node(g, "Mul", s.scale_first ? std::vector<std::string>{"scale", "f"} : std::vector<std::string>{"f", "scale"},
           {"scaled"}, "mul");
  std::string last = "scaled";
  if (s.add) {
    if (s.bias_per_row) add_initializer(g, "bias", {3, 1}, wave(3, 0.8, 40.0));  // rows of a [3, 8] product
    else add_initializer(g, "bias", per_out, wave(out, 0.8, 40.0));
    add_node(g, "Add", {"bias", last}, {"biased"}, "add");
    last = "biased";
  }
  if (s.relu) {
    add_node(g, "Relu", {last}, {"y"}, "relu");
    last = "y";
  }
  add_output(g, last);
  if (expose) add_output(g, "f");
  return bytes_of(m);
}

}  // namespace

TEST_CASE("onnx fuse: an integer product's Cast, Mul, Add and Relu are one step, equal to the ops apart",
          "[onnx][fuse][quant]") {
  struct Case {
    const char* what;
    IntegerChain s;
    size_t steps;  // fused
  };
  std::vector<Case> cases;
  cases.push_back({"MatMulInteger, Mul(sums, scale), Add, Relu", IntegerChain{}, 1});
  IntegerChain swapped;
  swapped.scale_first = true, swapped.relu = false;
  cases.push_back({"Mul(scale, sums), no Relu", swapped, 1});
  IntegerChain bare;
  bare.add = false, bare.relu = false;
  cases.push_back({"no Add, no Relu", bare, 1});
  IntegerChain conv;
  conv.conv = true;
  cases.push_back({"ConvInteger, per output channel", conv, 1});
  IntegerChain rows;
  rows.bias_per_row = true;
  cases.push_back({"a bias per row: the ops apart, in the one step", rows, 1});
  for (const Case& c : cases) {
    SECTION(c.what) {
      std::mt19937 g(5);
      const Shape a_shape = c.s.conv ? Shape{1, 4, 6, 6} : Shape{3, 12};
      const Tensor a = integer_codes_u8(a_shape, g);
      const Tensor a_zero = full({}, 131, kUInt8);
      const Tensor scale = c.s.conv ? tensor(wave(8, 0.37, 0.002), {8, 1, 1}) : tensor(wave(8, 0.37, 0.002), {8});
      const auto fused = ember::onnx::load_from_string(integer_chain_model(c.s, false));
      const auto apart = ember::onnx::load_from_string(integer_chain_model(c.s, true));
      CHECK(fused.num_steps() == c.steps);
      const size_t ops = 3 + (c.s.add ? 1 : 0) + (c.s.relu ? 1 : 0);
      CHECK(apart.num_steps() == ops);
      const Tensor y = fused.run({a, a_zero, scale})[0];
      const auto want = apart.run({a, a_zero, scale});
      CHECK(y.shape() == want[0].shape());
      CHECK(y.to_vector<float>() == want[0].to_vector<float>());
      // And the float values against the int64 sums by the definition.
      const auto sums = want[1].to_vector<float>();  // exact: every sum here is below 2^24
      const auto sc = scale.reshape({8}).to_vector<float>();
      const auto yv = y.to_vector<float>();
      const int64_t per = c.s.conv ? 16 : 1;  // outputs per channel step: 4x4 pixels, or 1 column
      int bad = 0;
      for (size_t i = 0; i < yv.size(); ++i) {
        const size_t ch = c.s.conv ? i / size_t(per) % 8 : i % 8;
        double v = double(sums[i]) * sc[ch];
        if (c.s.add) v += c.s.bias_per_row ? wave(3, 0.8, 40.0)[i / 8] : wave(8, 0.8, 40.0)[ch];
        if (c.s.relu) v = std::max(v, 0.0);
        if (!(std::fabs(yv[i] - v) <= 1e-4 * (1 + std::fabs(v)))) ++bad;
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("onnx fuse: a failing node inside an integer chain is named", "[onnx][fuse][quant][errors]") {
  const auto fused = ember::onnx::load_from_string(integer_chain_model(IntegerChain{}, false));
  const auto apart = ember::onnx::load_from_string(integer_chain_model(IntegerChain{}, true));
  std::mt19937 g(2);
  const Tensor a = integer_codes_u8({3, 12}, g), a_zero = full({}, 3, kUInt8);
  const Tensor wrong_scale = tensor(wave(5, 0.3, 0.01), {5});  // 5 of 8 columns: the Mul fails
  const std::string error = message_of<ShapeError>([&] { apart.run({a, a_zero, wrong_scale}); });
  CHECK(error.rfind("ONNX op 'Mul' (node 'mul', opset 13): ", 0) == 0);
  CHECK(message_of<ShapeError>([&] { fused.run({a, a_zero, wrong_scale}); }) == error);
}

// Two integer layers whose scaled sums meet in one Add: the first chain takes the
// Add, the second stops at its Mul, and the Add's other operand (the second Mul's
// output) is still made.
TEST_CASE("onnx fuse: two integer chains that meet in one Add", "[onnx][fuse][quant]") {
  auto m = new_model("two_chains");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "a", {std::string("M"), int64_t{12}}, ::onnx::TensorProto::UINT8);
  set_input(g->add_input(), "scale", {std::string("S")});
  std::vector<int8_t> w1, w2;
  for (int64_t i = 0; i < 12 * 8; ++i) {
    w1.push_back(int8_t((i * 53 + 7) % 256 - 128));
    w2.push_back(int8_t((i * 29 + 3) % 256 - 128));
  }
  add_raw_initializer(g, "w1", {12, 8}, ::onnx::TensorProto::INT8, w1);
  add_raw_initializer(g, "w2", {12, 8}, ::onnx::TensorProto::INT8, w2);
  for (const char* k : {"1", "2"}) {
    const std::string n = k;
    add_node(g, "MatMulInteger", {"a", "w" + n}, {"sums" + n}, "integer" + n);
    int_attr(add_node(g, "Cast", {"sums" + n}, {"f" + n}, "cast" + n), "to", ::onnx::TensorProto::FLOAT);
    add_node(g, "Mul", {"f" + n, "scale"}, {"scaled" + n}, "mul" + n);
  }
  add_node(g, "Add", {"scaled1", "scaled2"}, {"sum"}, "add");
  add_node(g, "Relu", {"sum"}, {"y"}, "relu");
  add_output(g, "y");
  const auto model = ember::onnx::load_from_string(bytes_of(m));
  CHECK(model.num_steps() == 2);
  std::mt19937 gen(8);
  const Tensor a = integer_codes_u8({3, 12}, gen);
  const Tensor scale = tensor(wave(8, 0.37, 0.002), {8});
  const auto y = model.run({a, scale})[0].to_vector<float>();
  // By the definition, in float64.
  const auto av = a.to(kInt64).to_vector<int64_t>();
  const auto sc = scale.to_vector<float>();
  int bad = 0;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      int64_t s1 = 0, s2 = 0;
      for (int64_t p = 0; p < 12; ++p) {
        s1 += av[size_t(i * 12 + p)] * w1[size_t(p * 8 + j)];
        s2 += av[size_t(i * 12 + p)] * w2[size_t(p * 8 + j)];
      }
      const double want = std::max(double(s1) * sc[size_t(j)] + double(s2) * sc[size_t(j)], 0.0);
      if (!(std::fabs(y[size_t(i * 8 + j)] - want) <= 1e-4 * (1 + std::fabs(want)))) ++bad;
    }
  CHECK(bad == 0);
}

// fixed_window_2d (onnx/window.h): which windows Conv's steps resolve once at load.
TEST_CASE("onnx: a 2-D window is fixed at load only when nothing about it waits for the input", "[onnx][fuse]") {
  using ember::onnx::WindowAttrs;
  auto attrs = [](std::string auto_pad, Shape kernel, Shape stride, Shape dilation, Shape pads) {
    WindowAttrs a;
    a.auto_pad = std::move(auto_pad);
    a.kernel = std::move(kernel), a.stride = std::move(stride), a.dilation = std::move(dilation);
    a.pads = std::move(pads);
    return a;
  };
  const auto fixed = ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 5}, {2, 1}, {1, 2}, {1, 2, 1, 2}));
  REQUIRE(fixed);
  CHECK(fixed->kernel == std::array<int64_t, 2>{3, 5});
  CHECK(fixed->stride == std::array<int64_t, 2>{2, 1});
  CHECK(fixed->dilation == std::array<int64_t, 2>{1, 2});
  CHECK(fixed->pad == std::array<int64_t, 2>{1, 2});
  const auto defaults = ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 3}, {}, {}, {}));
  REQUIRE(defaults);
  CHECK(defaults->stride == std::array<int64_t, 2>{1, 1});
  CHECK(defaults->pad == std::array<int64_t, 2>{0, 0});
  const auto valid = ember::onnx::fixed_window_2d(attrs("VALID", {3, 3}, {}, {}, {1, 1, 1, 1}));  // VALID: no padding
  REQUIRE(valid);
  CHECK(valid->pad == std::array<int64_t, 2>{0, 0});
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("SAME_UPPER", {3, 3}, {}, {}, {})));      // padding from the input
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {}, {}, {}, {})));              // kernel from the weight
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {3}, {}, {}, {})));             // 1-D
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 3}, {}, {}, {0, 1, 1, 1})));  // uneven padding
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 3}, {0, 1}, {}, {})));       // resolve_window's error
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 3}, {}, {}, {-1, 0, -1, 0})));
  CHECK_FALSE(ember::onnx::fixed_window_2d(attrs("NOTSET", {3, 3}, {1, 1, 1}, {}, {})));    // strides of a 3-D window
}
