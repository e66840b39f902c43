// The backward engine: from the roots, every node reachable in the recorded graph
// runs once, after all of its consumers, in reverse order of recording; gradients
// arriving at the same input are added; AccumulateGrad nodes add into leaves'
// .grad() and fire their hooks.
#pragma once

#include "kernels/base/export.h"

#include <vector>

#include "tensor/graph.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::autograd {

// Differentiates `roots` with the given output gradients (an undefined gradient
// means ones, allowed only for one-element roots).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads = {}, bool retain_graph = false);

// The backward rule of one node: input gradients from output gradients
// (autograd/derivatives.cpp). Entries for inputs that need no gradient may be undefined.
std::vector<Tensor> apply_backward(Node& node, const std::vector<Tensor>& grad_outputs);

}  // namespace ember::autograd

EMBER_API_END
