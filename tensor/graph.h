// The autograd graph as the op front-ends record it. A Node stands for one
// recorded op: edges to the nodes that produced its inputs, the tensors and
// attributes its backward rule needs, and the metadata of its inputs. Leaves get an
// AccumulateGrad node. tensor/ only builds this graph; autograd/ walks it.
#pragma once

#include "kernels/base/export.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tensor/op_attrs.h"
#include "tensor/op_list.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember {

struct Node;

// Where a gradient goes: input `input_nr` of node `fn` (fn null: nowhere).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// A tensor a backward rule needs, under the name the rule asks for it by ("x",
// "y", "weight", ...), with the storage version it had when saved: if an in-place op
// changes it before backward, unpacking raises instead of silently using the new
// values. Outputs are saved without their autograd identity, which would otherwise
// form a cycle node -> output -> node.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const char* name, const Tensor& t);
  Tensor unpack(const char* node_name) const;
  void release() { tensor_ = Tensor(); released_ = true; }
  bool defined() const { return tensor_.defined() || released_; }
  const char* name() const { return name_; }

 private:
  const char* name_ = "";
  Tensor tensor_;
  uint64_t version_ = 0;
  bool released_ = false;
};

// What backward needs to know about an input without keeping it alive.
struct InputMeta {
  Shape shape;
  DType dtype = kFloat32;
  Device device;
};

struct Node {
  OpId op;
  uint64_t sequence_nr;             // later nodes run first in backward
  std::vector<Edge> next;           // one per forward input (invalid when it needs no grad)
  std::vector<InputMeta> inputs;    // one per forward input
  std::vector<SavedTensor> saved;   // what the backward rule reads, by name (save, saved)
  OpAttrs attrs;                    // the op's attributes (tensor/op_attrs.h), if it has any
  std::vector<InputMeta> outputs;   // metadata of each output (to zero-fill a missing gradient)
  bool released = false;            // saved tensors freed by a backward without retain_graph
  // AccumulateGrad only: the leaf whose .grad() this node fills.
  std::shared_ptr<TensorImpl> leaf;
  // Outputs that called retain_grad(): (output number, the tensor) get their gradient kept.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;

  explicit Node(OpId o);
  const char* name() const { return backward_name(op); }
  // Saves `t` for the backward rule under `name` (a string literal).
  void save(const char* name, const Tensor& t) { saved.emplace_back(name, t); }
  // The tensor saved under `name`; an internal error if the front-end saved none,
  // which gradcheck reports for any op whose front-end and rule disagree.
  Tensor saved_tensor(const char* name) const;
  // The op's attributes as the struct its front-end stored (std::bad_variant_access otherwise).
  template <class A> const A& attrs_as() const { return std::get<A>(attrs); }
};

// Per-tensor autograd state, created when a tensor first requires grad or is
// produced by a recorded op.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;              // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;       // leaves: the one AccumulateGrad node of this leaf
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
  bool is_view_of_grad_tensor = false;        // made by a view op from a tensor that requires grad
};

// ---- grad mode: a thread-local switch, on by default ----
bool grad_mode_enabled();
void set_grad_mode(bool enabled);

// Disables recording in its scope (and restores the previous state on exit).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_mode_enabled()) { set_grad_mode(false); }
  ~NoGradGuard() { set_grad_mode(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(grad_mode_enabled()) { set_grad_mode(true); }
  ~EnableGradGuard() { set_grad_mode(previous_); }

 private:
  bool previous_;
};

// ---- recording, used by op front-ends ----
// Whether an op over these inputs must record: grad mode on and one input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);
// Creates the node for `op` with edges to `inputs` and marks `outputs` as its
// results (requires_grad, grad_fn, output_nr). Returns the node so the caller can
// attach saved tensors and attributes.
std::shared_ptr<Node> record(OpId op, const std::vector<const Tensor*>& inputs,
                             const std::vector<Tensor*>& outputs);
// ---- observing the recording (onnx::save traces a forward pass this way) ----
// Told of every node record() creates on this thread while installed, with the
// op's forward inputs and outputs. The front-end attaches the node's attributes
// and saved tensors after record() returns, so an observer reads those later.
class RecordObserver {
 public:
  virtual ~RecordObserver() = default;
  virtual void on_record(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                         const std::vector<Tensor*>& outputs) = 0;
};
// Installs an observer on this thread for the guard's lifetime (the previous one,
// usually none, comes back after).
class RecordObserverGuard {
 public:
  explicit RecordObserverGuard(RecordObserver* observer);
  ~RecordObserverGuard();
  RecordObserverGuard(const RecordObserverGuard&) = delete;
  RecordObserverGuard& operator=(const RecordObserverGuard&) = delete;

 private:
  RecordObserver* previous_;
};
// The edge a gradient for `t` should follow: its grad_fn, or its leaf accumulator.
Edge gradient_edge(const Tensor& t);
// Marks a storage as modified (in-place ops and out= writes).
void bump_version(const Tensor& t);

}  // namespace ember

EMBER_API_END
