// Devices: parsing and printing of "cpu", "cuda", "cuda:N", "meta"; bad strings
// raise ValueError; moving to CUDA without a CUDA backend raises DeviceError; meta
// tensors carry shape and dtype through ops without memory.
#include <sstream>

#include <catch2/catch.hpp>

#include "ember.h"

using namespace ember;

TEST_CASE("device strings parse and print as PyTorch's", "[device]") {
  struct Case {
    const char* spec;
    DeviceType type;
    int index;
    const char* printed;
  };
  const Case cases[] = {{"cpu", DeviceType::CPU, -1, "cpu"},       {"cuda", DeviceType::CUDA, -1, "cuda"},
                        {"cuda:0", DeviceType::CUDA, 0, "cuda:0"}, {"cuda:1", DeviceType::CUDA, 1, "cuda:1"},
                        {"cuda:12", DeviceType::CUDA, 12, "cuda:12"}, {"meta", DeviceType::Meta, -1, "meta"}};
  for (const Case& c : cases) {
    INFO(c.spec);
    const Device d(c.spec);
    CHECK(d.type() == c.type);
    CHECK(d.index() == c.index);
    CHECK(d.str() == c.printed);
    std::ostringstream os;
    os << d;
    CHECK(os.str() == c.printed);
    CHECK(d.is_cpu() == (c.type == DeviceType::CPU));
    CHECK(d.is_cuda() == (c.type == DeviceType::CUDA));
    CHECK(d.is_meta() == (c.type == DeviceType::Meta));
    CHECK(Device(std::string(c.spec)) == d);
  }
  CHECK(Device("cuda:1") != Device("cuda:0"));
  CHECK(Device("cuda") != Device("cuda:0"));
  CHECK(Device("cpu") == kCPU);
  CHECK(Device("meta") == kMeta);
  CHECK(Device() == kCPU);
  CHECK(Device(DeviceType::CUDA, 3).str() == "cuda:3");
  CHECK(Device(DeviceType::CPU, 3).str() == "cpu");  // cpu and meta carry no index
  CHECK(std::string(device_type_name(DeviceType::Meta)) == "meta");
}

TEST_CASE("bad device strings raise ValueError", "[device]") {
  for (const char* bad : {"", "gpu", "CPU", "Cuda", "cuda:", "cuda:-1", "cuda:x", "cuda1", "cuda:1:2", "cpu:0",
                          "meta:0", " cpu", "cuda: 1", "cuda:1x"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(Device(bad), ValueError);
  }
  CHECK_THROWS_AS(Device(DeviceType::CUDA, -2), ValueError);
}

TEST_CASE("moving to CUDA without CUDA raises DeviceError", "[device]") {
  if (EMBER_HAVE_CUDA) {
    WARN("Ember was built with CUDA; the cuda suite covers transfers");
    return;
  }
  Tensor t = ones({2, 3});
  CHECK_THROWS_AS(t.to(Device("cuda")), DeviceError);
  CHECK_THROWS_AS(t.to(Device("cuda:1")), DeviceError);
  CHECK_THROWS_AS(t.cuda(), DeviceError);
  CHECK_THROWS_AS(t.to(Device("cuda"), kFloat16), DeviceError);
  CHECK_THROWS_AS(zeros({2}, Device("cuda")), DeviceError);
  CHECK_THROWS_AS(empty({2}, TensorOptions(kInt32, Device("cuda:0"))), DeviceError);
  // The failed move leaves the source untouched.
  CHECK(t.device() == kCPU);
  CHECK(t.sum().item<float>() == 6.0f);
}

TEST_CASE("meta tensors carry shapes and dtypes, not data", "[device]") {
  Tensor a = empty({2, 3}, TensorOptions(kFloat16, kMeta));
  CHECK(a.device() == kMeta);
  CHECK(a.dtype() == kFloat16);
  Tensor b = zeros({4, 1, 3}, kMeta);
  Tensor c = (b + 1.5) * b;
  CHECK(c.device() == kMeta);
  CHECK(c.shape() == Shape{4, 1, 3});
  CHECK((a + b).shape() == Shape{4, 2, 3});
  CHECK((a + b).dtype() == kFloat32);
  CHECK(matmul(a, empty({3, 5}, TensorOptions(kFloat16, kMeta))).shape() == Shape{2, 5});
  CHECK(b.sum({0}).shape() == Shape{1, 3});
  CHECK(b.sum({0}).device() == kMeta);
  CHECK(a.to(kFloat32).device() == kMeta);
  CHECK(a.to(kFloat32).dtype() == kFloat32);
  CHECK(a.new_zeros({7}).device() == kMeta);
  CHECK(a.t().shape() == Shape{3, 2});
  CHECK(zeros({2}).to(kMeta).device() == kMeta);
  CHECK_THROWS_AS(a.data_ptr(), DeviceError);
  CHECK_THROWS_AS(a.cpu(), DeviceError);
}
