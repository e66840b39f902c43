// What onnx::save learns from running a forward pass: every op the autograd
// recording saw (the node with its attributes, and the actual input and output
// tensors), and the table that names each tensor in the ONNX graph. A tensor is
// a graph input, the output of a traced op, or else a constant whose values go
// into the file (a parameter or buffer under its dotted name, anything else as
// "const"). Tensors are matched first by identity, then by the memory they view
// (storage, offset, shape, strides, dtype): the tensors an op saves for backward
// (Where's condition, Take's indices) are detached aliases of the ones it was given.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "onnx/export_graph.h"
#include "tensor/graph.h"

namespace ember::onnx {

struct TracedOp {
  std::shared_ptr<Node> node;
  std::vector<Tensor> inputs;   // as the op front-end passed them (undefined for an absent optional input)
  std::vector<Tensor> outputs;
};

// Collects the ops recorded on this thread while it is installed (RecordObserverGuard).
class Tracer : public RecordObserver {
 public:
  void on_record(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                 const std::vector<Tensor*>& outputs) override;
  std::vector<TracedOp> ops;
};

class ValueTable {
 public:
  ValueTable(GraphWriter& writer, const std::vector<std::pair<std::string, Tensor>>& named);
  // Names `t` as the graph value `name` (graph inputs, op outputs); a later
  // binding of the same tensor (an in-place op) replaces the earlier one.
  void bind(const Tensor& t, const std::string& name);
  // The graph value holding `t` converted to `dtype`: a bound value (through a
  // Cast node when its dtype differs) or an initializer written on first use.
  std::string value(const Tensor& t, DType dtype);
  std::string value(const Tensor& t) { return value(t, t.dtype()); }
  // Whether `t` is bound (computed by the graph) rather than a constant.
  bool is_bound(const Tensor& t) const;

 private:
  using Key = std::tuple<const void*, int64_t, Shape, Shape, DType>;
  static Key key_of(const Tensor& t);
  std::string constant(const Tensor& t);

  GraphWriter& g_;
  std::unordered_map<const void*, std::string> by_impl_;  // TensorImpl* -> bound name
  std::map<Key, std::string> by_key_;
  std::map<Key, std::string> named_;                       // parameters and buffers by their memory
  std::map<Key, std::string> constants_;                   // initializers already written
  std::map<std::pair<std::string, DType>, std::string> converted_;         // Cast nodes written
  std::map<std::pair<Key, DType>, std::string> converted_constants_;       // constants written converted
  std::vector<Tensor> keep_;                               // keeps bound tensors' memory from being reused
};

}  // namespace ember::onnx
