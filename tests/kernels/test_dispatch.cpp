// dtype dispatch in the kernels (kernels/base/dispatch.h): a floating-only kernel
// called directly with another dtype throws the documented NotImplementedError
// instead of running on.
#include <catch2/catch.hpp>

#include "kernels/base/error.h"
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
