// What an op's builder sees of one ONNX node, in Ember's own types: its
// attributes (parsed once at load), which inputs are present, which of them are
// constants known at load, and the opset. A builder checks everything it can at
// load and returns the function the plan calls on every run, so attribute
// parsing and most errors happen once. Nothing here includes protobuf: the op
// files compile without the ONNX library's headers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ember::onnx {

// One attribute's value; `kind` says which member holds it.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  Kind kind = Kind::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  ember::Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

// The function a plan step runs: inputs in node order (an absent optional input
// is an undefined Tensor), outputs in node order.
using OpFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

class NodeContext {
 public:
  std::string op_type;
  std::string name;       // the node's name, or "#<index>" when the model gives none
  int64_t opset = 0;      // of the default domain
  std::map<std::string, Attribute> attrs;
  std::vector<bool> present;                 // per input: false for an absent optional input
  std::vector<std::optional<Tensor>> constants;  // per input: its value when known at load
  size_t num_outputs = 0;
  Device device = kCPU;   // the model's: where steps that make data from nothing put it

  bool has(const std::string& attr) const { return attrs.count(attr) != 0; }
  int64_t get_int(const std::string& attr, int64_t fallback) const;
  double get_float(const std::string& attr, double fallback) const;
  std::string get_string(const std::string& attr, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& attr, const std::vector<int64_t>& fallback = {}) const;
  std::vector<double> get_floats(const std::string& attr) const;
  Tensor get_tensor(const std::string& attr) const;

  bool has_input(size_t i) const { return i < present.size() && present[i]; }
  const Tensor* constant(size_t i) const {
    return i < constants.size() && constants[i] ? &*constants[i] : nullptr;
  }

  // "op 'Conv' (node 'conv1', opset 13)": how every message names the node.
  std::string where() const;
  // NotImplementedError "ONNX op 'X' (node 'n', opset k): <what> is not supported".
  [[noreturn]] void unsupported(const std::string& what) const;
  // FormatError "ONNX op 'X' (node 'n', opset k): <what>" for a node that breaks
  // the ONNX specification in a way the checker does not see.
  [[noreturn]] void invalid(const std::string& what) const;
  // An attribute that must hold its default value, or the node is unsupported.
  void require_default(const std::string& attr, int64_t default_value) const;
  void require_absent(const std::string& attr) const;
};

using OpBuilder = OpFn (*)(const NodeContext&);

// The op table: op type -> builder, with the opsets each builder implements.
struct OpRow {
  const char* op_type;
  OpBuilder build;
  int64_t since = 1;   // oldest opset the builder implements
};
const OpRow* find_op(const std::string& op_type);
std::vector<std::string> supported_ops();

// ---- helpers shared by the op files ----
// The values of a 1-D (or 0-D) integer tensor, read to the host.
std::vector<int64_t> int_values(const Tensor& t);
// `inputs` with every defined one on the device of the first that is not on the
// host. A plan keeps its integer and bool constants (shapes, axes, indices) on the
// host, where most readers want them as numbers; an op that computes with such a
// constant and a value on the model's device (Add of an int64 input and an int64
// initializer, Where with an integer branch) brings the constant over here.
// Returns `inputs` itself when nothing moves (no copy, no allocation on the CPU's
// path), else `moved`, filled.
const std::vector<Tensor>& on_one_device(const std::vector<Tensor>& inputs, std::vector<Tensor>& moved);
// x seen as 2-D, [dims before axis, dims from axis on], as Softmax and Hardmax
// before opset 13 see their input (a view when x is contiguous).
Tensor flatten_at(const Tensor& x, int64_t axis);
// Axis `axis` of a rank-`rank` tensor, negative counted from the end; ShapeError
// "<where>: axis 5 is out of range for a rank-4 input" otherwise.
int64_t normalize_axis(const std::string& where, int64_t axis, int64_t rank);

}  // namespace ember::onnx
