// dtype dispatch in the kernels (kernels/base/dispatch.h): a floating-only kernel
// called directly with another dtype throws the documented NotImplementedError
// instead of running on.
#include <catch2/catch.hpp>

#include "kernels/base/error.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/softmax.h"

using namespace ember;

TEST_CASE("a floating-only CPU kernel throws on an integer dtype", "[kernels][errors]") {
  float buf[4] = {};
  CHECK_THROWS_AS(cpu::softmax(DType::Int32, 1, 4, 1, buf, buf, false), NotImplementedError);
  CHECK_THROWS_WITH(cpu::softmax(DType::Int32, 1, 4, 1, buf, buf, false),
                    "softmax: no kernel for device cpu and dtype int32");
  CHECK_THROWS_WITH(cpu::sgd_step(DType::Int64, 4, buf, buf, nullptr, SgdParams{}),
                    "sgd_step: no kernel for device cpu and dtype int64");
}

// The elementwise kernels are compiled for the dtypes each op's row allows: a
// floating op such as exp has no integer or bool kernel (the front-end promotes).
TEST_CASE("cpu::unary throws for a dtype its op's row does not compile", "[kernels][errors]") {
  int32_t ints[4] = {1, 2, 3, 4};
  bool bools[4] = {true, false, true, false};
  StridedLoop loop;
  loop.ndim = 1;
  loop.numel = 4;
  loop.sizes[0] = 4;
  loop.strides[0][0] = loop.strides[1][0] = sizeof(int32_t);
  loop.data[0] = loop.data[1] = reinterpret_cast<char*>(ints);
  CHECK_THROWS_MATCHES(cpu::unary(UnaryOp::exp, DType::Int32, loop), DTypeError,
                       Catch::Matchers::Message("cpu::unary: exp is not implemented for dtype int32"));
  cpu::unary(UnaryOp::neg, DType::Int32, loop);  // a `same` op has integer kernels
  CHECK(ints[2] == -3);
  loop.strides[0][0] = loop.strides[1][0] = sizeof(bool);
  loop.data[0] = loop.data[1] = reinterpret_cast<char*>(bools);
  CHECK_THROWS_MATCHES(cpu::unary(UnaryOp::abs, DType::Bool, loop), DTypeError,
                       Catch::Matchers::Message("cpu::unary: abs is not implemented for dtype bool"));
}
