// Every operation that records a node in the autograd graph, listed once.
// X(Name, name) - Name is the CamelCase stem of the node's printed name
// ("AddBackward0"), name the op's name elsewhere. The OpId enum, the name table and
// the switch of backward rules in autograd/derivatives.cpp come from this list;
// the switch is compiled with -Werror=switch, so an op without a rule fails to build.
#pragma once

#define EMBER_AUTOGRAD_OPS(X)            \
  /* elementwise, from ops.def.h */     \
  X(Neg, neg) X(Abs, abs) X(Relu, relu) X(Exp, exp) X(Log, log) X(Sqrt, sqrt) X(Rsqrt, rsqrt) \
  X(Sin, sin) X(Cos, cos) X(Tanh, tanh) X(Sigmoid, sigmoid) X(Gelu, gelu)                     \
  X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(Pow, pow) X(Maximum, maximum)              \
  X(Minimum, minimum) X(Where, where)                                                         \
  /* reductions and normalisation */                                                          \
  X(Sum, sum) X(Mean, mean) X(Var, var) X(Norm, norm) X(Amax, amax) X(Amin, amin)             \
  X(MaxDim, max) X(MinDim, min) X(Softmax, softmax) X(LogSoftmax, log_softmax)                \
  /* linear algebra, joining, copies */                                                      \
  X(Matmul, matmul) X(Cat, cat) X(ToCopy, to) X(Clone, clone)                                  \
  /* views */                                                                                \
  X(View, view) X(Permute, permute) X(Expand, expand) X(Slice, slice) X(Select, select)       \
  /* layers (tensor/nn_ops.h) */                                                             \
  X(Conv2d, conv2d) X(MaxPool2d, max_pool2d) X(AvgPool2d, avg_pool2d)                         \
  X(CrossEntropy, cross_entropy) X(NllLoss, nll_loss)

namespace ember {

enum class OpId : unsigned char {
#define EMBER_X(Name, name) Name,
  EMBER_AUTOGRAD_OPS(EMBER_X)
#undef EMBER_X
  AccumulateGrad,  // the node standing for a leaf: adds incoming gradients to .grad()
};

// "AddBackward0", "AccumulateGrad", ... as PyTorch prints grad_fn.
const char* backward_name(OpId op);

}  // namespace ember
