// The execution plan a model is loaded into: constants (initializers and
// everything folded from them at load), and a list of steps in dependency
// order, each an op's function with where its inputs come from and which value
// slots it fills. Slots whose last reader has run are released right away, so a
// run holds only the live intermediates. The plan is immutable once built;
// run() keeps its slots on its own stack, so threads may share one plan.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "onnx/node_context.h"
#include "onnx/onnx.h"

namespace ember::onnx {

struct ValueRef {
  enum class Kind : unsigned char { Slot, Constant, Absent };
  Kind kind = Kind::Absent;
  uint32_t index = 0;
};

struct Step {
  OpFn fn;
  std::vector<ValueRef> inputs;
  std::vector<int64_t> outputs;     // slot per node output; -1 when nothing reads it
  std::vector<uint32_t> release;    // slots whose last reader is this step
  std::string where;                // "ONNX op 'Conv' (node 'conv1', opset 13)", for errors
  std::string op_type;              // what rewrites of the plan (onnx/quantize.cpp) look at
  std::map<std::string, Attribute> attrs;
  // The later nodes fused into this step (onnx/fuse.cpp), in order: Relu and
  // MaxPool for a convolution block. op_type, where and attrs are the first node's;
  // an error a fused node raises already names that node.
  struct FusedNode {
    std::string op_type, where;
  };
  std::vector<FusedNode> fused;
  // Reads only constants and values computed from the inputs' shapes (Shape and
  // what follows from it): its outputs depend on the input shapes alone, so
  // run() computes them once per set of input shapes (ShapeMemo).
  bool shape_only = false;

  // An INT or FLOAT attribute of the (first) node, or `fallback` when it has none
  // of that kind: what the plan's rewrites (quantize.cpp, fuse.cpp) read.
  int64_t int_attr(const char* name, int64_t fallback) const;
  double float_attr(const char* name, double fallback) const;
};

// The outputs of a plan's shape-only steps for each set of input shapes seen:
// exporters write a model's reshapes as Shape -> Gather -> Unsqueeze -> Concat
// chains that would otherwise run, tiny op by tiny op, on every call. Entries
// are immutable once in; a mutex guards the map, so threads share it.
class ShapeMemo {
 public:
  using Key = std::vector<int64_t>;                        // rank, then dims, per input
  using Values = std::vector<std::pair<uint32_t, Tensor>>;  // slot -> value
  static constexpr size_t kMaxEntries = 64;
  static constexpr int64_t kMaxElements = 1 << 16;        // per entry; larger ones are not kept
  std::shared_ptr<const Values> find(const Key& key) const;
  void insert(const Key& key, std::shared_ptr<const Values> values);

 private:
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<const Values>> entries_;
};

class Plan {
 public:
  Device device = kCPU;
  int64_t opset = 0;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<uint32_t> input_slots;
  std::vector<ValueRef> output_refs;
  std::vector<Tensor> constants;
  std::vector<Step> steps;
  size_t num_slots = 0;
  bool has_shape_only = false;
  std::unordered_set<const void*> constant_storage;  // outputs never alias these (set by finish())
  std::shared_ptr<ShapeMemo> memo = std::make_shared<ShapeMemo>();

  // Derived data the builders compute once the constants are final.
  void finish();

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
};

// Re-raises the ember::Error being handled with `where` ("ONNX op 'X' (node
// 'n', opset k)") in front, keeping its class, unless it already starts so.
[[noreturn]] void rethrow_at(const std::string& where);

// Builds the plan of a model's bytes (plan_builder.cpp). `where` names the model
// in errors: its path when from_file (the checker then reads the file itself, to
// find external data next to it), "<memory>" otherwise.
std::shared_ptr<const Plan> build_plan(const std::string& bytes, Device device, const std::string& folder,
                                       const std::string& where, bool from_file);

}  // namespace ember::onnx
