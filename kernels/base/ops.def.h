// The elementwise op families, listed once. The kernels' functor switch, the
// tensor layer's op ids and names, and the op test table are generated from these
// lists, so adding a functor here without a kernel case fails to compile.
#pragma once

// X(name, result kind) where result kind is:
//   same   : result has the input dtype (bool rejected)
//   floating: integer and bool inputs are promoted to float32 first
#define EMBER_UNARY_OPS(X) \
  X(neg, same)             \
  X(abs, same)             \
  X(relu, same)            \
  X(exp, floating)            \
  X(log, floating)            \
  X(sqrt, floating)           \
  X(rsqrt, floating)          \
  X(sin, floating)            \
  X(cos, floating)            \
  X(tanh, floating)           \
  X(sigmoid, floating)        \
  X(gelu, floating)

// X(name, result kind) where result kind is:
//   arith  : result has the promoted dtype
//   truediv: like arith, but integer operands divide in float32
//   compare: computed in the promoted dtype, result is bool
#define EMBER_BINARY_OPS(X) \
  X(add, arith)             \
  X(sub, arith)             \
  X(mul, arith)             \
  X(div, truediv)           \
  X(pow, arith)             \
  X(maximum, arith)         \
  X(minimum, arith)         \
  X(eq, compare)            \
  X(ne, compare)            \
  X(lt, compare)            \
  X(le, compare)            \
  X(gt, compare)            \
  X(ge, compare)

namespace ember {

enum class UnaryOp : unsigned char {
#define EMBER_X(name, kind) name,
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
};

enum class BinaryOp : unsigned char {
#define EMBER_X(name, kind) name,
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
};

// Reductions the kernels implement; the tensor layer maps sum/mean/var/max/... onto them.
enum class ReduceOp : unsigned char { sum, mean, var, amax, amin, argmax, argmin };

}  // namespace ember
