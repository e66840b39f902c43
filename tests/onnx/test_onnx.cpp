// The ONNX importer's own tests: a small model built here with protobuf runs
// against a naive loop; constant folding shrinks the plan; one model is run
// from several threads; and malformed models and wrong inputs raise the
// documented errors (docs/errors.md) with their exact text.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <limits>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <variant>

#include "ember.h"
#include "../support/message_of.h"
#include "model_builder.h"
#include "onnx/onnx_pb.h"

using namespace ember;
using namespace ember_test;
namespace fs = std::filesystem;

namespace {

// y = relu(x @ W + B), x [N, 3], W [3, 2] (raw_data), B [2] (float_data).
::onnx::ModelProto linear_relu_model() {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("linear_relu");
  set_input(g->add_input(), "x", {std::string("N"), int64_t{3}});
  set_input(g->add_output(), "y", {std::string("N"), int64_t{2}});
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(2);
  std::vector<float> wv{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv.data()), wv.size() * sizeof(float)));
  auto* b = g->add_initializer();
  b->set_name("B");
  b->set_data_type(::onnx::TensorProto::FLOAT);
  b->add_dims(2);
  b->add_float_data(0.1f);
  b->add_float_data(-0.2f);
  add_node(g, "MatMul", {"x", "W"}, {"xw"});
  add_node(g, "Add", {"xw", "B"}, {"z"});
  add_node(g, "Relu", {"z"}, {"y"});
  return m;
}

std::vector<double> reference(const std::vector<float>& x, int64_t n) {
  const double w[3][2] = {{0.5, -1.0}, {2.0, 0.25}, {-0.75, 1.5}};
  const double b[2] = {0.1, -0.2};
  std::vector<double> y;
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = b[j];
      for (int k = 0; k < 3; ++k) s += x[static_cast<size_t>(i * 3 + k)] * w[k][j];
      y.push_back(std::max(s, 0.0));
    }
  return y;
}


}  // namespace

TEST_CASE("onnx: a model built with protobuf runs against a naive loop", "[onnx]") {
  ember::onnx::Model m = ember::onnx::load_from_string(bytes_of(linear_relu_model()));
  REQUIRE(m.inputs().size() == 1);
  CHECK(m.inputs()[0].name == "x");
  CHECK(m.inputs()[0].dtype == kFloat32);
  REQUIRE(m.inputs()[0].shape.size() == 2);
  CHECK_FALSE(m.inputs()[0].shape[0].has_value());
  CHECK(m.inputs()[0].dim_names[0] == "N");
  CHECK(m.inputs()[0].shape[1] == 3);
  CHECK(m.outputs()[0].name == "y");
  CHECK(m.opset() == 13);
  CHECK(m.num_steps() == 3);
  for (int64_t n : {1, 5}) {
    std::vector<float> xv;
    for (int64_t i = 0; i < n * 3; ++i) xv.push_back(static_cast<float>(std::sin(0.7 * i) * 2));
    auto y = m.run({tensor(xv, {n, 3})});
    REQUIRE(y.size() == 1);
    REQUIRE(y[0].shape() == Shape{n, 2});
    auto got = y[0].to_vector<float>();
    auto want = reference(xv, n);
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
  }
}

TEST_CASE("onnx: constant subgraphs are folded at load", "[onnx]") {
  // y = x + ConstantOfShape(Shape(W)) * 2: only the final Add is left to run.
  auto m = linear_relu_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_output();
  set_input(g->add_output(), "y", {std::string("N"), int64_t{2}});
  add_node(g, "Shape", {"B"}, {"s"});
  auto* c = add_node(g, "ConstantOfShape", {"s"}, {"ones"});
  auto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  auto* t = value->mutable_t();
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(1);
  t->add_float_data(1.5f);
  add_node(g, "Mul", {"ones", "B"}, {"scaled"});
  add_node(g, "MatMul", {"x", "W"}, {"xw"});
  add_node(g, "Add", {"xw", "scaled"}, {"y"});
  ember::onnx::Model model = ember::onnx::load_from_string(bytes_of(m));
  CHECK(model.num_steps() == 2);  // MatMul and Add
  auto y = model.run({ones({1, 3})})[0].to_vector<float>();
  // x = ones: sums of W's columns plus 1.5 * B.
  CHECK(y[0] == Approx(0.5 + 2.0 - 0.75 + 1.5 * 0.1));
  CHECK(y[1] == Approx(-1.0 + 0.25 + 1.5 + 1.5 * -0.2));
}

TEST_CASE("onnx: values computed from input shapes are reused, values from data are not", "[onnx]") {
  // n = Shape(x)[0] depends on x's shape only (run once per input shape); the
  // shape of Reshape(x, s) depends on the values in s, so Shape of it runs every call.
  ::onnx::ModelProto m = new_model("memo");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {std::string("N"), int64_t{4}});
  set_input(g->add_input(), "s", {int64_t{2}});
  g->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  set_input(g->add_output(), "n", {});
  set_input(g->add_output(), "rs", {int64_t{2}});
  for (auto& out : *g->mutable_output()) out.mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  auto* zero = g->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(::onnx::TensorProto::INT64);
  zero->add_int64_data(0);
  add_node(g, "Shape", {"x"}, {"xs"});
  add_node(g, "Gather", {"xs", "zero"}, {"n"});
  add_node(g, "Reshape", {"x", "s"}, {"r"});
  add_node(g, "Shape", {"r"}, {"rs"});
  const auto model = ember::onnx::load_from_string(bytes_of(m));
  auto run = [&](int64_t rows, std::vector<int64_t> shape) {
    return model.run({ones({rows, 4}), tensor(shape, {2})});
  };
  for (int round = 0; round < 2; ++round) {
    auto a = run(4, {2, 8});
    CHECK(a[0].item<int64_t>() == 4);
    CHECK(a[1].to_vector<int64_t>() == std::vector<int64_t>{2, 8});
    a[0].data_ptr<int64_t>()[0] = 99;  // a caller's write must not reach the next call
    auto b = run(4, {8, 2});
    CHECK(b[0].item<int64_t>() == 4);
    CHECK(b[1].to_vector<int64_t>() == std::vector<int64_t>{8, 2});
    auto c = run(2, {1, 8});
    CHECK(c[0].item<int64_t>() == 2);
    CHECK(c[1].to_vector<int64_t>() == std::vector<int64_t>{1, 8});
  }
}

TEST_CASE("onnx: on another device, host constants and values made by steps meet device tensors", "[onnx][device]") {
  // Plans keep integer constants on the host. On `emu` (a device of its own with
  // the CPU's kernels) every step must still find its inputs on one device:
  // ConstantOfShape's float output feeding an Add and a MatMul, and an int64
  // MatMul of a graph input with an int64 initializer.
  ::onnx::ModelProto m = new_model("mixed");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {std::string("N"), int64_t{3}});
  set_input(g->add_input(), "k", {int64_t{2}, int64_t{2}});
  g->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  set_input(g->add_output(), "y", {std::string("N"), int64_t{2}});
  set_input(g->add_output(), "zeros", {std::string("N"), int64_t{3}});
  set_input(g->add_output(), "kk", {int64_t{2}, int64_t{2}});
  g->mutable_output(2)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(2);
  for (float v : {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}) w->add_float_data(v);
  auto* wi = g->add_initializer();
  wi->set_name("Wi");
  wi->set_data_type(::onnx::TensorProto::INT64);
  wi->add_dims(2);
  wi->add_dims(2);
  for (int64_t v : {3, -1, 2, 5}) wi->add_int64_data(v);
  add_node(g, "Shape", {"x"}, {"shape"});
  add_node(g, "ConstantOfShape", {"shape"}, {"zeros"});  // float 0 by default
  add_node(g, "Add", {"x", "zeros"}, {"x0"});
  add_node(g, "MatMul", {"x0", "W"}, {"y"});
  add_node(g, "MatMul", {"k", "Wi"}, {"kk"});
  const std::string bytes = bytes_of(m);
  const Tensor x = tensor(std::vector<float>{1, 2, 3, -1, 0.5f, 4}, {2, 3});
  const Tensor k = tensor(std::vector<int64_t>{1, 2, -3, 4}, {2, 2});
  const auto on_cpu = ember::onnx::load_from_string(bytes).run({x, k});
  const auto on_emu = ember::onnx::load_from_string(bytes, Device("emu:0")).run({x, k});
  REQUIRE(on_emu.size() == 3);
  for (const Tensor& t : on_emu) CHECK(t.device() == Device("emu:0"));
  CHECK(on_emu[0].cpu().to_vector<float>() == on_cpu[0].to_vector<float>());
  CHECK(on_emu[1].cpu().to_vector<float>() == std::vector<float>(6, 0.0f));
  // [[1, 2], [-3, 4]] @ [[3, -1], [2, 5]], by hand.
  CHECK(on_emu[2].cpu().to_vector<int64_t>() == std::vector<int64_t>{7, 9, -1, 23});
  CHECK(on_cpu[2].to_vector<int64_t>() == std::vector<int64_t>{7, 9, -1, 23});
}

TEST_CASE("onnx: one model runs from several threads at once", "[onnx]") {
  ember::onnx::Model m = ember::onnx::load_from_string(bytes_of(linear_relu_model()));
  Tensor x = randn({64, 3});
  std::vector<float> want = m.run({x})[0].to_vector<float>();
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r)
        if (m.run({x})[0].to_vector<float>() != want) ++bad[static_cast<size_t>(t)];
    });
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>(4, 0));
}

TEST_CASE("onnx: outputs never alias the model's constants", "[onnx]") {
  auto m = linear_relu_model();
  auto* g = m.mutable_graph();
  set_input(g->add_output(), "B", {int64_t{2}});
  ember::onnx::Model model = ember::onnx::load_from_string(bytes_of(m));
  auto out = model.run({ones({1, 3})});
  out[1].fill_(7.0);
  CHECK(model.run({ones({1, 3})})[1].to_vector<float>() == std::vector<float>{0.1f, -0.2f});
}

TEST_CASE("onnx: wrong inputs raise the documented errors", "[onnx][errors]") {
  ember::onnx::Model m = ember::onnx::load_from_string(bytes_of(linear_relu_model()));
  CHECK(message_of<ValueError>([&] { m.run({}); }) == "ONNX model expects 1 inputs but got 0");
  CHECK(message_of<DTypeError>([&] { m.run({ones({2, 3}, kFloat64)}); }) ==
        "ONNX model input 'x' expects dtype float32 but got float64");
  CHECK(message_of<ShapeError>([&] { m.run({ones({2, 4})}); }) ==
        "ONNX model input 'x' expects shape [N, 3] but got [2, 4]");
  CHECK(message_of<ValueError>([] { ember::onnx::Model().run({}); }) ==
        "onnx::Model: the model is empty (default-constructed, not loaded)");
}

TEST_CASE("onnx: an error inside a node names the node", "[onnx][errors]") {
  // Reshape to a shape that the runtime input cannot take.
  ::onnx::ModelProto m = new_model("g");
  auto* g = m.mutable_graph();
  set_input(g->add_input(), "x", {std::string("N")});
  set_input(g->add_output(), "y", {int64_t{4}, int64_t{-1}});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->clear_dim_value();
  auto* s = g->add_initializer();
  s->set_name("shape");
  s->set_data_type(::onnx::TensorProto::INT64);
  s->add_dims(2);
  s->add_int64_data(4);
  s->add_int64_data(-1);
  add_node(g, "Reshape", {"x", "shape"}, {"y"}, "to_rows");
  ember::onnx::Model model = ember::onnx::load_from_string(bytes_of(m));
  CHECK(model.run({ones({8})})[0].shape() == Shape{4, 2});
  CHECK(message_of<ShapeError>([&] { model.run({ones({6})}); }) ==
        "ONNX op 'Reshape' (node 'to_rows', opset 13): cannot reshape [6] into [4, -1]");
}

TEST_CASE("onnx: malformed models raise FormatError naming the problem", "[onnx][errors]") {
  CHECK(message_of<FormatError>([] { ember::onnx::load("/nonexistent/model.onnx"); }) ==
        "/nonexistent/model.onnx: cannot open the file");
  CHECK(message_of<FormatError>([] { ember::onnx::load_from_string("\xff\xff\xff garbage"); }) ==
        "<memory>: not an ONNX model (the protobuf message does not parse)");

  // Every truncation of a valid model is refused or loads; none crashes.
  std::string good = bytes_of(linear_relu_model());
  for (size_t len = 0; len < good.size(); ++len) {
    try {
      ember::onnx::load_from_string(good.substr(0, len));
    } catch (const FormatError& e) {
      CHECK(std::string(e.what()).rfind("<memory>: ", 0) == 0);
    } catch (const NotImplementedError&) {
    }
  }

  auto with_w = [](const std::function<void(::onnx::TensorProto*)>& edit) {
    auto m = linear_relu_model();
    edit(m.mutable_graph()->mutable_initializer(0));
    return bytes_of(m);
  };
  CHECK(message_of<FormatError>([&] {
          ember::onnx::load_from_string(with_w([](auto* w) { w->set_raw_data("12345678"); }));
        }) == "<memory>: initializer 'W': tensor of shape [3, 2] and type float needs 24 bytes of raw_data but has 8");
  CHECK(message_of<FormatError>([&] {
          ember::onnx::load_from_string(with_w([](auto* w) { w->set_dims(0, -3); }));
        }) == "<memory>: initializer 'W': tensor has a negative dimension -3");
  CHECK(message_of<FormatError>([&] {
          ember::onnx::load_from_string(with_w([](auto* w) {
            w->clear_raw_data();
            w->add_float_data(1.0f);
          }));
        }) == "<memory>: initializer 'W': tensor of shape [3, 2] needs 6 values but float_data holds 1");
  CHECK(message_of<FormatError>([&] {
          ember::onnx::load_from_string(with_w([](auto* w) {
            w->set_data_location(::onnx::TensorProto::EXTERNAL);
            auto* kv = w->add_external_data();
            kv->set_key("location");
            kv->set_value("w.bin");
            w->clear_raw_data();
          }));
        }) == "<memory>: initializer 'W': external data is not allowed for a model read from memory");

  // A node that reads a value nothing defines; a cycle. The ONNX checker sees both.
  auto m = linear_relu_model();
  m.mutable_graph()->mutable_node(1)->set_input(1, "missing");
  CHECK_THAT(message_of<FormatError>([&] { ember::onnx::load_from_string(bytes_of(m)); }),
             Catch::StartsWith("<memory>: the ONNX checker rejects the model: "));
  m = linear_relu_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  CHECK_THAT(message_of<FormatError>([&] { ember::onnx::load_from_string(bytes_of(m)); }),
             Catch::StartsWith("<memory>: the ONNX checker rejects the model: "));
}

TEST_CASE("onnx: hostile tensor files raise FormatError before allocating", "[onnx][errors]") {
  fs::path file = fs::temp_directory_path() / ("ember_onnx_tensor_" + std::to_string(::getpid()) + ".pb");
  auto write = [&](const ::onnx::TensorProto& t) {
    std::ofstream out(file, std::ios::binary);
    out << t.SerializeAsString();
  };
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::FLOAT);
  t.add_dims(int64_t{1} << 40);
  t.add_dims(int64_t{1} << 40);
  t.set_raw_data("1234");
  write(t);
  CHECK(message_of<FormatError>([&] { ember::onnx::load_tensor(file.string()); }) ==
        file.string() + ": tensor has more elements than int64 can count");
  t.set_dims(0, 1 << 20);
  t.set_dims(1, 1 << 20);
  write(t);
  CHECK(message_of<FormatError>([&] { ember::onnx::load_tensor(file.string()); }) ==
        file.string() + ": tensor of shape [1048576, 1048576] and type float needs 4398046511104 bytes of raw_data but has 4");
  t.set_data_type(::onnx::TensorProto::STRING);
  write(t);
  CHECK(message_of<NotImplementedError>([&] { ember::onnx::load_tensor(file.string()); }) ==
        file.string() + ": ONNX element type string (8) is not supported");
  {
    std::ofstream out(file, std::ios::binary);
    out << "\x0a\xff\xff\xff\xff\x0f";
  }
  CHECK(message_of<FormatError>([&] { ember::onnx::load_tensor(file.string()); }) ==
        file.string() + ": not a serialized ONNX TensorProto");
  fs::remove(file);
}

TEST_CASE("onnx: an op Ember does not run raises NotImplementedError naming it", "[onnx][errors]") {
  auto m = linear_relu_model();
  m.mutable_graph()->mutable_node(2)->set_op_type("RandomUniformLike");
  m.mutable_graph()->mutable_node(2)->set_name("noise0");
  CHECK(message_of<NotImplementedError>([&] { ember::onnx::load_from_string(bytes_of(m)); }) ==
        "ONNX op 'RandomUniformLike' (node 'noise0', opset 13): the op is not supported");
  m = linear_relu_model();
  auto* a = m.mutable_graph()->mutable_node(2);
  a->set_op_type("MaxPool");
  auto* attr = a->add_attribute();
  attr->set_name("kernel_shape");
  attr->set_type(::onnx::AttributeProto::INTS);
  attr->add_ints(1);
  attr = a->add_attribute();
  attr->set_name("storage_order");
  attr->set_type(::onnx::AttributeProto::INT);
  attr->set_i(1);
  CHECK(message_of<NotImplementedError>([&] { ember::onnx::load_from_string(bytes_of(m)); }) ==
        "ONNX op 'MaxPool' (node 'Relu', opset 13): attribute storage_order=1 is not supported");
}

TEST_CASE("onnx: external data is read from the model's folder and never outside it", "[onnx]") {
  fs::path dir = fs::temp_directory_path() / ("ember_onnx_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto m = linear_relu_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  std::string raw = w->raw_data();
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out << "pad!" << raw;
  }
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto set_kv = [&](const std::string& location, const std::string& offset) {
    w->clear_external_data();
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = w->add_external_data();
    kv->set_key("offset");
    kv->set_value(offset);
  };
  auto save = [&] {
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    out << bytes_of(m);
  };
  set_kv("weights.bin", "4");
  save();
  ember::onnx::Model model = ember::onnx::load((dir / "model.onnx").string());
  std::vector<float> x{1, 2, 3};
  auto y = model.run({tensor(x, {1, 3})})[0].to_vector<float>();
  auto want = reference(x, 1);
  CHECK(y[0] == Approx(want[0]));
  CHECK(y[1] == Approx(want[1]));

  std::string path = (dir / "model.onnx").string();
  set_kv("../weights.bin", "0");
  save();
  CHECK_THAT(message_of<FormatError>([&] { ember::onnx::load(path); }), Catch::EndsWith("leaves the model's folder"));
  set_kv("weights.bin", "8");
  save();
  CHECK(message_of<FormatError>([&] { ember::onnx::load(path); }) ==
        path + ": initializer 'W': external data file '" + (dir / "weights.bin").string() +
            "' has 28 bytes, fewer than offset 8 + 24");
  fs::remove_all(dir);
}

namespace {

// A one-node model: inputs x (float [2, 3, 4, 4] unless given) and optional
// initializers, one output y.
struct OneNode {
  ::onnx::ModelProto m;
  ::onnx::NodeProto* node;
  explicit OneNode(const std::string& op, int64_t opset = 13) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("g");
    node = add_node(g, op, {"x"}, {"y"}, "n");
    auto* y = g->add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    y->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank unknown to Ember: not checked
  }
  void input(const std::string& name, std::vector<int64_t> dims, int elem = ::onnx::TensorProto::FLOAT) {
    auto* v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    tt->mutable_shape();  // {} declares a 0-dim input
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void init(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    node->add_input(name);
  }
  // An initializer of any element type from its little-endian bytes.
  template <class T>
  void init_raw(const std::string& name, std::vector<int64_t> dims, int elem, const std::vector<T>& values) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
    node->add_input(name);
  }
  void int_attr(const std::string& name, int64_t v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  // An input of rank `rank` whose sizes the model leaves open.
  void open_input(const std::string& name, int rank, int elem = ::onnx::TensorProto::FLOAT) {
    input(name, std::vector<int64_t>(size_t(rank), 1), elem);
    auto* shape = m.mutable_graph()->mutable_input(m.graph().input_size() - 1)->mutable_type()->mutable_tensor_type()
                      ->mutable_shape();
    for (int d = 0; d < rank; ++d) shape->mutable_dim(d)->set_dim_param(std::string(1, char('a' + d)));
  }
  void add_output(const std::string& name, int elem) {
    node->add_output(name);
    auto* v = m.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();
  }
  void output_type(int elem) {
    m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void ints(const std::string& name, std::vector<int64_t> v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  ember::onnx::Model load() { return ember::onnx::load_from_string(bytes_of(m)); }
};

}  // namespace

// Values worked out by hand from the ONNX operator definitions; the conformance
// data (tests/onnx/conformance.cpp) checks the same ops against ONNX's own outputs.
TEST_CASE("onnx: GatherElements, OneHot, Trilu, DepthToSpace and ArgMax's last index", "[onnx]") {
  const Tensor x = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  OneNode gather("GatherElements");
  gather.input("x", {2, 3});
  gather.input("i", {2, 2}, ::onnx::TensorProto::INT64);
  gather.node->add_input("i");
  gather.int_attr("axis", 1);
  ember::onnx::Model m = gather.load();
  CHECK(m.run({x, tensor(std::vector<int64_t>{2, -1, 0, 1}, {2, 2})})[0].to_vector<float>() ==
        std::vector<float>{3, 3, 4, 5});
  CHECK(message_of<IndexError>([&] { m.run({x, tensor(std::vector<int64_t>{0, 3, 0, 0}, {2, 2})}); }) ==
        "ONNX op 'GatherElements' (node 'n', opset 13): index 3 is out of range for axis 1 of size 3");
  for (const Shape& bad : {Shape{3, 1}, Shape{2}}) {  // declared so, so that only the op can refuse them
    OneNode g("GatherElements");
    g.input("x", {2, 3});
    g.input("i", bad, ::onnx::TensorProto::INT64);
    g.node->add_input("i");
    g.int_attr("axis", 1);
    m = g.load();
    CHECK(message_of<ShapeError>([&] { m.run({x, zeros(bad, kInt64)}); }) ==
          (bad.size() == 2 ? "ONNX op 'GatherElements' (node 'n', opset 13): indices are 3 long in dim 0, where data is 2"
                           : "ONNX op 'GatherElements' (node 'n', opset 13): indices have 1 dims but data has 2"));
  }

  OneNode hot("OneHot", 11);
  hot.input("x", {3}, ::onnx::TensorProto::INT64);
  hot.input("depth", {}, ::onnx::TensorProto::INT64);
  hot.node->add_input("depth");
  hot.init("values", {2}, {-1, 5});
  hot.int_attr("axis", 0);
  m = hot.load();
  // indices 1, -1 (= 2) and 7 (outside [-3, 3): a column of `off`), depth 3, along a new dim 0
  CHECK(m.run({tensor(std::vector<int64_t>{1, -1, 7}), scalar_tensor(int64_t{3})})[0].to_vector<float>() ==
        std::vector<float>{-1, -1, -1, 5, -1, -1, -1, 5, -1});
  CHECK(message_of<ValueError>([&] { m.run({tensor(std::vector<int64_t>{1, 2, 0}), scalar_tensor(int64_t{0})}); }) ==
        "ONNX op 'OneHot' (node 'n', opset 11): depth must be between 1 and 2^63, got 0");

  OneNode tri("Trilu", 14);
  tri.input("x", {2, 3});
  tri.input("k", {}, ::onnx::TensorProto::INT64);
  tri.node->add_input("k");
  tri.int_attr("upper", 0);
  m = tri.load();
  CHECK(m.run({x, scalar_tensor(int64_t{0})})[0].to_vector<float>() == std::vector<float>{1, 0, 0, 4, 5, 0});
  CHECK(m.run({x, scalar_tensor(int64_t{-1})})[0].to_vector<float>() == std::vector<float>{0, 0, 0, 4, 0, 0});
  OneNode flat_tri("Trilu", 14);
  flat_tri.input("x", {2});
  m = flat_tri.load();
  CHECK(message_of<ShapeError>([&] { m.run({tensor(std::vector<float>{1, 2})}); }) ==
        "ONNX op 'Trilu' (node 'n', opset 14): the input has 1 dims, fewer than 2");

  OneNode d2s("DepthToSpace");
  d2s.input("x", {1, 4, 1, 1});
  d2s.int_attr("blocksize", 2);
  m = d2s.load();
  CHECK(m.run({tensor(std::vector<float>{1, 2, 3, 4}, {1, 4, 1, 1})})[0].to_vector<float>() ==
        std::vector<float>{1, 2, 3, 4});
  OneNode d2s_bad("DepthToSpace");
  d2s_bad.input("x", {1, 3, 1, 1});
  d2s_bad.int_attr("blocksize", 2);
  m = d2s_bad.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({1, 3, 1, 1})}); }) ==
        "ONNX op 'DepthToSpace' (node 'n', opset 13): 3 channels are not a multiple of blocksize^2 (4)");
  OneNode s2d("SpaceToDepth");
  s2d.input("x", {1, 1, 2, 2});
  s2d.int_attr("blocksize", 0);
  CHECK(message_of<FormatError>([&] { s2d.load(); }) ==
        "ONNX op 'SpaceToDepth' (node 'n', opset 13): blocksize must be between 1 and 2^31, got 0");

  OneNode last("ArgMax");
  last.input("x", {2, 4});
  last.int_attr("axis", 1);
  last.int_attr("keepdims", 0);
  last.int_attr("select_last_index", 1);
  last.output_type(::onnx::TensorProto::INT64);
  m = last.load();
  CHECK(m.run({tensor(std::vector<float>{1, 3, 3, 2, 7, 0, 7, 7}, {2, 4})})[0].to_vector<int64_t>() ==
        std::vector<int64_t>{2, 3});
}

TEST_CASE("onnx: Resize interpolates as the spec's coordinates say, and checks its sizes", "[onnx]") {
  OneNode up("Resize");
  up.input("x", {1, 1, 1, 2});
  up.node->add_input("");  // no roi
  up.init("scales", {4}, {1, 1, 1, 2});
  auto* mode = up.node->add_attribute();
  mode->set_name("mode");
  mode->set_type(::onnx::AttributeProto::STRING);
  mode->set_s("linear");
  ember::onnx::Model m = up.load();
  // half_pixel: output i samples (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to the edges.
  CHECK(m.run({tensor(std::vector<float>{1, 2}, {1, 1, 1, 2})})[0].to_vector<float>() ==
        std::vector<float>{1, 1.25f, 1.75f, 2});

  OneNode near("Resize");
  near.input("x", {1, 3});
  near.node->add_input("");
  near.node->add_input("");  // no scales: sizes
  near.input("sizes", {2}, ::onnx::TensorProto::INT64);
  near.m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("n");  // any length, so that the op sees a wrong one
  near.node->add_input("sizes");
  m = near.load();
  // sizes [1, 2]: scale 2/3, round_prefer_floor of (i + 0.5) * 1.5 - 0.5 = 0.25, 1.75 -> 0, 2
  CHECK(m.run({tensor(std::vector<float>{5, 6, 7}, {1, 3}), tensor(std::vector<int64_t>{1, 2})})[0]
            .to_vector<float>() == std::vector<float>{5, 7});
  CHECK(message_of<ShapeError>([&] {
          m.run({tensor(std::vector<float>{5, 6, 7}, {1, 3}), tensor(std::vector<int64_t>{2})});
        }) == "ONNX op 'Resize' (node 'n', opset 13): sizes has 1 values for a rank-2 input");
  CHECK(message_of<ValueError>([&] {
          m.run({tensor(std::vector<float>{5, 6, 7}, {1, 3}), tensor(std::vector<int64_t>{1, -2})});
        }) == "ONNX op 'Resize' (node 'n', opset 13): sizes must not be negative, got -2");

  OneNode neither("Resize");
  neither.input("x", {1, 3});
  m = neither.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({1, 3})}); }) ==
        "ONNX op 'Resize' (node 'n', opset 13): exactly one of scales and sizes must be given");

  OneNode on_ints("Resize");
  on_ints.input("x", {1, 2}, ::onnx::TensorProto::INT32);
  on_ints.node->add_input("");
  on_ints.init("scales", {2}, {1, 2});
  auto* linear = on_ints.node->add_attribute();
  linear->set_name("mode");
  linear->set_type(::onnx::AttributeProto::STRING);
  linear->set_s("linear");
  on_ints.output_type(::onnx::TensorProto::INT32);
  m = on_ints.load();
  CHECK(message_of<NotImplementedError>([&] { m.run({tensor(std::vector<int32_t>{1, 2}, {1, 2})}); }) ==
        "ONNX op 'Resize' (node 'n', opset 13): linear mode on int32 input is not supported");

  OneNode huge("Resize");
  huge.input("x", {1, 2});
  huge.node->add_input("");
  huge.init("scales", {2}, {1, 1e30f});
  m = huge.load();
  // 2e30 positions: refused before any cast or allocation
  CHECK(message_of<ShapeError>([&] { m.run({ones({1, 2})}); }) ==
        "ONNX op 'Resize' (node 'n', opset 13): the output would be " + Scalar(std::floor(2 * double(1e30f))).str() +
            " long in dim 1");
}

// Each op on inputs with no elements gives its empty output, without walking the
// rows of a dim that may be huge; found missing by review (a [2^62, 0] TopK spun).
TEST_CASE("onnx: the new ops on empty inputs, and on values at the ends of int64", "[onnx]") {
  const Tensor huge_empty = zeros({int64_t{1} << 62, 0});  // no memory: a shape only
  OneNode cum("CumSum", 14);
  cum.open_input("x", 2);
  cum.input("axis", {}, ::onnx::TensorProto::INT64);
  cum.node->add_input("axis");
  ember::onnx::Model m = cum.load();
  CHECK(m.run({huge_empty, scalar_tensor(int64_t{1})})[0].shape() == huge_empty.shape());
  CHECK(m.run({zeros({0, int64_t{1} << 62}), scalar_tensor(int64_t{0})})[0].shape() == Shape{0, int64_t{1} << 62});

  OneNode top("TopK");
  top.open_input("x", 2);
  top.input("k", {1}, ::onnx::TensorProto::INT64);
  top.node->add_input("k");
  top.add_output("i", ::onnx::TensorProto::INT64);
  m = top.load();
  CHECK(m.run({huge_empty, tensor(std::vector<int64_t>{0})})[1].shape() == huge_empty.shape());

  OneNode gnd("GatherND");
  gnd.input("x", {3, 0});
  gnd.input("i", {1, 1}, ::onnx::TensorProto::INT64);
  gnd.node->add_input("i");
  m = gnd.load();
  CHECK(m.run({zeros({3, 0}), tensor(std::vector<int64_t>{1}, {1, 1})})[0].shape() == Shape{1, 0});

  OneNode hard("Hardmax");
  hard.input("x", {2, 0});
  m = hard.load();
  CHECK(m.run({zeros({2, 0})})[0].shape() == Shape{2, 0});

  OneNode resize("Resize");
  resize.input("x", {0, 1});
  resize.node->add_input("");
  resize.node->add_input("");
  resize.input("sizes", {2}, ::onnx::TensorProto::INT64);
  resize.node->add_input("sizes");
  m = resize.load();
  // an empty output with one dim of 2^33: nothing planned or allocated for it
  CHECK(m.run({zeros({0, 1}), tensor(std::vector<int64_t>{0, int64_t{1} << 33})})[0].shape() ==
        Shape{0, int64_t{1} << 33});

  // ScatterElements' integer add wraps like int64 arithmetic (no signed overflow).
  OneNode scatter("ScatterElements", 16);
  scatter.input("x", {1}, ::onnx::TensorProto::INT64);
  scatter.input("i", {1}, ::onnx::TensorProto::INT64);
  scatter.node->add_input("i");
  scatter.input("u", {1}, ::onnx::TensorProto::INT64);
  scatter.node->add_input("u");
  auto* red = scatter.node->add_attribute();
  red->set_name("reduction");
  red->set_type(::onnx::AttributeProto::STRING);
  red->set_s("add");
  scatter.output_type(::onnx::TensorProto::INT64);
  m = scatter.load();
  CHECK(m.run({tensor(std::vector<int64_t>{INT64_MAX}), tensor(std::vector<int64_t>{0}),
               tensor(std::vector<int64_t>{1})})[0]
            .to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN});

  // OneHot: an index at INT64_MAX is outside [-depth, depth) (a row of `off`), and
  // before opset 11 a negative index is outside too.
  for (int64_t opset : {9, 11}) {
    OneNode hot("OneHot", opset);
    hot.input("x", {2}, ::onnx::TensorProto::INT64);
    hot.input("depth", {}, ::onnx::TensorProto::INT64);
    hot.node->add_input("depth");
    hot.init("values", {2}, {0, 1});
    m = hot.load();
    CHECK(m.run({tensor(std::vector<int64_t>{INT64_MAX, -1}), scalar_tensor(int64_t{2})})[0].to_vector<float>() ==
          (opset == 9 ? std::vector<float>{0, 0, 0, 0} : std::vector<float>{0, 0, 0, 1}));
  }
}

// DepthToSpace by its element mapping: output[c, h*b + i, w*b + j] is input channel
// (i*b + j)*D + c in DCR mode and c*b*b + i*b + j in CRD, at [h, w]; with D = 2 the
// two modes differ. SpaceToDepth undoes DCR.
TEST_CASE("onnx: DepthToSpace DCR and CRD by their element mapping, SpaceToDepth back", "[onnx]") {
  const int64_t b = 2, D = 2, C = D * b * b, H = 2, W = 3;
  std::vector<float> xv;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) xv.push_back(float(c * 100 + h * 10 + w));
  const Tensor x = tensor(xv, {1, C, H, W});
  for (const char* mode : {"DCR", "CRD"}) {
    OneNode d2s("DepthToSpace");
    d2s.input("x", {1, C, H, W});
    d2s.int_attr("blocksize", b);
    auto* m_attr = d2s.node->add_attribute();
    m_attr->set_name("mode");
    m_attr->set_type(::onnx::AttributeProto::STRING);
    m_attr->set_s(mode);
    const std::vector<float> got = d2s.load().run({x})[0].to_vector<float>();
    REQUIRE(got.size() == size_t(C * H * W));
    for (int64_t c = 0; c < D; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < b; ++i)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t j = 0; j < b; ++j) {
              const int64_t from = std::string(mode) == "DCR" ? (i * b + j) * D + c : c * b * b + i * b + j;
              CHECK(got[size_t(((c * H * b) + h * b + i) * W * b + w * b + j)] == float(from * 100 + h * 10 + w));
            }
  }
  OneNode d2s("DepthToSpace");
  d2s.input("x", {1, C, H, W});
  d2s.int_attr("blocksize", b);
  OneNode s2d("SpaceToDepth");
  s2d.input("x", {1, D, H * b, W * b});
  s2d.int_attr("blocksize", b);
  CHECK(s2d.load().run({d2s.load().run({x})[0]})[0].to_vector<float>() == xv);
}

TEST_CASE("onnx: CumSum and Mod, computed on the host", "[onnx]") {
  OneNode cum("CumSum", 14);
  cum.input("x", {3});
  cum.input("axis", {}, ::onnx::TensorProto::INT64);
  cum.node->add_input("axis");
  cum.int_attr("exclusive", 1);
  cum.int_attr("reverse", 1);
  ember::onnx::Model m = cum.load();
  CHECK(m.run({tensor(std::vector<float>{1, 2, 3}), scalar_tensor(int64_t{0})})[0].to_vector<float>() ==
        std::vector<float>{5, 3, 0});
  CHECK(message_of<ShapeError>([&] { m.run({tensor(std::vector<float>{1, 2, 3}), scalar_tensor(int64_t{1})}); }) ==
        "ONNX op 'CumSum' (node 'n', opset 14): axis 1 is out of range for a rank-1 input");

  for (int c_style : {0, 1}) {
    OneNode mod("Mod");
    mod.input("x", {4}, ::onnx::TensorProto::INT64);
    mod.input("d", {4}, ::onnx::TensorProto::INT64);
    mod.node->add_input("d");
    mod.int_attr("fmod", c_style);
    mod.output_type(::onnx::TensorProto::INT64);
    m = mod.load();
    const Tensor a = tensor(std::vector<int64_t>{-7, 7, -7, INT64_MIN}), d = tensor(std::vector<int64_t>{3, -3, -3, -1});
    // Python's % takes the divisor's sign, C's the dividend's.
    CHECK(m.run({a, d})[0].to_vector<int64_t>() ==
          (c_style ? std::vector<int64_t>{-1, 1, -1, 0} : std::vector<int64_t>{2, -2, -1, 0}));
    CHECK(message_of<ValueError>([&] { m.run({a, tensor(std::vector<int64_t>{1, 0, 1, 1})}); }) ==
          "ONNX op 'Mod' (node 'n', opset 13): integer remainder by zero");
  }
  OneNode float_mod("Mod");
  float_mod.input("x", {2});
  float_mod.input("d", {2});
  float_mod.node->add_input("d");
  m = float_mod.load();
  CHECK(message_of<ValueError>([&] { m.run({ones({2}), ones({2})}); }) ==
        "ONNX op 'Mod' (node 'n', opset 13): fmod must be 1 for floating-point inputs");
}

TEST_CASE("onnx: TopK orders ties by index and NaN first; Round halves to even; ReduceProd", "[onnx]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OneNode top("TopK");
  top.input("x", {5});
  top.input("k", {1}, ::onnx::TensorProto::INT64);
  top.node->add_input("k");
  top.node->add_output("i");
  auto* i_out = top.m.mutable_graph()->add_output();
  i_out->set_name("i");
  i_out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  i_out->mutable_type()->mutable_tensor_type()->mutable_shape();
  ember::onnx::Model m = top.load();
  auto r = m.run({tensor(std::vector<float>{2, 7, nan, 7, 1}), tensor(std::vector<int64_t>{3})});
  CHECK(r[1].to_vector<int64_t>() == std::vector<int64_t>{2, 1, 3});
  CHECK(std::isnan(r[0].to_vector<float>()[0]));
  CHECK(r[0].to_vector<float>()[1] == 7);
  CHECK(message_of<ShapeError>([&] { m.run({ones({5}), tensor(std::vector<int64_t>{6})}); }) ==
        "ONNX op 'TopK' (node 'n', opset 13): k is 6 but the axis has 5 values");

  OneNode round("Round", 11);
  round.input("x", {6});
  m = round.load();
  CHECK(m.run({tensor(std::vector<float>{0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})})[0].to_vector<float>() ==
        std::vector<float>{0, 2, 2, -0.0f, -2, 2});

  OneNode prod("ReduceProd");
  prod.input("x", {2, 3}, ::onnx::TensorProto::INT64);
  prod.ints("axes", {1});
  prod.int_attr("keepdims", 0);
  prod.output_type(::onnx::TensorProto::INT64);
  m = prod.load();
  // 3037000500^2 does not fit a double's 53 bits exactly; int64 products are exact.
  CHECK(m.run({tensor(std::vector<int64_t>{1, 3037000499, 3037000499, -2, 3, 5}, {2, 3})})[0].to_vector<int64_t>() ==
        std::vector<int64_t>{int64_t{3037000499} * 3037000499, -30});
}

TEST_CASE("onnx: GatherND with batch dims, ScatterND adding in index order, and their checks", "[onnx]") {
  OneNode gnd("GatherND", 12);
  gnd.input("x", {2, 2, 2});
  gnd.input("i", {2, 1}, ::onnx::TensorProto::INT64);
  gnd.node->add_input("i");
  gnd.int_attr("batch_dims", 1);
  ember::onnx::Model m = gnd.load();
  // batch 0 takes its row 1, batch 1 its row -2 (= 0)
  const Tensor x = tensor(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(m.run({x, tensor(std::vector<int64_t>{1, -2}, {2, 1})})[0].to_vector<float>() ==
        std::vector<float>{2, 3, 4, 5});
  CHECK(message_of<IndexError>([&] { m.run({x, tensor(std::vector<int64_t>{2, 0}, {2, 1})}); }) ==
        "ONNX op 'GatherND' (node 'n', opset 12): index 2 is out of range for dim 1 of size 2");

  OneNode snd("ScatterND", 16);
  snd.input("x", {4});
  snd.input("i", {3, 1}, ::onnx::TensorProto::INT64);
  snd.node->add_input("i");
  snd.init("u", {3}, {10, 20, 30});
  auto* red = snd.node->add_attribute();
  red->set_name("reduction");
  red->set_type(::onnx::AttributeProto::STRING);
  red->set_s("add");
  m = snd.load();
  CHECK(m.run({tensor(std::vector<float>{1, 2, 3, 4}), tensor(std::vector<int64_t>{3, 0, 3}, {3, 1})})[0]
            .to_vector<float>() == std::vector<float>{21, 2, 3, 44});

  OneNode sel("ScatterElements");
  sel.input("x", {2, 2});
  sel.input("i", {1, 2}, ::onnx::TensorProto::INT64);
  sel.node->add_input("i");
  sel.init("u", {2, 1}, {7, 8});
  m = sel.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({2, 2}), zeros({1, 2}, kInt64)}); }) ==
        "ONNX op 'ScatterElements' (node 'n', opset 13): updates of shape [2, 1] do not match indices of shape [1, 2]");
}

namespace {

// einsum by definition, for equations of letters with an explicit output: every
// assignment of values to the labels, the product of the inputs there, added into
// the output there, in float64. The reference Einsum is checked against.
std::vector<double> naive_einsum(const std::string& eq, const std::vector<Tensor>& inputs) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = eq.find(',', start);
    terms.push_back(eq.substr(start, std::min(comma, arrow) - start));
    if (comma == std::string::npos || comma > arrow) break;
    start = comma + 1;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = inputs[i].size(int64_t(d));
    values.push_back(inputs[i].to(kFloat64).contiguous().to_vector<double>());
  }
  const auto flat = [&size](const std::string& labels, const std::map<char, int64_t>& at) {
    int64_t f = 0;
    for (char c : labels) f = f * size[c] + at.at(c);
    return f;
  };
  int64_t out_numel = 1, total = 1;
  for (char c : out) out_numel *= size[c];
  for (auto& [c, n] : size) total *= n;
  std::vector<double> result(static_cast<size_t>(out_numel), 0.0);
  std::map<char, int64_t> at;
  for (int64_t n = 0; n < total; ++n) {
    int64_t rest = n;
    for (auto& [c, s] : size) {
      at[c] = rest % s;
      rest /= s;
    }
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i) product *= values[i][size_t(flat(terms[i], at))];
    result[size_t(flat(out, at))] += product;
  }
  return result;
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  const std::vector<double> x = a.to(kFloat64).contiguous().to_vector<double>(),
                            y = b.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > 1e-5 + 1e-5 * std::abs(y[i])) return false;
  return true;
}

ember::onnx::Model einsum_model(const std::string& eq, const std::vector<Tensor>& inputs) {
  OneNode e("Einsum", 12);
  const int elem = inputs[0].dtype() == kInt32 ? ::onnx::TensorProto::INT32 : ::onnx::TensorProto::FLOAT;
  e.output_type(elem);
  e.input("x", inputs[0].shape(), elem);
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::string name = "x";  // (appended, not "x" + ...: GCC 12's -Wrestrict false positive, bug 105329)
    name += std::to_string(i);
    e.input(name, inputs[i].shape(), elem);
    e.node->add_input(name);
  }
  auto* a = e.node->add_attribute();
  a->set_name("equation");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(eq);
  return e.load();
}

}  // namespace

TEST_CASE("onnx: Einsum against einsum by definition", "[onnx]") {
  manual_seed(5);
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},       {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhid,bhjd->bhij", {{2, 3, 4, 5}, {2, 3, 6, 5}}}, {"ii->i", {{4, 4}}},
      {"ii->", {{4, 4}}},                    {"ij->", {{3, 4}}},
      {"ij->ji", {{3, 4}}},                  {"i,i->", {{5}, {5}}},
      {"i,j->ij", {{3}, {4}}},               {"ijk,jil->kl", {{2, 3, 4}, {3, 2, 5}}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 2}}}, {"iij,jk->ik", {{3, 3, 4}, {4, 2}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},       {"bij,jk->bk", {{2, 3, 4}, {4, 5}}},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in;
    for (const Shape& s : c.shapes) in.push_back(randn(s));
    ember::onnx::Model m = einsum_model(c.eq, in);
    const std::vector<float> got = m.run(in)[0].to_vector<float>();
    const std::vector<double> want = naive_einsum(c.eq, in);
    INFO(c.eq);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
  }
  // Implicit outputs (letters used once, in ASCII order) and ellipses, against the
  // same equation written out.
  const Tensor a = randn({2, 1, 3, 4}), b = randn({5, 4, 2});
  CHECK(same_values(einsum_model("...ij,...jk->...ik", {a, b}).run({a, b})[0],
                 einsum_model("xyij,xyjk->xyik", {a.expand({2, 5, 3, 4}), b.expand({2, 5, 4, 2})})
                     .run({a.expand({2, 5, 3, 4}).contiguous(), b.expand({2, 5, 4, 2}).contiguous()})[0]));
  const Tensor t = randn({3, 4}), u = randn({4, 2});
  CHECK(same_values(einsum_model("ij,jk", {t, u}).run({t, u})[0], matmul(t, u)));
  // Against the definition: integers keep their type (sums included), a contracted
  // ellipsis dim of 1 meets 4, upper-case labels, spaces, a label in three operands.
  const Tensor ia = tensor(std::vector<int32_t>{3, -1, 4, 1, -5, 9}, {2, 3}),
               ib = tensor(std::vector<int32_t>{2, 6, -5, 3, 5, -8, 9, 7, 9, 3, -2, 3}, {3, 4});
  const Tensor isum = einsum_model("ij,jk->k", {ia, ib}).run({ia, ib})[0];
  CHECK(isum.dtype() == kInt32);
  CHECK(same_values(isum, tensor(naive_einsum("ij,jk->k", {ia, ib}))));
  const Tensor e1 = randn({1, 3}), e4 = randn({4, 3});
  CHECK(same_values(einsum_model("...i,...i->i", {e1, e4}).run({e1, e4})[0],
                    tensor(naive_einsum("ai,ai->i", {e1.expand({4, 3}), e4})).to(kFloat32)));
  const Tensor p3 = randn({2, 3}), q3 = randn({3, 5});
  CHECK(same_values(einsum_model(" Ab , bC -> AC ", {p3, q3}).run({p3, q3})[0],
                    tensor(naive_einsum("ab,bc->ac", {p3, q3})).reshape({2, 5}).to(kFloat32)));
  const Tensor v1 = randn({4}), v2 = randn({4}), v3 = randn({4, 2});
  CHECK(same_values(einsum_model("i,i,ij->j", {v1, v2, v3}).run({v1, v2, v3})[0],
                    tensor(naive_einsum("i,i,ij->j", {v1, v2, v3})).to(kFloat32)));
  CHECK(same_values(einsum_model("ba", {t}).run({t})[0], t.t()));
  CHECK(message_of<ShapeError>([&] { einsum_model("ij,jk->ik", {t, t}).run({t, t}); }) ==
        "ONNX op 'Einsum' (node 'n', opset 12): a label has sizes 4 and 3");
  CHECK(message_of<FormatError>([&] { einsum_model("ij->k", {t}).run({t}); }) ==
        "ONNX op 'Einsum' (node 'n', opset 12): the output names a label no input has");
}

namespace {

// One recurrent layer as the ONNX operator definitions write it, in float64
// scalar loops, for checking RNN, GRU and LSTM where the conformance data does
// not reach: reverse and bidirectional runs, sequence_lens, clip and GRU's
// linear_before_reset. Default activations (Sigmoid, Tanh, Tanh), no peepholes.
struct RecurrentRef {
  std::string op;
  int64_t seq = 4, batch = 3, input = 2, hidden = 3;
  int dirs = 1;
  bool reverse = false, linear_before_reset = false;
  bool lstm_extras = false;  // LSTM with an initial cell state and peepholes
  double clip = 0;
  std::vector<int64_t> lens;  // empty: every sequence runs to the end
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
};

// Y [seq, dirs, batch, hidden] then Y_h [dirs, batch, hidden] (then Y_c for LSTM), flat.
std::vector<std::vector<double>> recurrent_by_definition(const RecurrentRef& s, const std::vector<double>& x,
                                                         const std::vector<double>& w, const std::vector<double>& r,
                                                         const std::vector<double>& b, const std::vector<double>& h0,
                                                         const std::vector<double>& c0, const std::vector<double>& p) {
  const int64_t G = s.gates(), H = s.hidden, B = s.batch, I = s.input, T = s.seq;
  std::vector<double> y(size_t(T * s.dirs * B * H), 0.0), yh(size_t(s.dirs * B * H)), yc(size_t(s.dirs * B * H));
  const auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  const auto cl = [&s](double v) { return s.clip > 0 ? std::max(-s.clip, std::min(s.clip, v)) : v; };
  for (int d = 0; d < s.dirs; ++d) {
    const double* W = &w[size_t(d * G * H * I)];
    const double* R = &r[size_t(d * G * H * H)];
    const double* Wb = &b[size_t(d * 2 * G * H)];
    const double* Rb = Wb + G * H;
    for (int64_t n = 0; n < B; ++n) {
      std::vector<double> h(&h0[size_t((d * B + n) * H)], &h0[size_t((d * B + n) * H)] + H), c(size_t(H), 0.0);
      if (s.lstm_extras) c.assign(&c0[size_t((d * B + n) * H)], &c0[size_t((d * B + n) * H)] + H);
      const double* P = s.lstm_extras ? &p[size_t(d * 3 * H)] : nullptr;  // peepholes i, o, f
      const int64_t len = s.lens.empty() ? T : s.lens[size_t(n)];
      const bool backwards = s.reverse || d == 1;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backwards ? len - 1 - step : step;
        const double* xt = &x[size_t((t * B + n) * I)];
        // xw[g][j] and hr[g][j]: the input's and the state's projections with their biases.
        std::vector<double> xw(size_t(G * H)), hr(size_t(G * H));
        for (int64_t g = 0; g < G * H; ++g) {
          xw[size_t(g)] = Wb[g];
          hr[size_t(g)] = Rb[g];
          for (int64_t k = 0; k < I; ++k) xw[size_t(g)] += xt[k] * W[g * I + k];
          for (int64_t k = 0; k < H; ++k) hr[size_t(g)] += h[size_t(k)] * R[g * H + k];
        }
        std::vector<double> hn(static_cast<size_t>(H)), z(static_cast<size_t>(H)), rg(static_cast<size_t>(H));
        if (s.op == "GRU")
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = sig(cl(xw[size_t(j)] + hr[size_t(j)]));
            rg[size_t(j)] = sig(cl(xw[size_t(H + j)] + hr[size_t(H + j)]));
          }
        for (int64_t j = 0; j < H; ++j) {
          const auto at = [H, j](const std::vector<double>& v, int64_t g) { return v[size_t(g * H + j)]; };
          if (s.op == "RNN") {
            hn[size_t(j)] = std::tanh(cl(at(xw, 0) + at(hr, 0)));
          } else if (s.op == "GRU") {
            double pre;
            if (s.linear_before_reset) {
              pre = at(xw, 2) + rg[size_t(j)] * at(hr, 2);
            } else {  // (r * h) R_h^T + Rb_h: the state is reset before its projection
              pre = at(xw, 2) + Rb[2 * H + j];
              for (int64_t k = 0; k < H; ++k) pre += rg[size_t(k)] * h[size_t(k)] * R[(2 * H + j) * H + k];
            }
            hn[size_t(j)] = (1 - z[size_t(j)]) * std::tanh(cl(pre)) + z[size_t(j)] * h[size_t(j)];
          } else {
            const double c_prev = c[size_t(j)];
            const double i = sig(cl(at(xw, 0) + at(hr, 0) + (P ? P[j] * c_prev : 0)));
            const double f = sig(cl(at(xw, 2) + at(hr, 2) + (P ? P[2 * H + j] * c_prev : 0)));
            const double cand = std::tanh(cl(at(xw, 3) + at(hr, 3)));
            c[size_t(j)] = f * c_prev + i * cand;
            const double o = sig(cl(at(xw, 1) + at(hr, 1) + (P ? P[H + j] * c[size_t(j)] : 0)));
            hn[size_t(j)] = o * std::tanh(c[size_t(j)]);
          }
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j) y[size_t(((t * s.dirs + d) * B + n) * H + j)] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[size_t((d * B + n) * H + j)] = h[size_t(j)];
        yc[size_t((d * B + n) * H + j)] = c[size_t(j)];
      }
    }
  }
  std::vector<std::vector<double>> out{y, yh};
  if (s.op == "LSTM") out.push_back(yc);
  return out;
}

}  // namespace

TEST_CASE("onnx: RNN, GRU and LSTM reversed, bidirectional, clipped and with sequence_lens, by their equations",
          "[onnx]") {
  manual_seed(9);
  std::vector<RecurrentRef> cases;
  const auto of = [](const char* op) {
    RecurrentRef r;
    r.op = op;
    return r;
  };
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    RecurrentRef forward_lens = of(op);
    forward_lens.lens = {4, 2, 1};
    RecurrentRef reverse_clip = of(op);
    reverse_clip.reverse = true;
    reverse_clip.clip = 0.7;
    reverse_clip.lens = {1, 4, 3};
    RecurrentRef both = of(op);
    both.dirs = 2;
    both.lens = {3, 4, 2};
    cases.insert(cases.end(), {forward_lens, reverse_clip, both});
  }
  RecurrentRef lstm_full = of("LSTM");  // distinct peepholes and a nonzero cell state, both directions
  lstm_full.dirs = 2;
  lstm_full.lstm_extras = true;
  lstm_full.lens = {4, 3, 2};
  cases.push_back(lstm_full);
  RecurrentRef gru_lbr = of("GRU");
  gru_lbr.dirs = 2;
  gru_lbr.linear_before_reset = true;
  cases.push_back(gru_lbr);
  for (const RecurrentRef& c : cases) {
    const int64_t G = c.gates(), H = c.hidden;
    const Tensor x = randn({c.seq, c.batch, c.input}), w = randn({c.dirs, G * H, c.input}),
                 r = randn({c.dirs, G * H, H}), b = randn({c.dirs, 2 * G * H}), h0 = randn({c.dirs, c.batch, H}),
                 c0 = randn({c.dirs, c.batch, H}), p = randn({c.dirs, 3 * H});
    OneNode node(c.op, 14);
    node.input("x", x.shape());
    node.init("w", w.shape(), w.to_vector<float>());
    node.init("r", r.shape(), r.to_vector<float>());
    node.init("b", b.shape(), b.to_vector<float>());
    node.input("lens", {c.batch}, ::onnx::TensorProto::INT32);
    node.node->add_input(c.lens.empty() ? "" : "lens");
    node.input("h0", h0.shape());
    node.node->add_input("h0");
    if (c.lstm_extras) {
      node.input("c0", c0.shape());
      node.node->add_input("c0");
      node.init("p", p.shape(), p.to_vector<float>());
    }
    auto* hidden = node.node->add_attribute();
    hidden->set_name("hidden_size");
    hidden->set_type(::onnx::AttributeProto::INT);
    hidden->set_i(H);
    auto* dir = node.node->add_attribute();
    dir->set_name("direction");
    dir->set_type(::onnx::AttributeProto::STRING);
    dir->set_s(c.dirs == 2 ? "bidirectional" : c.reverse ? "reverse" : "forward");
    if (c.clip > 0) {
      auto* clip = node.node->add_attribute();
      clip->set_name("clip");
      clip->set_type(::onnx::AttributeProto::FLOAT);
      clip->set_f(static_cast<float>(c.clip));
    }
    if (c.linear_before_reset) node.int_attr("linear_before_reset", 1);
    node.node->add_output("y_h");
    auto* yh = node.m.mutable_graph()->add_output();
    yh->set_name("y_h");
    yh->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    yh->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (c.op == "LSTM") node.add_output("y_c", ::onnx::TensorProto::FLOAT);
    ember::onnx::Model m = node.load();
    std::vector<int32_t> lens(c.lens.begin(), c.lens.end());
    if (lens.empty()) lens.assign(size_t(c.batch), int32_t(c.seq));
    const auto got = c.lstm_extras ? m.run({x, tensor(lens), h0, c0}) : m.run({x, tensor(lens), h0});
    const auto as_double = [](const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); };
    const auto want = recurrent_by_definition(c, as_double(x), as_double(w), as_double(r), as_double(b), as_double(h0),
                                              as_double(c0), as_double(p));
    INFO(c.op << " dirs " << c.dirs << " reverse " << c.reverse << " clip " << c.clip);
    REQUIRE(got.size() == want.size());  // Y, Y_h, and Y_c for LSTM
    for (size_t k = 0; k < want.size(); ++k) {
      const std::vector<float> g = got[k].to_vector<float>();
      REQUIRE(g.size() == want[k].size());
      for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(want[k][i]).margin(1e-5));
    }
  }
}

TEST_CASE("onnx: NegativeLogLikelihoodLoss weights, ignores and refuses a negative class", "[onnx]") {
  const Tensor x = tensor(std::vector<float>{-1, -2, -3, -4, -5, -6}, {2, 3});
  for (int ignore : {0, 1}) {
    OneNode nll("NegativeLogLikelihoodLoss");
    nll.input("x", {2, 3});
    nll.input("t", {2}, ::onnx::TensorProto::INT64);
    nll.node->add_input("t");
    nll.init("w", {3}, {1, 2, 3});
    if (ignore) nll.int_attr("ignore_index", 0);
    ember::onnx::Model m = nll.load();
    // losses 3 * 3 (row 0, class 2) and 4 * 1 (row 1, class 0), over the weights 3 + 1;
    // ignoring class 0 leaves 9 over 3.
    CHECK(m.run({x, tensor(std::vector<int64_t>{2, 0})})[0].item<float>() == (ignore ? 3.0f : 3.25f));
    if (!ignore)
      CHECK(message_of<IndexError>([&] { m.run({x, tensor(std::vector<int64_t>{2, -1})}); }) ==
            "ONNX op 'NegativeLogLikelihoodLoss' (node 'n', opset 13): a target of -1 is not a class (0 to 2)");
  }
}

// The refusals of the new ops that the cases above do not reach, by their exact
// text (docs/errors.md).
TEST_CASE("onnx: the new ops' refusals, exactly as documented", "[onnx][errors]") {
  OneNode rnn("RNN", 14);
  rnn.input("x", {2, 1, 3});
  rnn.init("w", {1, 4, 3}, std::vector<float>(12, 0.1f));  // hidden 4 declared, 2 in the attribute
  rnn.init("r", {1, 4, 4}, std::vector<float>(16, 0.1f));
  rnn.int_attr("hidden_size", 2);
  ember::onnx::Model m = rnn.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({2, 1, 3})}); }) ==
        "ONNX op 'RNN' (node 'n', opset 14): W must have shape [1, 2, 3], got [1, 4, 3]");
  OneNode huge_hidden("LSTM", 14);
  huge_hidden.input("x", {2, 1, 3});
  huge_hidden.init("w", {1, 4, 3}, std::vector<float>(12, 0.1f));  // refused at load, before any shape check
  huge_hidden.init("r", {1, 4, 1}, std::vector<float>(4, 0.1f));
  huge_hidden.int_attr("hidden_size", int64_t{1} << 62);
  CHECK(message_of<FormatError>([&] { huge_hidden.load(); }) ==
        "ONNX op 'LSTM' (node 'n', opset 14): hidden_size must be between 1 and 2^40, got 4611686018427387904");
  OneNode bad_layout("GRU", 14);
  bad_layout.input("x", {2, 1, 3});
  bad_layout.init("w", {1, 6, 3}, std::vector<float>(18, 0.1f));
  bad_layout.init("r", {1, 6, 2}, std::vector<float>(12, 0.1f));
  bad_layout.int_attr("hidden_size", 2);
  bad_layout.int_attr("layout", 2);
  CHECK(message_of<FormatError>([&] { bad_layout.load(); }) ==
        "ONNX op 'GRU' (node 'n', opset 14): layout must be 0 or 1, got 2");

  const Tensor t = ones({2, 2});
  CHECK(message_of<FormatError>([&] { einsum_model("ij,j1->i", {t, t}); }) ==
        "ONNX op 'Einsum' (node 'n', opset 12): the equation has '1', which is not a letter");
  CHECK(message_of<ShapeError>([&] { einsum_model("ij,jk,kl->il", {t, t}).run({t, t}); }) ==
        "ONNX op 'Einsum' (node 'n', opset 12): the equation has 3 terms for 2 inputs");
  CHECK(message_of<ShapeError>([&] { einsum_model("ijk->i", {t}).run({t}); }) ==
        "ONNX op 'Einsum' (node 'n', opset 12): a term names 3 dims but its input has 2");

  OneNode cubic10("Resize", 10);
  cubic10.input("x", {1, 2});
  cubic10.init("scales", {2}, {1, 2});
  auto* mode = cubic10.node->add_attribute();
  mode->set_name("mode");
  mode->set_type(::onnx::AttributeProto::STRING);
  mode->set_s("cubic");
  CHECK(message_of<FormatError>([&] { cubic10.load(); }) ==
        "ONNX op 'Resize' (node 'n', opset 10): mode 'cubic' is only in Resize from opset 11");

  OneNode cum("CumSum", 14);
  cum.input("x", {3});
  cum.input("axis", {2}, ::onnx::TensorProto::INT64);
  cum.node->add_input("axis");
  m = cum.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({3}), tensor(std::vector<int64_t>{0, 0})}); }) ==
        "ONNX op 'CumSum' (node 'n', opset 14): axis must hold one value, got 2");

  OneNode snd("ScatterND");
  snd.input("x", {4});
  snd.input("i", {2, 1}, ::onnx::TensorProto::INT64);
  snd.node->add_input("i");
  snd.init("u", {3}, {1, 2, 3});
  m = snd.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({4}), tensor(std::vector<int64_t>{0, 1}, {2, 1})}); }) ==
        "ONNX op 'ScatterND' (node 'n', opset 13): updates must have shape [2], got [3]");
}

TEST_CASE("onnx: ConvTranspose checks what its kernel trusts", "[onnx][errors]") {
  OneNode bad_channels("ConvTranspose");
  bad_channels.input("x", {1, 2, 3, 3});
  bad_channels.init("w", {4, 1, 3, 3}, std::vector<float>(36, 1.0f));
  ember::onnx::Model m = bad_channels.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({1, 2, 3, 3})}); }) ==
        "ONNX op 'ConvTranspose' (node 'n', opset 13): a weight of shape [4, 1, 3, 3] with group 1 does not fit an input "
        "of 2 channels");
  OneNode zero_stride("ConvTranspose");
  zero_stride.input("x", {1, 1, 3, 3});
  zero_stride.init("w", {1, 1, 2, 2}, {1, 2, 3, 4});
  zero_stride.ints("strides", {0, 0});
  m = zero_stride.load();
  CHECK_THROWS_AS(m.run({ones({1, 1, 3, 3})}), ShapeError);

  // output_padding beyond the stride (allowed by dilation): the extra positions
  // are zeros. x = 1 everywhere, w 1x1x2x2 = [[1, 2], [3, 4]], dilation 3, stride 1:
  // the kernel writes rows/cols 0..5 (reach 3 + 3); two more of zeros follow.
  OneNode opad("ConvTranspose");
  opad.input("x", {1, 1, 3, 3});
  opad.init("w", {1, 1, 2, 2}, {1, 2, 3, 4});
  opad.ints("dilations", {3, 3});
  opad.ints("output_padding", {2, 2});
  m = opad.load();
  Tensor y = m.run({ones({1, 1, 3, 3})})[0];
  REQUIRE(y.shape() == Shape{1, 1, 8, 8});
  // Independent reference: y[i][j] = sum over input (a, b) and kernel (p, q) with
  // i = a + 3p, j = b + 3q of w[p][q].
  auto yv = y.to_vector<float>();
  const float w[2][2] = {{1, 2}, {3, 4}};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = 0;
      for (int p = 0; p < 2; ++p)
        for (int q = 0; q < 2; ++q) {
          int a = i - 3 * p, b = j - 3 * q;
          if (a >= 0 && a < 3 && b >= 0 && b < 3) want += w[p][q];
        }
      CHECK(yv[static_cast<size_t>(i * 8 + j)] == want);
    }
}

TEST_CASE("onnx: hostile shapes and values in nodes", "[onnx][errors]") {
  // A ConstantOfShape of 2^34 elements is not folded at load (it would fill 64 GiB).
  OneNode big("ConstantOfShape");
  big.m.mutable_graph()->mutable_node(0)->set_input(0, "shape");
  auto* s = big.m.mutable_graph()->add_initializer();
  s->set_name("shape");
  s->set_data_type(::onnx::TensorProto::INT64);
  s->add_dims(2);
  s->add_int64_data(int64_t{1} << 17);
  s->add_int64_data(int64_t{1} << 17);
  ember::onnx::Model m = big.load();
  CHECK(m.num_steps() == 1);
  {  // Run under a CPU memory limit, it is refused before the system is asked.
    const size_t held = cpu_memory_allocated(), previous = cpu_memory_limit();
    cpu_set_memory_limit(size_t{1} << 30);
    CHECK(message_of<OutOfMemoryError>([&] { m.run({}); }) ==
          "CPU out of memory: tried to allocate 68719476736 bytes with " + std::to_string(held) +
              " bytes already allocated, over the limit of 1073741824 bytes (cpu_set_memory_limit)");
    cpu_set_memory_limit(previous);
    CHECK(cpu_memory_allocated() == held);
  }

  OneNode squeeze("Squeeze", 11);
  squeeze.input("x", {1, 3, 1});
  squeeze.ints("axes", {0, 0});
  m = squeeze.load();
  CHECK(message_of<ShapeError>([&] { m.run({ones({1, 3, 1})}); }) ==
        "ONNX op 'Squeeze' (node 'n', opset 11): axes repeat a dim");

  OneNode lse("ReduceLogSumExp");
  lse.input("x", {2, 2});
  lse.ints("axes", {1});
  m = lse.load();
  float inf = std::numeric_limits<float>::infinity();
  auto r = m.run({tensor(std::vector<float>{-inf, -inf, 0.0f, 0.0f}, {2, 2})})[0].to_vector<float>();
  CHECK(r[0] == -inf);
  CHECK(r[1] == Approx(std::log(2.0)));

  OneNode div("Div");
  div.input("x", {2}, ::onnx::TensorProto::INT32);
  div.input("d", {2}, ::onnx::TensorProto::INT32);
  div.node->add_input("d");
  div.m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT32);
  m = div.load();
  CHECK(m.run({tensor(std::vector<int32_t>{7, -7}), tensor(std::vector<int32_t>{2, 2})})[0].to_vector<int32_t>() ==
        std::vector<int32_t>{3, -3});
  CHECK(message_of<ValueError>([&] { m.run({tensor(std::vector<int32_t>{7, 7}), tensor(std::vector<int32_t>{2, 0})}); }) ==
        "ONNX op 'Div' (node 'n', opset 13): integer division by zero");

  OneNode bn("BatchNormalization", 9);
  bn.input("x", {1, 2, 2, 2});
  for (const char* n : {"scale", "b", "mean", "var"}) bn.init(n, {2}, {1, 1});
  for (const char* o : {"m", "v", "sm", "sv"}) bn.node->add_output(o);
  CHECK(message_of<NotImplementedError>([&] { bn.load(); }) ==
        "ONNX op 'BatchNormalization' (node 'n', opset 9): the training outputs (mean, var, saved statistics) is not "
        "supported");
}

namespace {

// |y_int8 - y_float32| <= (s_x / 2) sum_p |W[j][p]| + (s_j / 2) sum_p (|x[i][p]| + s_x / 2)
// (docs/quant.md), per output, with s_x from x's range (widened to include 0) over
// 255 codes and s_j = max_p |W[j][p]| / 127.
void check_int8_bound(const Tensor& x, const std::vector<std::vector<float>>& w, const Tensor& yq, const Tensor& yf) {
  auto xv = x.to_vector<float>();
  double lo = 0, hi = 0;
  for (float v : xv) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
  double sx = (hi - lo) / 255.0;
  int64_t rows = x.size(0), k = x.size(1), n = static_cast<int64_t>(w.size());
  auto q = yq.to_vector<float>(), f = yf.to_vector<float>();
  int bad = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double wabs = 0, wmax = 0, xabs = 0;
      for (int64_t p = 0; p < k; ++p) {
        wabs += std::fabs(w[j][p]);
        wmax = std::max<double>(wmax, std::fabs(w[j][p]));
        xabs += std::fabs(xv[i * k + p]) + sx / 2;
      }
      double bound = sx / 2 * wabs + wmax / 127 / 2 * xabs + 1e-5;
      if (!(std::fabs(q[i * n + j] - f[i * n + j]) <= bound)) ++bad;
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("onnx: quantize_dynamic runs MatMul and Gemm with constant weights in int8", "[onnx][quant]") {
  const int64_t k = 24, n = 10;
  std::vector<std::vector<float>> w(n, std::vector<float>(k));  // W [n, k] as nn::Linear holds it
  std::vector<float> w_flat, wt_flat(k * n), bias;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) {
      w[j][p] = static_cast<float>(std::sin(0.37 * (j * k + p)) * 0.8);
      w_flat.push_back(w[j][p]);
      wt_flat[p * n + j] = w[j][p];
    }
    bias.push_back(0.1f * static_cast<float>(j) - 0.3f);
  }
  Tensor x = randn({5, k});

  // Gemm(x, W, b) with transB = 1, as PyTorch exports nn.Linear.
  OneNode gemm("Gemm");
  gemm.input("x", {5, k});
  gemm.init("W", {n, k}, w_flat);
  gemm.init("b", {n}, bias);
  auto* t = gemm.node->add_attribute();
  t->set_name("transB");
  t->set_type(::onnx::AttributeProto::INT);
  t->set_i(1);
  ember::onnx::Model fm = gemm.load();
  size_t rewritten = 0;
  ember::onnx::Model qm = ember::onnx::quantize_dynamic(fm, &rewritten);
  CHECK(rewritten == 1);
  Tensor yf = fm.run({x})[0], yq = qm.run({x})[0];
  CHECK_FALSE(yq.to_vector<float>() == yf.to_vector<float>());  // it really ran in int8
  check_int8_bound(x, w, sub(yq, tensor(bias, {1, n})), sub(yf, tensor(bias, {1, n})));
  CHECK(fm.run({x})[0].to_vector<float>() == yf.to_vector<float>());  // the float model is unchanged

  // MatMul(x, W^T [k, n]).
  OneNode matmul("MatMul");
  matmul.input("x", {5, k});
  matmul.init("WT", {k, n}, wt_flat);
  fm = matmul.load();
  qm = ember::onnx::quantize_dynamic(fm, &rewritten);
  CHECK(rewritten == 1);
  check_int8_bound(x, w, qm.run({x})[0], fm.run({x})[0]);

  CHECK(message_of<ValueError>([] { ember::onnx::quantize_dynamic(ember::onnx::Model()); }) ==
        "onnx::quantize_dynamic: the model is empty (default-constructed, not loaded)");
}

// The quantized ops by their definitions, on shapes the conformance data does not
// reach: QLinearConv with per-channel weight parameters, a bias, groups, strides
// and asymmetric pads; QLinearMatMul with a scale per row and per column; and
// MatMulInteger with a constant b, which the plan packs once at load.
namespace {

uint8_t code_u8(int64_t i) { return uint8_t((i * 37 + 11) % 256); }
int8_t code_s8(int64_t i) { return int8_t((i * 53 + 7) % 256 - 128); }
int64_t saturated(double v, int64_t lo, int64_t hi) { return std::min<int64_t>(hi, std::max<int64_t>(lo, int64_t(v))); }

}  // namespace

TEST_CASE("onnx: QLinearConv per output channel, grouped, strided and padded, by its definition", "[onnx][quant]") {
  // 8 channels and 8 outputs per group under a 2-wide window: the int8 GEMM's size.
  const int64_t n = 2, c = 16, h = 6, wd = 5, m = 16, group = 2, kh = 3, kw = 2, cg = c / group;
  const int64_t stride[2] = {2, 1}, pb[2] = {1, 0}, pe[2] = {2, 1};  // pads begin, end: asymmetric
  OneNode conv("QLinearConv", 13);
  conv.output_type(::onnx::TensorProto::UINT8);
  conv.input("x", {n, c, h, wd}, ::onnx::TensorProto::UINT8);
  const float xs = 0.02f, ys = 0.3f;
  const uint8_t xz = 120, yz = 100;
  std::vector<float> ws;
  std::vector<int8_t> wz, wv;
  std::vector<int32_t> bias;
  for (int64_t o = 0; o < m; ++o) {
    ws.push_back(0.01f + 0.007f * float(o));
    wz.push_back(int8_t(o * 5 - 12));
    bias.push_back(int32_t(o * 411 - 1500));
  }
  for (int64_t i = 0; i < m * cg * kh * kw; ++i) wv.push_back(code_s8(i));
  conv.init_raw<float>("xs", {}, ::onnx::TensorProto::FLOAT, {xs});
  conv.init_raw<uint8_t>("xz", {}, ::onnx::TensorProto::UINT8, {xz});
  conv.init_raw<int8_t>("w", {m, cg, kh, kw}, ::onnx::TensorProto::INT8, wv);
  conv.init_raw<float>("ws", {m}, ::onnx::TensorProto::FLOAT, ws);
  conv.init_raw<int8_t>("wz", {m}, ::onnx::TensorProto::INT8, wz);
  conv.init_raw<float>("ys", {}, ::onnx::TensorProto::FLOAT, {ys});
  conv.init_raw<uint8_t>("yz", {}, ::onnx::TensorProto::UINT8, {yz});
  conv.init_raw<int32_t>("B", {m}, ::onnx::TensorProto::INT32, bias);
  conv.int_attr("group", group);
  conv.ints("strides", {stride[0], stride[1]});
  conv.ints("pads", {pb[0], pb[1], pe[0], pe[1]});
  std::vector<uint8_t> xv;
  for (int64_t i = 0; i < n * c * h * wd; ++i) xv.push_back(code_u8(i));
  const Tensor x = tensor(std::vector<int32_t>(xv.begin(), xv.end()), {n, c, h, wd}).to(kUInt8);
  const int64_t oh = (h + pb[0] + pe[0] - kh) / stride[0] + 1, ow = (wd + pb[1] + pe[1] - kw) / stride[1] + 1;
  std::vector<int64_t> want;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t acc = bias[size_t(o)];
          const int64_t g = o / (m / group);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t r = i * stride[0] + a - pb[0], q = j * stride[1] + e - pb[1];
                if (r < 0 || r >= h || q < 0 || q >= wd) continue;  // padding: x - x_zero is 0 there
                const int64_t xc = xv[size_t(((b * c + g * cg + ci) * h + r) * wd + q)];
                const int64_t wc = wv[size_t(((o * cg + ci) * kh + a) * kw + e)];
                acc += (xc - xz) * (wc - wz[size_t(o)]);
              }
          const float mult = xs * ws[size_t(o)] / ys;
          want.push_back(saturated(std::nearbyint(float(acc) * mult) + yz, 0, 255));
        }
  const Tensor y = conv.load().run({x})[0];
  CHECK(y.dtype() == kUInt8);
  CHECK(y.shape() == Shape{n, m, oh, ow});
  CHECK(y.to(kInt64).to_vector<int64_t>() == want);
}

TEST_CASE("onnx: ConvInteger over 1-D windows with SAME_LOWER padding and dilation, by its definition",
          "[onnx][quant]") {
  // int8 x and uint8 w with a zero point per output channel; the plan packs the
  // constant w at load and runs the window as a 2-D one of height 1.
  const int64_t n = 2, c = 6, len = 11, m = 8, k = 3, dil = 2, stride = 2;
  OneNode conv("ConvInteger", 10);
  conv.output_type(::onnx::TensorProto::INT32);
  conv.input("x", {n, c, len}, ::onnx::TensorProto::INT8);
  std::vector<uint8_t> wv, wz;
  for (int64_t i = 0; i < m * c * k; ++i) wv.push_back(code_u8(i));
  for (int64_t o = 0; o < m; ++o) wz.push_back(uint8_t(100 + 19 * o));
  const int8_t xz = -9;
  conv.init_raw<uint8_t>("w", {m, c, k}, ::onnx::TensorProto::UINT8, wv);
  conv.init_raw<int8_t>("xz", {}, ::onnx::TensorProto::INT8, {xz});
  conv.init_raw<uint8_t>("wz", {m}, ::onnx::TensorProto::UINT8, wz);
  conv.ints("strides", {stride});
  conv.ints("dilations", {dil});
  auto* pad = conv.node->add_attribute();
  pad->set_name("auto_pad");
  pad->set_type(::onnx::AttributeProto::STRING);
  pad->set_s("SAME_LOWER");
  std::vector<int8_t> xv;
  for (int64_t i = 0; i < n * c * len; ++i) xv.push_back(code_s8(i));
  const Tensor x = tensor(std::vector<int32_t>(xv.begin(), xv.end()), {n, c, len}).to(kInt8);
  // SAME_LOWER: out = ceil(len / stride), the extra padding before.
  const int64_t out = (len + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + (k - 1) * dil + 1 - len, 0);
  const int64_t before = total - total / 2;
  std::vector<int64_t> want;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t j = 0; j < out; ++j) {
        int64_t acc = 0;
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t e = 0; e < k; ++e) {
            const int64_t q = j * stride - before + e * dil;
            if (q < 0 || q >= len) continue;
            acc += (xv[size_t((b * c + ci) * len + q)] - xz) * (wv[size_t((o * c + ci) * k + e)] - wz[size_t(o)]);
          }
        want.push_back(acc);
      }
  const Tensor y = conv.load().run({x})[0];
  CHECK(y.dtype() == kInt32);
  CHECK(y.shape() == Shape{n, m, out});
  CHECK(y.to(kInt64).to_vector<int64_t>() == want);
}

TEST_CASE("onnx: QLinearMatMul with a scale per row and per column, MatMulInteger with a packed b", "[onnx][quant]") {
  const int64_t m = 5, k = 13, n = 7;
  std::vector<uint8_t> av, bv;
  for (int64_t i = 0; i < m * k; ++i) av.push_back(code_u8(i));
  for (int64_t i = 0; i < k * n; ++i) bv.push_back(code_u8(i * 3 + 1));
  std::vector<float> as, bs;
  for (int64_t i = 0; i < m; ++i) as.push_back(0.05f + 0.01f * float(i));
  for (int64_t j = 0; j < n; ++j) bs.push_back(0.02f + 0.003f * float(j));
  const uint8_t az = 100, bz = 131;
  const int8_t yz = -5;
  const float ys = 0.7f;
  const Tensor a = tensor(std::vector<int32_t>(av.begin(), av.end()), {m, k}).to(kUInt8);
  auto sums = [&](int64_t i, int64_t j) {
    int64_t s = 0;
    for (int64_t p = 0; p < k; ++p) s += (int64_t(av[size_t(i * k + p)]) - az) * (int64_t(bv[size_t(p * n + j)]) - bz);
    return s;
  };

  OneNode q("QLinearMatMul", 10);
  q.output_type(::onnx::TensorProto::INT8);
  q.input("x", {m, k}, ::onnx::TensorProto::UINT8);
  q.init_raw<float>("as", {m}, ::onnx::TensorProto::FLOAT, as);
  q.init_raw<uint8_t>("az", {}, ::onnx::TensorProto::UINT8, {az});
  q.init_raw<uint8_t>("b", {k, n}, ::onnx::TensorProto::UINT8, bv);
  q.init_raw<float>("bs", {n}, ::onnx::TensorProto::FLOAT, bs);
  q.init_raw<uint8_t>("bz", {}, ::onnx::TensorProto::UINT8, {bz});
  q.init_raw<float>("ys", {}, ::onnx::TensorProto::FLOAT, {ys});
  q.init_raw<int8_t>("yz", {}, ::onnx::TensorProto::INT8, {yz});
  std::vector<int64_t> want;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float mult = as[size_t(i)] * bs[size_t(j)] / ys;
      want.push_back(saturated(std::nearbyint(float(sums(i, j)) * mult) + yz, -128, 127));
    }
  const Tensor y = q.load().run({a})[0];
  CHECK(y.dtype() == kInt8);
  CHECK(y.to(kInt64).to_vector<int64_t>() == want);

  // A 1-D b: the sums are [batch, M], and a's per-row scale runs along their last dim.
  OneNode qv("QLinearMatMul", 10);
  qv.output_type(::onnx::TensorProto::UINT8);
  qv.input("x", {3, 3, 4}, ::onnx::TensorProto::UINT8);
  qv.init_raw<float>("as", {3}, ::onnx::TensorProto::FLOAT, {1, 2, 4});
  qv.init_raw<uint8_t>("az", {}, ::onnx::TensorProto::UINT8, {0});
  qv.init_raw<uint8_t>("b", {4}, ::onnx::TensorProto::UINT8, {1, 1, 1, 1});
  qv.init_raw<float>("bs", {}, ::onnx::TensorProto::FLOAT, {1});
  qv.init_raw<uint8_t>("bz", {}, ::onnx::TensorProto::UINT8, {0});
  qv.init_raw<float>("ys", {}, ::onnx::TensorProto::FLOAT, {1});
  qv.init_raw<uint8_t>("yz", {}, ::onnx::TensorProto::UINT8, {0});
  CHECK(qv.load().run({ones({3, 3, 4}, kUInt8)})[0].to(kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{4, 8, 16, 4, 8, 16, 4, 8, 16});

  OneNode mi("MatMulInteger", 10);
  mi.output_type(::onnx::TensorProto::INT32);
  mi.input("x", {m, k}, ::onnx::TensorProto::UINT8);
  mi.init_raw<uint8_t>("b", {k, n}, ::onnx::TensorProto::UINT8, bv);
  mi.init_raw<uint8_t>("az", {}, ::onnx::TensorProto::UINT8, {az});
  mi.init_raw<uint8_t>("bz", {}, ::onnx::TensorProto::UINT8, {bz});
  std::vector<int64_t> sums_want;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) sums_want.push_back(sums(i, j));
  for (const char* device : {"cpu", "emu:0"}) {
    INFO(device);
    const Tensor s = ember::onnx::load_from_string(bytes_of(mi.m), Device(device)).run({a.to(Device(device))})[0];
    CHECK(s.device() == Device(device));
    CHECK(s.to(kCPU, kInt64).to_vector<int64_t>() == sums_want);
  }
}

TEST_CASE("onnx: the quantized ops' refusals, exactly as documented", "[onnx][quant][errors]") {
  OneNode q("QuantizeLinear", 13);
  q.output_type(::onnx::TensorProto::UINT8);
  q.input("x", {2, 4});
  q.init("s", {3}, {0.5f, 1, 2});
  CHECK(message_of<ShapeError>([&] { q.load().run({zeros({2, 4})}); }) ==
        "ONNX op 'QuantizeLinear' (node 'n', opset 13): the scale must hold one value or one per index of axis 1 "
        "of [2, 4], got shape [3]");
  OneNode conv("ConvInteger", 10);
  conv.output_type(::onnx::TensorProto::INT32);
  conv.input("x", {1, 2, 3, 3}, ::onnx::TensorProto::UINT8);
  conv.init_raw<uint8_t>("w", {1, 2, 1, 1}, ::onnx::TensorProto::UINT8, {1, 2});
  conv.init_raw<uint8_t>("xz", {2}, ::onnx::TensorProto::UINT8, {1, 2});
  CHECK(message_of<ShapeError>([&] { conv.load().run({zeros({1, 2, 3, 3}, kUInt8)}); }) ==
        "ONNX op 'ConvInteger' (node 'n', opset 10): x's zero point must hold one value, got shape [2]");
  OneNode wz("ConvInteger", 10);
  wz.output_type(::onnx::TensorProto::INT32);
  wz.input("x", {1, 2, 3, 3}, ::onnx::TensorProto::UINT8);
  wz.init_raw<uint8_t>("w", {1, 2, 1, 1}, ::onnx::TensorProto::UINT8, {1, 2});
  wz.init_raw<uint8_t>("xz", {}, ::onnx::TensorProto::UINT8, {1});
  wz.init_raw<uint8_t>("wz", {2}, ::onnx::TensorProto::UINT8, {1, 2});
  CHECK(message_of<ShapeError>([&] { wz.load().run({zeros({1, 2, 3, 3}, kUInt8)}); }) ==
        "ONNX op 'ConvInteger' (node 'n', opset 10): w's zero point must hold one value or one per output channel, "
        "got shape [2]");
  // A weight of rank 2 (a 0-D window): neither the int8 GEMM nor Conv's builder takes it.
  OneNode rank2("ConvInteger", 10);
  rank2.output_type(::onnx::TensorProto::INT32);
  rank2.input("x", {1, 2}, ::onnx::TensorProto::UINT8);
  rank2.init_raw<uint8_t>("w", {1, 2}, ::onnx::TensorProto::UINT8, {1, 2});
  CHECK(message_of<NotImplementedError>([&] { rank2.load().run({zeros({1, 2}, kUInt8)}); }) ==
        "ONNX op 'ConvInteger' (node 'n', opset 10): a 0-D convolution is not supported");
  // QLinearMatMul's scales: a's per row, b's per column, y's one value.
  for (int bad = 0; bad < 3; ++bad) {
    OneNode q("QLinearMatMul", 10);
    q.output_type(::onnx::TensorProto::UINT8);
    q.input("x", {2, 3}, ::onnx::TensorProto::UINT8);
    q.init("as", {bad == 0 ? 3 : 2}, std::vector<float>(size_t(bad == 0 ? 3 : 2), 0.5f));
    q.init_raw<uint8_t>("az", {}, ::onnx::TensorProto::UINT8, {0});
    q.init_raw<uint8_t>("b", {3, 4}, ::onnx::TensorProto::UINT8, std::vector<uint8_t>(12, 1));
    q.init("bs", {bad == 1 ? 3 : 4}, std::vector<float>(size_t(bad == 1 ? 3 : 4), 0.5f));
    q.init_raw<uint8_t>("bz", {}, ::onnx::TensorProto::UINT8, {0});
    q.init("ys", {bad == 2 ? 2 : 1}, std::vector<float>(size_t(bad == 2 ? 2 : 1), 0.5f));
    q.init_raw<uint8_t>("yz", {}, ::onnx::TensorProto::UINT8, {0});
    const std::string want = bad == 0   ? "a_scale must hold one value or one per row of a, got shape [3]"
                             : bad == 1 ? "b_scale must hold one value or one per column of b, got shape [3]"
                                        : "y_scale must hold one value, got shape [2]";
    CHECK(message_of<ShapeError>([&] { q.load().run({zeros({2, 3}, kUInt8)}); }) ==
          "ONNX op 'QLinearMatMul' (node 'n', opset 10): " + want);
  }
}

// Slice with negative steps, by ONNX's clamping rules (start in [0, dim - 1], end in
// [-1, dim - 1]) worked out by hand.
TEST_CASE("onnx: Slice walks backwards with negative steps", "[onnx]") {
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  struct Case {
    int64_t start, end, step;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {
      {-1, -big, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {8, 1, -3, {8, 5, 2}},
      {20, -20, -2, {9, 7, 5, 3, 1}},
      {5, 0, small, {5}},
      {2, 5, -1, {}},
      {big, small, -4, {9, 5, 1}},
  };
  std::vector<float> xv;
  for (int i = 0; i < 10; ++i) xv.push_back(float(i));
  for (const Case& c : cases) {
    INFO("start " << c.start << " end " << c.end << " step " << c.step);
    OneNode s("Slice");
    s.input("x", {10});
    s.init_raw<int64_t>("starts", {1}, ::onnx::TensorProto::INT64, {c.start});
    s.init_raw<int64_t>("ends", {1}, ::onnx::TensorProto::INT64, {c.end});
    s.init_raw<int64_t>("axes", {1}, ::onnx::TensorProto::INT64, {0});
    s.init_raw<int64_t>("steps", {1}, ::onnx::TensorProto::INT64, {c.step});
    const Tensor y = s.load().run({tensor(xv, {10})})[0];
    CHECK(y.shape() == Shape{int64_t(c.want.size())});
    CHECK(y.contiguous().to_vector<float>() == c.want);
  }
  // Two axes, one backwards; and an empty axis.
  OneNode two("Slice");
  two.open_input("x", 2);
  two.init_raw<int64_t>("starts", {2}, ::onnx::TensorProto::INT64, {0, -1});
  two.init_raw<int64_t>("ends", {2}, ::onnx::TensorProto::INT64, {2, -big});
  two.init_raw<int64_t>("axes", {2}, ::onnx::TensorProto::INT64, {0, 1});
  two.init_raw<int64_t>("steps", {2}, ::onnx::TensorProto::INT64, {1, -2});
  const ember::onnx::Model m = two.load();
  CHECK(m.run({tensor(xv, {2, 5})})[0].contiguous().to_vector<float>() == std::vector<float>{4, 2, 0, 9, 7, 5});
  CHECK(m.run({zeros({2, 0})})[0].shape() == Shape{2, 0});
}

// The small ops computed on the host or composed (LRN, MeanVarianceNormalization,
// NonZero, Compress, ReverseSequence, MaxUnpool, Det, the windows, BitShift, the
// trig functions): cases the conformance data does not reach, against loops over
// the definitions and hand-worked values, and their refusals.
TEST_CASE("onnx: LRN and MeanVarianceNormalization against loops over their definitions", "[onnx]") {
  const int64_t n = 2, c = 5, h = 3;
  std::vector<float> xv;
  for (int64_t i = 0; i < n * c * h; ++i) xv.push_back(float(std::sin(0.7 * double(i)) * 2));
  const Tensor x = tensor(xv, {n, c, h});
  for (int64_t size : {1, 2, 4, 11}) {  // even sizes reach one channel further up; 11 is wider than C
    INFO("size " << size);
    OneNode lrn("LRN");
    lrn.input("x", {n, c, h});
    lrn.int_attr("size", size);
    auto* a = lrn.node->add_attribute();
    a->set_name("alpha");
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(0.3f);
    const std::vector<float> got = lrn.load().run({x})[0].to_vector<float>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < h; ++p) {
          double sq = 0;
          for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; ++k)
            if (k >= 0 && k < c) sq += double(xv[size_t((b * c + k) * h + p)]) * xv[size_t((b * c + k) * h + p)];
          const double want = xv[size_t((b * c + ch) * h + p)] / std::pow(1.0 + double(0.3f) / double(size) * sq, 0.75);
          CHECK(got[size_t((b * c + ch) * h + p)] == Approx(want).epsilon(1e-5));
        }
  }
  OneNode mvn("MeanVarianceNormalization", 13);
  mvn.input("x", {n, c, h});
  mvn.ints("axes", {1});
  const std::vector<float> got = mvn.load().run({x})[0].to_vector<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < h; ++p) {
      double mean = 0, var = 0;
      for (int64_t ch = 0; ch < c; ++ch) mean += xv[size_t((b * c + ch) * h + p)] / double(c);
      for (int64_t ch = 0; ch < c; ++ch) var += std::pow(xv[size_t((b * c + ch) * h + p)] - mean, 2) / double(c);
      for (int64_t ch = 0; ch < c; ++ch)
        CHECK(got[size_t((b * c + ch) * h + p)] ==
              Approx((xv[size_t((b * c + ch) * h + p)] - mean) / (std::sqrt(var) + 1e-9)).epsilon(1e-5));
    }
}

TEST_CASE("onnx: NonZero, Compress, ReverseSequence and MaxUnpool place elements as the spec says", "[onnx]") {
  OneNode nz("NonZero");
  nz.open_input("x", 2);
  nz.output_type(::onnx::TensorProto::INT64);
  const ember::onnx::Model nzm = nz.load();
  const Tensor coords = nzm.run({tensor(std::vector<float>{0, 3, 0, -1, 0, 2}, {2, 3})})[0];
  CHECK(coords.shape() == Shape{2, 3});
  CHECK(coords.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 1, 0, 2});
  CHECK(nzm.run({zeros({0, 4})})[0].shape() == Shape{2, 0});

  OneNode cp("Compress", 11);
  cp.open_input("x", 2);
  cp.open_input("c", 1, ::onnx::TensorProto::BOOL);
  cp.node->add_input("c");
  const ember::onnx::Model cpm = cp.load();  // no axis: the flattened input
  const Tensor x6 = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(cpm.run({x6, tensor(std::vector<bool>{false, true, true}, {3})})[0].to_vector<float>() ==
        std::vector<float>{2, 3});
  CHECK(message_of<ShapeError>([&] { cpm.run({x6, tensor(std::vector<bool>(7, true), {7})}); }) ==
        "ONNX op 'Compress' (node 'n', opset 11): the condition has 7 values for an axis of 6");

  OneNode rs("ReverseSequence", 10);
  rs.open_input("x", 2);
  rs.open_input("lens", 1, ::onnx::TensorProto::INT64);
  rs.node->add_input("lens");
  rs.int_attr("batch_axis", 0);
  rs.int_attr("time_axis", 1);
  const ember::onnx::Model rsm = rs.load();
  // Batch rows of 3 steps, reversed over their first 0, 3 and 2 steps.
  const Tensor seq = tensor(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  CHECK(rsm.run({seq, tensor(std::vector<int64_t>{0, 3, 2}, {3})})[0].to_vector<float>() ==
        std::vector<float>{1, 2, 3, 6, 5, 4, 8, 7, 9});
  CHECK(message_of<ValueError>([&] { rsm.run({seq, tensor(std::vector<int64_t>{0, 4, 2}, {3})}); }) ==
        "ONNX op 'ReverseSequence' (node 'n', opset 10): sequence length 4 is outside [0, 3]");

  OneNode up("MaxUnpool", 11);
  up.input("x", {1, 1, 1, 2});
  up.input("i", {1, 1, 1, 2}, ::onnx::TensorProto::INT64);
  up.node->add_input("i");
  up.ints("kernel_shape", {2, 2});
  up.ints("strides", {2, 2});
  const ember::onnx::Model upm = up.load();  // unpooled [1, 1, 2, 4]
  CHECK(upm.run({tensor(std::vector<float>{7, 9}, {1, 1, 1, 2}), tensor(std::vector<int64_t>{4, 3}, {1, 1, 1, 2})})[0]
            .to_vector<float>() == std::vector<float>{0, 0, 0, 9, 7, 0, 0, 0});
  CHECK(message_of<IndexError>([&] {
          upm.run({tensor(std::vector<float>{7, 9}, {1, 1, 1, 2}), tensor(std::vector<int64_t>{8, 3}, {1, 1, 1, 2})});
        }) == "ONNX op 'MaxUnpool' (node 'n', opset 11): index 8 is outside an unpooled tensor of 8 elements");
  OneNode huge("MaxUnpool", 11);  // a kernel of 2^32 x 2^32: the unpooled size overflows int64
  huge.input("x", {1, 1, 1, 1});
  huge.input("i", {1, 1, 1, 1}, ::onnx::TensorProto::INT64);
  huge.node->add_input("i");
  huge.ints("kernel_shape", {int64_t(1) << 32, int64_t(1) << 32});
  CHECK(message_of<ShapeError>([&] { huge.load().run({zeros({1, 1, 1, 1}), zeros({1, 1, 1, 1}, kInt64)}); })
            .find("ONNX op 'MaxUnpool' (node 'n', opset 11)") == 0);
}

TEST_CASE("onnx: Det, the window functions, BitShift and the trig functions", "[onnx]") {
  OneNode det("Det");
  det.open_input("x", 3);
  const ember::onnx::Model dm = det.load();
  // [[2, 1], [4, 3]] -> 2; a singular matrix -> 0; rows swapped by the pivot -> sign kept.
  const Tensor mats = tensor(std::vector<float>{2, 1, 4, 3, 1, 2, 2, 4, 0, 1, 1, 0}, {3, 2, 2});
  CHECK(dm.run({mats})[0].to_vector<float>() == std::vector<float>{2, 0, -1});
  CHECK(message_of<ShapeError>([&] { dm.run({zeros({1, 2, 3})}); }) ==
        "ONNX op 'Det' (node 'n', opset 13): the input must be square matrices [..., M, M], got [1, 2, 3]");

  for (int periodic : {0, 1}) {
    OneNode hann("HannWindow", 17);
    hann.input("x", {}, ::onnx::TensorProto::INT64);
    hann.int_attr("periodic", periodic);
    const ember::onnx::Model hm = hann.load();
    const std::vector<float> w = hm.run({full({}, 4, kInt64)})[0].to_vector<float>();
    // sin^2(pi k / N'), N' = 4 (periodic) or 3.
    for (int k = 0; k < 4; ++k)
      CHECK(w[size_t(k)] == Approx(std::pow(std::sin(M_PI * k / (periodic ? 4.0 : 3.0)), 2)).margin(1e-7));
    // One point: periodic follows the formula (N' = 1: 0.5 - 0.5 cos 0 = 0); symmetric is [1], as numpy's.
    CHECK(hm.run({full({}, 1, kInt64)})[0].to_vector<float>() == std::vector<float>{periodic ? 0.0f : 1.0f});
    CHECK(hm.run({full({}, 0, kInt64)})[0].numel() == 0);
  }

  OneNode shift("BitShift", 11);
  shift.output_type(::onnx::TensorProto::UINT8);
  shift.open_input("x", 1, ::onnx::TensorProto::UINT8);
  shift.open_input("s", 1, ::onnx::TensorProto::UINT8);
  shift.node->add_input("s");
  auto* dir = shift.node->add_attribute();
  dir->set_name("direction");
  dir->set_type(::onnx::AttributeProto::STRING);
  dir->set_s("LEFT");
  const Tensor bits = shift.load()
                          .run({tensor(std::vector<int32_t>{1, 3, 255, 200}, {4}).to(kUInt8),
                                tensor(std::vector<int32_t>{7, 1, 8, 200}, {4}).to(kUInt8)})[0];
  CHECK(bits.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{128, 6, 0, 0});
  dir->set_s("UP");
  CHECK(message_of<FormatError>([&] { shift.load(); }) ==
        "ONNX op 'BitShift' (node 'n', opset 11): direction must be LEFT or RIGHT, got 'UP'");

  // The trig functions in float64, rounded once: asin(0.5) = pi / 6, atanh(0.5) = ln(3) / 2.
  for (auto [op, arg, want] : std::vector<std::tuple<const char*, float, double>>{
           {"Asin", 0.5f, M_PI / 6}, {"Acos", 0.5f, M_PI / 3}, {"Atan", 1.0f, M_PI / 4}, {"Tan", 0.25f, std::tan(0.25)},
           {"Sinh", 1.0f, (M_E - 1 / M_E) / 2}, {"Cosh", 1.0f, (M_E + 1 / M_E) / 2},
           {"Asinh", 1.0f, std::log(1 + std::sqrt(2.0))}, {"Acosh", 2.0f, std::log(2 + std::sqrt(3.0))},
           {"Atanh", 0.5f, std::log(3.0) / 2}}) {
    INFO(op);
    OneNode t(op);
    t.input("x", {1});
    CHECK(t.load().run({tensor(std::vector<float>{arg}, {1})})[0].to_vector<float>() ==
          std::vector<float>{float(want)});
  }
}

// NonMaxSuppression: IoU exactly at the threshold keeps the box (only "above"
// suppresses), a box without area overlaps nothing, and the shape checks.
TEST_CASE("onnx: NonMaxSuppression keeps a box at exactly the IoU threshold", "[onnx]") {
  OneNode nms("NonMaxSuppression", 11);
  nms.output_type(::onnx::TensorProto::INT64);
  nms.open_input("x", 3);  // boxes
  nms.open_input("s", 3);  // scores
  nms.node->add_input("s");
  nms.init_raw<int64_t>("limit", {1}, ::onnx::TensorProto::INT64, {10});
  nms.init_raw<float>("iou", {1}, ::onnx::TensorProto::FLOAT, {0.5f});
  const ember::onnx::Model m = nms.load();
  // Box 1 covers half of box 0's union with it: IoU = 2 / (4 + 2 - 2) = 0.5, kept.
  // Box 2 has no area; box 3 overlaps box 0 with IoU 0.6 and is suppressed.
  const Tensor boxes = tensor(std::vector<float>{0, 0, 2, 2, 0, 0, 1, 2, 5, 5, 5, 9, 0, 0, 2, 1.2f}, {1, 4, 4});
  const Tensor scores = tensor(std::vector<float>{0.9f, 0.8f, 0.7f, 0.6f}, {1, 1, 4});
  CHECK(m.run({boxes, scores})[0].to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0, 0, 2});
  // With box 3 first, box 0 is the one suppressed (IoU 0.6), and box 1 (IoU 0.375 with box 3) stays.
  const Tensor first3 = tensor(std::vector<float>{0.9f, 0.8f, 0.7f, 0.95f}, {1, 1, 4});
  CHECK(m.run({boxes, first3})[0].to_vector<int64_t>() == std::vector<int64_t>{0, 0, 3, 0, 0, 1, 0, 0, 2});
  // A NaN score is never selected, and the others keep their order.
  const Tensor nan_scores = tensor(std::vector<float>{0.1f, std::numeric_limits<float>::quiet_NaN(), 0.7f, 0.9f}, {1, 1, 4});
  const Tensor apart = tensor(std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}, {1, 4, 4});
  CHECK(m.run({apart, nan_scores})[0].to_vector<int64_t>() == std::vector<int64_t>{0, 0, 3, 0, 0, 2, 0, 0, 0});
  CHECK(message_of<ShapeError>([&] { m.run({zeros({1, 4, 3}), scores}); }) ==
        "ONNX op 'NonMaxSuppression' (node 'n', opset 11): boxes must be [batches, boxes, 4], got [1, 4, 3]");
  nms.m.mutable_graph()->mutable_initializer(1)->set_raw_data(std::string("\0\0\0\xbf", 4));  // -0.5
  CHECK(message_of<ValueError>([&] { nms.load().run({boxes, scores}); }) ==
        "ONNX op 'NonMaxSuppression' (node 'n', opset 11): iou_threshold must be in [0, 1], got -0.500000");
  nms.int_attr("center_point_box", 2);
  CHECK(message_of<FormatError>([&] { nms.load(); }) ==
        "ONNX op 'NonMaxSuppression' (node 'n', opset 11): center_point_box must be 0 or 1, got 2");
  CHECK(message_of<ShapeError>([&] { m.run({boxes, zeros({1, 1, 5})}); }) ==
        "ONNX op 'NonMaxSuppression' (node 'n', opset 11): scores of shape [1, 1, 5] do not match boxes of shape "
        "[1, 4, 4]");
}

// GridSample on points far outside the image or not numbers: zeros (with zeros
// padding), the corner's value (border), and no undefined conversion to int64.
TEST_CASE("onnx: GridSample on hostile grid points, and its refusals", "[onnx]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor x = tensor(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor grid = tensor(std::vector<float>{nan, 0, 1e30f, 1e30f, -inf, 0, -1, -1}, {1, 1, 4, 2});
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"}) {
      INFO(mode << ", " << padding);
      OneNode g("GridSample", 16);
      g.input("x", {1, 1, 2, 2});
      g.open_input("g", 4);
      *g.node->add_input() = g.m.graph().input(1).name();
      for (auto [name, value] : {std::pair{"mode", mode}, std::pair{"padding_mode", padding}}) {
        auto* a = g.node->add_attribute();
        a->set_name(name);
        a->set_type(::onnx::AttributeProto::STRING);
        a->set_s(value);
      }
      g.int_attr("align_corners", 1);
      const std::vector<float> y = g.load().run({x, grid})[0].to_vector<float>();
      REQUIRE(y.size() == 4);
      CHECK(y[3] == Approx(1.0f));  // (-1, -1) with align_corners: the top-left pixel's centre
      if (std::string(padding) == "zeros" && std::string(mode) != "bicubic") {
        CHECK(y[1] == 0.0f);
        CHECK(y[2] == 0.0f);
      }
      if (std::string(padding) == "border") CHECK(y[1] == Approx(4.0f));  // every tap clipped to the corner
      CHECK(y[0] == 0.0f);  // NaN reads nothing, whatever the padding
    }
  OneNode bad("GridSample", 16);
  bad.input("x", {1, 1, 2, 2});
  bad.input("g", {1, 1, 4, 2});
  bad.node->add_input("g");
  auto* a = bad.node->add_attribute();
  a->set_name("mode");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s("area");
  CHECK(message_of<FormatError>([&] { bad.load(); }) ==
        "ONNX op 'GridSample' (node 'n', opset 16): mode must be bilinear, nearest or bicubic, got 'area'");
}

// Unique: NaNs count as one value and sort last; unsorted keeps first appearances.
TEST_CASE("onnx: Unique with NaN, sorted and in order of appearance", "[onnx]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int sorted : {0, 1}) {
    OneNode u("Unique", 11);
    u.open_input("x", 1);
    u.int_attr("sorted", sorted);
    u.add_output("i", ::onnx::TensorProto::INT64);
    u.add_output("inv", ::onnx::TensorProto::INT64);
    u.add_output("c", ::onnx::TensorProto::INT64);
    const auto out = u.load().run({tensor(std::vector<float>{3, nan, 1, 3, nan, -0.0f, 0.0f}, {7})});
    REQUIRE(out.size() == 4);
    const std::vector<float> y = out[0].to_vector<float>();
    REQUIRE(y.size() == 4);  // 3, NaN, 1, 0 (-0 and 0 are one value)
    if (sorted) {
      CHECK((y[0] == 0.0f && y[1] == 1.0f && y[2] == 3.0f && std::isnan(y[3])));
      CHECK(out[1].to_vector<int64_t>() == std::vector<int64_t>{5, 2, 0, 1});
      CHECK(out[2].to_vector<int64_t>() == std::vector<int64_t>{2, 3, 1, 2, 3, 0, 0});
      CHECK(out[3].to_vector<int64_t>() == std::vector<int64_t>{2, 1, 2, 2});
    } else {
      CHECK((y[0] == 3.0f && std::isnan(y[1]) && y[2] == 1.0f && y[3] == 0.0f));
      CHECK(out[1].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 5});
      CHECK(out[2].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 0, 1, 3, 3});
      CHECK(out[3].to_vector<int64_t>() == std::vector<int64_t>{2, 2, 1, 2});
    }
  }
}

// The rest of the new ops' documented refusals (docs/errors.md), by their exact text.
TEST_CASE("onnx: more of the new ops' refusals, exactly as documented", "[onnx][errors]") {
  const std::string at = " (node 'n', opset ";
  {
    OneNode det("Det");
    det.open_input("x", 2, ::onnx::TensorProto::INT64);
    det.output_type(::onnx::TensorProto::INT64);
    CHECK(message_of<DTypeError>([&] { det.load().run({zeros({2, 2}, kInt64)}); }) ==
          "ONNX op 'Det'" + at + "13): the input must be floating point, got int64");
  }
  {
    OneNode w("HammingWindow", 17);
    w.open_input("x", 1, ::onnx::TensorProto::INT64);
    const auto m = w.load();
    CHECK(message_of<ShapeError>([&] { m.run({zeros({2}, kInt64)}); }) ==
          "ONNX op 'HammingWindow'" + at + "17): size must be one integer, got shape [2]");
    CHECK(message_of<ValueError>([&] { m.run({full({1}, -3, kInt64)}); }) ==
          "ONNX op 'HammingWindow'" + at + "17): size must not be negative, got -3");
  }
  {
    OneNode lrn("LRN");
    lrn.input("x", {2, 3});
    // A missing size is the ONNX checker's refusal, before the op's builder sees the node.
    CHECK(message_of<FormatError>([&] { lrn.load(); }).find("<memory>: the ONNX checker rejects the model: Required "
                                                            "attribute 'size' is missing") == 0);
    lrn.int_attr("size", 0);
    CHECK(message_of<FormatError>([&] { lrn.load(); }) == "ONNX op 'LRN'" + at + "13): size must be positive, got 0");
  }
  {
    OneNode cp("Compress", 11);
    cp.open_input("x", 2);
    cp.open_input("c", 2, ::onnx::TensorProto::BOOL);
    cp.node->add_input("c");
    CHECK(message_of<ShapeError>([&] { cp.load().run({zeros({2, 2}), zeros({2, 1}, kBool)}); }) ==
          "ONNX op 'Compress'" + at + "11): the condition must be 1-D, got shape [2, 1]");
  }
  {
    OneNode rs("ReverseSequence", 10);
    rs.open_input("x", 2);
    rs.open_input("lens", 1, ::onnx::TensorProto::INT64);
    rs.node->add_input("lens");
    CHECK(message_of<ShapeError>([&] { rs.load().run({zeros({3, 2}), zeros({3}, kInt64)}); }) ==
          "ONNX op 'ReverseSequence'" + at + "10): sequence_lens has 3 values for a batch of 2");
    rs.int_attr("batch_axis", 0);
    CHECK(message_of<FormatError>([&] { rs.load(); }) ==
          "ONNX op 'ReverseSequence'" + at + "10): batch_axis and time_axis must be 0 and 1, one each");
  }
  {
    OneNode up("MaxUnpool", 11);
    up.input("x", {1, 1, 1, 2});
    up.input("i", {1, 1, 1, 2}, ::onnx::TensorProto::INT64);
    up.node->add_input("i");
    up.init_raw<int64_t>("shape", {4}, ::onnx::TensorProto::INT64, {1, 1, 1, 3});
    up.ints("kernel_shape", {2, 2});
    up.ints("strides", {2, 2});
    CHECK(message_of<ShapeError>([&] { up.load().run({zeros({1, 1, 1, 2}), zeros({1, 1, 1, 2}, kInt64)}); }) ==
          "ONNX op 'MaxUnpool'" + at + "11): output_shape [1, 1, 1, 3] is smaller than the unpooled shape [1, 1, 2, 4]");
  }
  {
    OneNode g("GridSample", 16);
    g.input("x", {1, 1, 2, 2});
    g.open_input("g", 4);
    *g.node->add_input() = g.m.graph().input(1).name();
    auto* a = g.node->add_attribute();
    a->set_name("padding_mode");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s("wrap");
    CHECK(message_of<FormatError>([&] { g.load(); }) ==
          "ONNX op 'GridSample'" + at + "16): padding_mode must be zeros, border or reflection, got 'wrap'");
    a->set_s("zeros");
    CHECK(message_of<ShapeError>([&] { g.load().run({zeros({1, 1, 2, 2}), zeros({2, 1, 1, 2})}); }) ==
          "ONNX op 'GridSample'" + at + "16): the grid must be [N, H_out, W_out, 2] with the input's N, got "
          "[2, 1, 1, 2] for an input of [1, 1, 2, 2]");
  }
  {
    OneNode q("QLinearConv", 10);
    q.output_type(::onnx::TensorProto::UINT8);
    q.input("x", {1, 1, 2, 2}, ::onnx::TensorProto::UINT8);
    q.init_raw<float>("xs", {}, ::onnx::TensorProto::FLOAT, {1});
    q.init_raw<uint8_t>("xz", {}, ::onnx::TensorProto::UINT8, {0});
    q.init_raw<uint8_t>("w", {2, 1, 1, 1}, ::onnx::TensorProto::UINT8, {1, 1});
    q.init_raw<float>("ws", {3}, ::onnx::TensorProto::FLOAT, {1, 1, 1});
    q.init_raw<uint8_t>("wz", {}, ::onnx::TensorProto::UINT8, {0});
    q.init_raw<float>("ys", {}, ::onnx::TensorProto::FLOAT, {1});
    q.init_raw<uint8_t>("yz", {}, ::onnx::TensorProto::UINT8, {0});
    CHECK(message_of<ShapeError>([&] { q.load().run({zeros({1, 1, 2, 2}, kUInt8)}); }) ==
          "ONNX op 'QLinearConv'" + at + "10): w_scale must hold one value or one per output channel, got shape [3]");
  }
}
