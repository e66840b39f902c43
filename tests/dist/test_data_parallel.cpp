// DataParallel over two CPU replicas (threads) against the module alone: the
// same outputs, and the same gradients in the module's parameters after backward.
#include <catch2/catch.hpp>

#include <cmath>

#include "dist/data_parallel.h"
#include "nn/nn.h"
#include "tensor/graph.h"

using namespace ember;

namespace {

std::shared_ptr<nn::Module> make_net() {
  manual_seed(11);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(6, 10), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(10, 3)});
}

void require_close(const Tensor& a, const Tensor& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  for (size_t i = 0; i < va.size(); ++i) REQUIRE(std::abs(va[i] - vb[i]) <= tol * (1 + std::abs(vb[i])));
}

}  // namespace

TEST_CASE("DataParallel over two CPU replicas matches the single module", "[dist][data_parallel]") {
  auto net = make_net();
  auto single = make_net();  // same seed: same values
  dist::DataParallel dp(net, {Device("cpu"), Device("cpu")}, make_net);
  for (int64_t batch : {10, 9, 1}) {
    CAPTURE(batch);
    manual_seed(20 + batch);
    Tensor x = randn({batch, 6});
    net->zero_grad();
    single->zero_grad();
    Tensor y = dp(x), want = (*single)(x);
    require_close(y, want, 1e-6);
    (y * y).sum().backward();
    (want * want).sum().backward();
    const auto got = net->named_parameters(), ref = single->named_parameters();
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(got[k].first);
      require_close(got[k].second.grad(), ref[k].second.grad(), 1e-5);
    }
  }
  // The replica follows the module's new values on the next forward.
  {
    NoGradGuard no_grad;
    for (auto& p : net->parameters()) p.mul_(0.5);
    for (auto& p : single->parameters()) p.mul_(0.5);
  }
  Tensor x = randn({8, 6});
  require_close(dp(x), (*single)(x), 1e-6);
}

TEST_CASE("DataParallel argument errors", "[dist][data_parallel]") {
  REQUIRE_THROWS_MATCHES(dist::DataParallel(make_net(), {}, make_net), ValueError,
                         Catch::Message("DataParallel: the device list is empty"));
  REQUIRE_THROWS_MATCHES(
      dist::DataParallel(make_net(), {Device("cpu"), Device("cpu")},
                         [] { return std::static_pointer_cast<nn::Module>(std::make_shared<nn::Linear>(6, 3)); }),
      ValueError, Catch::Message("DataParallel: the factory's module has 2 parameters but the module has 4"));
  REQUIRE_THROWS_MATCHES(dist::DataParallel(make_net(), {Device("meta")}, make_net), DeviceError,
                         Catch::Message("DataParallel: the module must be on meta (the first device) but 0.weight "
                                        "is on cpu"));
  dist::DataParallel dp(make_net(), {Device("cpu"), Device("cpu")}, make_net);
  REQUIRE_THROWS_MATCHES(dp(scalar_tensor(1.0)), ShapeError,
                         Catch::Message("DataParallel: the input needs a batch dimension to split"));
}
