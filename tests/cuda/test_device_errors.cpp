// Device mismatches on a machine with a GPU raise the documented DeviceErrors
// (docs/errors.md, "Devices"): an op whose operands live on different devices names
// the first operand's device as the expected one, and a layer whose parameters are
// on the GPU called with a CPU input names the layer's op.
#include "cuda/both.h"
#include "nn/nn.h"

using namespace ember;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

TEST_CASE("ops with operands on the GPU and the CPU raise DeviceError", "[cuda][errors]") {
  const Tensor t1 = ones({2, 3}), t2 = ones({2, 3});
  EXPECT_ERROR(t1.cuda() + t2, DeviceError, "expected device cuda:0 but got device cpu");
  EXPECT_ERROR(t2 + t1.cuda(), DeviceError, "expected device cpu but got device cuda:0");
  EXPECT_ERROR(t1.cuda() * t2, DeviceError, "expected device cuda:0 but got device cpu");
  EXPECT_ERROR(matmul(t1.cuda(), t2.t()), DeviceError, "expected device cuda:0 but got device cpu");
  EXPECT_ERROR(matmul(t1, t2.t().cuda()), DeviceError, "expected device cpu but got device cuda:0");
  EXPECT_ERROR(where(t1.cuda() > 0, t1.cuda(), t2), DeviceError, "expected device cuda:0 but got device cpu");
  Tensor inplace = t1.cuda();
  EXPECT_ERROR(inplace.add_(t2), DeviceError, "expected device cuda:0 but got device cpu");
  // A C++ number goes with either device.
  CHECK((t1.cuda() + 2).device().str() == "cuda:0");
  CHECK((2 * t1.cuda()).sum().item<float>() == 12.0f);
  // Layer ops as plain functions use the same wording.
  const Tensor x = zeros({1, 1, 8, 8}), w = zeros({2, 1, 3, 3});
  EXPECT_ERROR(conv2d(x.cuda(), w, Tensor()), DeviceError, "expected device cuda:0 but got device cpu");
  EXPECT_ERROR(conv2d(x, w.cuda(), Tensor()), DeviceError, "expected device cpu but got device cuda:0");
  EXPECT_ERROR(nn::functional::cross_entropy(zeros({2, 3}).cuda(), zeros({2}, kInt64)), DeviceError,
               "expected device cuda:0 but got device cpu");
}

TEST_CASE("the seed network on the GPU called with a CPU input raises DeviceError", "[cuda][errors]") {
  manual_seed(1);
  nn::Network net;
  net.to(Device("cuda"));
  for (const auto& [name, p] : net.named_parameters()) {
    INFO(name);
    CHECK(p.device().str() == "cuda:0");
  }
  EXPECT_ERROR(net(zeros({2, 1, 28, 28})), DeviceError,
               "Expected object of device type cuda but got device type cpu for argument #1 'self' in call to "
               "conv2d_forward");
  // A linear layer names its own op; and the reverse direction.
  nn::Linear fc(4, 3);
  fc.to(Device("cuda"));
  EXPECT_ERROR(fc(zeros({2, 4})), DeviceError,
               "Expected object of device type cuda but got device type cpu for argument #1 'self' in call to "
               "linear_forward");
  nn::Linear cpu_fc(4, 3);
  EXPECT_ERROR(cpu_fc(zeros({2, 4}).cuda()), DeviceError,
               "Expected object of device type cpu but got device type cuda for argument #1 'self' in call to "
               "linear_forward");
  // With its input on the GPU the network runs and gives [2, 10] logits there.
  const Tensor y = net(zeros({2, 1, 28, 28}).cuda());
  CHECK(y.device().str() == "cuda:0");
  CHECK(y.shape() == Shape{2, 10});
}
