// Every operation that records a node in the autograd graph, listed once. The
// elementwise ones come from their rows in kernels/base/ops.def.h (comparisons
// have no gradient and no op id); the rest are listed here as X(Name, name): Name
// is the CamelCase stem of the node's printed name ("AddBackward0"), name the op's
// name elsewhere. The OpId enum, the name table, the gradcheck coverage test and
// the switch of backward rules in autograd/derivatives.cpp come from this list;
// the switch is compiled with -Werror=switch, so an op without a rule fails to build.
// A consumer's X takes (Name, name, ...): elementwise rows carry more columns.
#pragma once

#include "kernels/base/export.h"

#include "kernels/base/ops.def.h"

EMBER_API_BEGIN

#define EMBER_OTHER_AUTOGRAD_OPS(X)                                                            \
  X(Where, where)                                                                             \
  /* reductions and normalisation */                                                          \
  X(Sum, sum) X(Mean, mean) X(Var, var) X(Norm, norm) X(Amax, amax) X(Amin, amin)             \
  X(MaxDim, max) X(MinDim, min) X(Softmax, softmax) X(LogSoftmax, log_softmax)                \
  /* linear algebra, joining, copies */                                                      \
  X(Matmul, matmul) X(Linear, linear) X(Cat, cat) X(ToCopy, to) X(Clone, clone)               \
  /* indexing */                                                                             \
  X(Take, take)                                                                               \
  /* views */                                                                                \
  X(View, view) X(Permute, permute) X(Expand, expand) X(Slice, slice) X(Select, select)       \
  /* layers (tensor/nn_ops.h) */                                                             \
  X(Conv2d, conv2d) X(MaxPool2d, max_pool2d) X(AvgPool2d, avg_pool2d)                         \
  X(Conv2dReluPool, conv2d_relu_pool2x2)                                                      \
  X(LayerNorm, layer_norm) X(Pad, pad)                                                        \
  X(CrossEntropy, cross_entropy) X(NllLoss, nll_loss)

#define EMBER_AUTOGRAD_OPS(X) EMBER_UNARY_OPS(X) EMBER_ARITH_OPS(X) EMBER_OTHER_AUTOGRAD_OPS(X)

namespace ember {

enum class OpId : unsigned char {
#define EMBER_X(Name, name, ...) Name,
  EMBER_AUTOGRAD_OPS(EMBER_X)
#undef EMBER_X
  AccumulateGrad,  // the node standing for a leaf: adds incoming gradients to .grad()
};

// "AddBackward0", "AccumulateGrad", ... as PyTorch prints grad_fn.
const char* backward_name(OpId op);

}  // namespace ember

EMBER_API_END
