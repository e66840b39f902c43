// The engine (see engine.h). It counts, for every node reachable from the roots,
// how many edges lead into it; a node is ready when that many gradients arrived.
// Ready nodes run latest-recorded first, which is a valid reverse topological order
// and matches PyTorch's, so hooks fire in a predictable order.
#include "autograd/engine.h"

#include <queue>
#include <unordered_map>

#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::autograd {
namespace {

// Gradients must keep their own memory: two leaves fed by one `add` would
// otherwise share one tensor as .grad() and an in-place update of one would
// change the other.
Tensor owned(Tensor g) {
  if (g.storage().use_count() > 1 || !g.is_contiguous() || g.is_wrapped_number()) return g.clone();
  return g;
}

void accumulate(Node& node, Tensor g) {
  Tensor leaf(node.leaf);
  if (g.dtype() != leaf.dtype()) g = g.to(leaf.dtype());
  Tensor& slot = leaf.mutable_grad();
  if (!slot.defined()) {
    slot = owned(std::move(g));
  } else {
    slot.add_(g);
  }
  for (auto& hook : leaf.impl().autograd->post_accumulate_hooks) hook(leaf);
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  NoGradGuard no_grad;
  autocast::SuspendGuard no_autocast;  // each backward rule runs in the dtype its forward used
  struct Later {
    bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
  };
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<std::shared_ptr<Node>> keep_alive;

  // Seed the root gradients.
  std::vector<Edge> root_edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r.requires_grad())
      throw Error(msg("element ", i, " of tensors does not require grad and does not have a grad_fn"));
    Tensor g = i < grads.size() ? grads[i] : Tensor();
    if (!g.defined()) {
      if (r.numel() != 1) throw Error("grad can be implicitly created only for scalar outputs");
      g = ones_like(r);
    } else if (g.shape() != r.shape()) {
      throw ShapeError(msg("Mismatch in shape: grad_output[", i, "] has a shape of ", shape_str(g.shape()),
                           " and output[", i, "] has a shape of ", shape_str(r.shape()), "."));
    }
    Edge e = gradient_edge(r);
    root_edges.push_back(e);
    auto& buf = buffers[e.fn.get()];
    if (buf.empty()) buf.resize(e.fn->op == OpId::AccumulateGrad ? 1 : e.fn->outputs.size());
    buf[e.input_nr] = buf[e.input_nr].defined() ? buf[e.input_nr] + g : g;
  }

  // Count the edges into every reachable node.
  std::vector<Node*> stack;
  std::unordered_map<Node*, bool> seen;
  for (const Edge& e : root_edges)
    if (!seen[e.fn.get()]) {
      seen[e.fn.get()] = true;
      stack.push_back(e.fn.get());
      keep_alive.push_back(e.fn);
    }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.valid()) continue;
      ++dependencies[e.fn.get()];
      if (!seen[e.fn.get()]) {
        seen[e.fn.get()] = true;
        stack.push_back(e.fn.get());
      }
    }
  }

  std::priority_queue<Node*, std::vector<Node*>, Later> ready;
  for (auto& [n, _] : seen)
    if (dependencies[n] == 0) ready.push(n);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> in = std::move(buffers[node]);
    buffers.erase(node);
    if (node->op == OpId::AccumulateGrad) {
      if (!in.empty() && in[0].defined()) accumulate(*node, std::move(in[0]));
      continue;
    }
    if (node->released)
      throw Error(
          "Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward(). "
          "Specify retain_graph=true if you need to backward through the graph a second time.");
    in.resize(node->outputs.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (!in[i].defined()) in[i] = zeros(node->outputs[i].shape, {node->outputs[i].dtype, node->outputs[i].device});
    for (auto& [nr, weak] : node->retained)
      if (auto impl = weak.lock()) Tensor(impl).mutable_grad() = in[nr].clone();
    std::vector<Tensor> out = apply_backward(*node, in);
    if (!retain_graph) {
      for (SavedTensor& s : node->saved) s.release();
      node->released = true;
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      if (!e.valid()) continue;
      Tensor g = i < out.size() ? out[i] : Tensor();
      if (g.defined()) {
        const InputMeta& im = node->inputs[i];
        if (g.dtype() != im.dtype) g = g.to(im.dtype);
        if (g.shape() != im.shape)
          throw Error(msg("internal error: ", node->name(), " returned a gradient of shape ", shape_str(g.shape()),
                          " for input ", i, " of shape ", shape_str(im.shape)));
        auto& buf = buffers[e.fn.get()];
        if (buf.empty()) buf.resize(e.fn->op == OpId::AccumulateGrad ? 1 : e.fn->outputs.size());
        buf[e.input_nr] = buf[e.input_nr].defined() ? buf[e.input_nr] + g : g;
      }
      if (--dependencies[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
}

}  // namespace ember::autograd

namespace ember {
void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}
}  // namespace ember
