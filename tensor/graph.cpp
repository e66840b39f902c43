// Recording the autograd graph: nodes, edges, saved tensors, grad mode.
#include "tensor/graph.h"

#include <string_view>

#include "tensor/checks.h"

namespace ember {
namespace {

thread_local bool grad_mode = true;
thread_local RecordObserver* record_observer = nullptr;
std::atomic<uint64_t> next_sequence_nr{0};

// A handle on the same memory with no autograd state.
Tensor data_only(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(t.impl());
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

AutogradMeta& meta_of(const Tensor& t) {
  auto& m = t.impl().autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}

}  // namespace

const char* backward_name(OpId op) {
  switch (op) {
#define EMBER_X(Name, name, ...) case OpId::Name: return #Name "Backward0";
    EMBER_AUTOGRAD_OPS(EMBER_X)
#undef EMBER_X
    case OpId::AccumulateGrad: return "AccumulateGrad";
  }
  return "?";
}

Node::Node(OpId o) : op(o), sequence_nr(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

SavedTensor::SavedTensor(const char* name, const Tensor& t) : name_(name) {
  if (!t.defined()) return;
  tensor_ = data_only(t);
  version_ = t.device().is_meta() ? 0 : t.storage()->version();
}

Tensor Node::saved_tensor(const char* want) const {
  for (const SavedTensor& s : saved)
    if (std::string_view(s.name()) == want) return s.unpack(name());
  throw Error(msg("internal error: ", name(), " has no saved tensor '", want, "'"));
}

Tensor SavedTensor::unpack(const char* node_name) const {
  if (released_)
    throw Error(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward(). Specify "
        "retain_graph=true if you need to backward through the graph a second time.");
  if (!tensor_.defined()) return tensor_;
  const uint64_t now = tensor_.device().is_meta() ? 0 : tensor_.storage()->version();
  if (now != version_)
    throw Error(msg("one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [",
                    tensor_.dtype(), " ", shape_str(tensor_.shape()), "], which is needed by ", node_name,
                    ", is at version ", now, "; expected version ", version_, " instead."));
  return tensor_;
}

bool grad_mode_enabled() { return grad_mode; }
void set_grad_mode(bool enabled) { grad_mode = enabled; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_mode) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.impl().autograd) return {};
  AutogradMeta& m = *t.impl().autograd;
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  std::shared_ptr<Node> acc = m.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<Node>(OpId::AccumulateGrad);
    acc->leaf = t.impl_ptr();
    acc->inputs.push_back({t.shape(), t.dtype(), t.device()});
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

std::shared_ptr<Node> record(OpId op, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
  auto node = std::make_shared<Node>(op);
  node->next.reserve(inputs.size());
  node->inputs.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    node->next.push_back(t->defined() ? gradient_edge(*t) : Edge{});
    node->inputs.push_back(t->defined() ? InputMeta{t->shape(), t->dtype(), t->device()} : InputMeta{});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    AutogradMeta& m = meta_of(*outputs[i]);
    m.requires_grad = true;
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
    node->outputs.push_back({outputs[i]->shape(), outputs[i]->dtype(), outputs[i]->device()});
  }
  if (record_observer) record_observer->on_record(node, inputs, outputs);
  return node;
}

RecordObserverGuard::RecordObserverGuard(RecordObserver* observer) : previous_(record_observer) {
  record_observer = observer;
}
RecordObserverGuard::~RecordObserverGuard() { record_observer = previous_; }

void bump_version(const Tensor& t) {
  if (t.defined() && t.storage()) t.storage()->bump_version();
}

}  // namespace ember
