// The elementwise ops, declared once: one row per op. Everything else is generated
// from these rows: the UnaryOp/BinaryOp enums and names, the autograd op ids
// (tensor/op_list.h), the Tensor methods and free functions (tensor/tensor.h,
// tensor/ops.h), which tensor a backward rule gets saved, the autocast policy, which
// dtypes each kernel is compiled for (kernels/cpu and kernels/cuda), and the test
// tables (value domains and dtypes). Adding an elementwise op takes its row here,
// its functor (kernels/base/functors.h, shared by CPU and CUDA), its derivative
// (autograd/derivatives.cpp) and its float64 reference in the op test table.
#pragma once

// Unary rows: X(Name, name, kind, saves, autocast, domain, dtypes)
//   Name     : CamelCase, for the autograd op id and its printed name (ExpBackward0)
//   name     : the op's name everywhere else (ember::exp, Tensor::exp, functors::exp)
//   kind     : same     - the result has the input dtype (bool rejected); compiled for every dtype
//              floating - integer and bool inputs are promoted to float32 first; compiled for floating dtypes
//   saves    : what backward reads: nothing, input (named "x") or output (named "y")
//   autocast : keep (runs in its input's dtype) or fp32 (autocast runs it in float32)
//   domain   : where tests draw inputs (tests/support/op_tables.h): any_sign, away_from_zero
//              (a kink at 0), positive
//   dtypes   : the input dtypes tests check, as PyTorch accepts them: all, or floats only
#define EMBER_UNARY_OPS(X)                                                  \
  X(Neg, neg, same, nothing, keep, any_sign, all)                           \
  X(Abs, abs, same, input, keep, away_from_zero, all)                       \
  X(Relu, relu, same, output, keep, away_from_zero, all)                    \
  X(Exp, exp, floating, output, fp32, any_sign, all)                        \
  X(Log, log, floating, input, fp32, positive, all)                         \
  X(Sqrt, sqrt, floating, output, keep, positive, all)                      \
  X(Rsqrt, rsqrt, floating, output, keep, positive, all)                    \
  X(Sin, sin, floating, input, keep, any_sign, all)                         \
  X(Cos, cos, floating, input, keep, any_sign, all)                         \
  X(Tanh, tanh, floating, output, keep, any_sign, all)                      \
  X(Sigmoid, sigmoid, floating, output, keep, any_sign, all)                \
  X(Gelu, gelu, floating, input, keep, any_sign, floats)                    \
  X(Softplus, softplus, floating, input, fp32, any_sign, floats)           \
  X(Erf, erf, floating, input, keep, any_sign, all)

// Binary rows: X(Name, name, kind, saves, autocast, domain of a, domain of b)
//   kind     : arith   - the result has the promoted dtype
//              truediv - like arith, but integer operands divide in float32
//              compare - computed in the promoted dtype, the result is bool (no gradient)
//   saves    : nothing, inputs ("a", "b") or inputs_output ("a", "b", "y")
//   domains  : wide, ties (small integers and halves, so that equalities happen),
//              divisor (away from 0), pow_base, pow_exponent
// Ops with a gradient first; comparisons after (they have no autograd op id).
#define EMBER_ARITH_OPS(X)                                                  \
  X(Add, add, arith, nothing, keep, wide, wide)                             \
  X(Sub, sub, arith, nothing, keep, wide, wide)                             \
  X(Mul, mul, arith, inputs, keep, wide, wide)                              \
  X(Div, div, truediv, inputs, keep, wide, divisor)                         \
  X(Pow, pow, arith, inputs_output, fp32, pow_base, pow_exponent)           \
  X(Maximum, maximum, arith, inputs, keep, ties, ties)                      \
  X(Minimum, minimum, arith, inputs, keep, ties, ties)
#define EMBER_COMPARE_OPS(X)                                                \
  X(Eq, eq, compare, nothing, keep, ties, ties)                             \
  X(Ne, ne, compare, nothing, keep, ties, ties)                             \
  X(Lt, lt, compare, nothing, keep, ties, ties)                             \
  X(Le, le, compare, nothing, keep, ties, ties)                             \
  X(Gt, gt, compare, nothing, keep, ties, ties)                             \
  X(Ge, ge, compare, nothing, keep, ties, ties)
#define EMBER_BINARY_OPS(X) EMBER_ARITH_OPS(X) EMBER_COMPARE_OPS(X)

namespace ember {

enum class UnaryOp : unsigned char {
#define EMBER_X(Name, name, ...) name,
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
};

enum class BinaryOp : unsigned char {
#define EMBER_X(Name, name, ...) name,
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
};

// The row's columns as values, for code that branches on them.
enum class UnaryKind : unsigned char { same, floating };
enum class BinaryKind : unsigned char { arith, truediv, compare };
enum class Saves : unsigned char { nothing, input, output, inputs, inputs_output };
enum class AutocastPolicy : unsigned char { keep, fp32 };

constexpr UnaryKind kind_of(UnaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, ...) case UnaryOp::name: return UnaryKind::kind;
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return UnaryKind::same;
}

constexpr BinaryKind kind_of(BinaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, ...) case BinaryOp::name: return BinaryKind::kind;
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return BinaryKind::arith;
}

constexpr Saves saves_of(UnaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, saves, ...) case UnaryOp::name: return Saves::saves;
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return Saves::nothing;
}

constexpr Saves saves_of(BinaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, saves, ...) case BinaryOp::name: return Saves::saves;
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return Saves::nothing;
}

constexpr AutocastPolicy autocast_of(UnaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, saves, autocast, ...) case UnaryOp::name: return AutocastPolicy::autocast;
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return AutocastPolicy::keep;
}

constexpr AutocastPolicy autocast_of(BinaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, kind, saves, autocast, ...) case BinaryOp::name: return AutocastPolicy::autocast;
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return AutocastPolicy::keep;
}

constexpr const char* name_of(UnaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, ...) case UnaryOp::name: return #name;
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return "?";
}

constexpr const char* name_of(BinaryOp op) {
  switch (op) {
#define EMBER_X(Name, name, ...) case BinaryOp::name: return #name;
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  }
  return "?";
}

// Reductions the kernels implement; the tensor layer maps sum/mean/var/max/... onto them.
enum class ReduceOp : unsigned char { sum, mean, var, amax, amin, argmax, argmin };

}  // namespace ember
