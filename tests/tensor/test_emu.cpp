// The code between devices, run without a GPU on the emulated device `emu` (host
// memory, CPU kernels, treated by every front-end as a separate device with a current
// device per thread). CUDA takes the same front-end paths: copies between devices,
// C++ numbers meeting device tensors, to() with and without a dtype change, the device
// scope every op holds, non-blocking copies and the allocator's book. Each result is
// checked against the same computation on the CPU; emu's counters show what crossed.
#include <cstring>
#include <sstream>

#include <catch2/catch.hpp>

#include "ember.h"
#include "tensor/emu.h"

using namespace ember;
using Catch::Matchers::Message;

namespace {

const Device kEmu0("emu:0"), kEmu1("emu:1");

// Whether two CPU tensors hold the same bits (emu runs the CPU's kernels on the same
// inputs, so results must agree exactly).
bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

// Bit-equal values, shapes and dtypes of an emu result and its CPU twin.
void check_same(const Tensor& on_emu, const Tensor& on_cpu) {
  REQUIRE(on_emu.device().is_emu());
  REQUIRE(on_cpu.device().is_cpu());
  REQUIRE(on_emu.shape() == on_cpu.shape());
  REQUIRE(on_emu.dtype() == on_cpu.dtype());
  const Tensor back = on_emu.cpu();
  CHECK(equal(back, on_cpu));
}

// Restores the thread's current emu device and counters after a test.
struct EmuState {
  EmuState() {
    emu::set_device(0);
    emu::reset_counters();
  }
  ~EmuState() { emu::set_device(0); }
};

}  // namespace

TEST_CASE("emu devices parse, print, allocate and have a current device", "[emu][device]") {
  EmuState state;
  CHECK(Device("emu").is_emu());
  CHECK(Device("emu").index() == -1);
  CHECK(kEmu1.str() == "emu:1");
  CHECK(Device(DeviceType::Emu, 1) == kEmu1);
  CHECK_THROWS_AS(Device("emu:"), ValueError);
  CHECK(emu::device_count() == 2);
  CHECK(emu::current_device() == 0);
  // A bare "emu" means the current device, when a tensor is made and when one moves.
  CHECK(zeros({2}, Device("emu")).device() == kEmu0);
  emu::set_device(1);
  CHECK(zeros({2}, Device("emu")).device() == kEmu1);
  CHECK(ones({2}).to(Device("emu")).device() == kEmu1);
  emu::set_device(0);
  REQUIRE_THROWS_MATCHES(emu::set_device(2), DeviceError, Message("emu: invalid device ordinal 2 (2 devices)"));
  REQUIRE_THROWS_MATCHES(zeros({2}, Device("emu:3")), DeviceError,
                         Message("emu: invalid device ordinal 3 (2 devices)"));
  std::ostringstream os;
  os << tensor({1.0f, 2.0f}).to(kEmu1);
  CHECK(os.str() == "tensor([1., 2.], device='emu:1')");
}

TEST_CASE("emu tensors meet other devices' tensors only through copies", "[emu][errors][device]") {
  EmuState state;
  Tensor a = zeros({2, 3}, kEmu0), b = zeros({2, 3}, kEmu1), c = zeros({2, 3});
  REQUIRE_THROWS_MATCHES(a + b, DeviceError, Message("expected device emu:0 but got device emu:1"));
  REQUIRE_THROWS_MATCHES(c * a, DeviceError, Message("expected device cpu but got device emu:0"));
  REQUIRE_THROWS_MATCHES(where(a > 0, a, c), DeviceError, Message("expected device emu:0 but got device cpu"));
  REQUIRE_THROWS_MATCHES(matmul(b, a.t()), DeviceError, Message("expected device emu:1 but got device emu:0"));
}

// Finding: a C++ number meeting a device tensor of its own dtype recursed until the
// stack overflowed (copy_ -> to() -> copy_ ...). These are the triggering cases; on
// the code before the fix the test program dies in the first of them.
TEST_CASE("a C++ number meets emu tensors of its own dtype without recursing", "[emu][scalar]") {
  EmuState state;
  manual_seed(3);
  const Tensor f32 = randn({4, 6}), f64 = randn({5}).to(kFloat64), i64 = arange(-4, 8).to(kInt64);
  const Tensor bools = f32 > 0;

  SECTION("fill_ and zero_ of a non-contiguous tensor") {
    Tensor on_emu = zeros({4, 6}, kEmu0).t(), on_cpu = zeros({4, 6}).t();
    on_emu.fill_(2.5);
    on_cpu.fill_(2.5);
    check_same(on_emu.contiguous(), on_cpu.contiguous());
    Tensor i_emu = ones({3, 4}, TensorOptions(kInt64, kEmu1)).t();
    i_emu.fill_(7);
    check_same(i_emu, full({4, 3}, 7, kInt64));
    Tensor half_rows = ones({4, 6}, kEmu0).slice(1, 0, 6, 2);
    half_rows.zero_();
    check_same(half_rows, zeros({4, 3}));
  }
  SECTION("float64, int64 and bool tensors with a number of their kind") {
    check_same(f64.to(kEmu0) + 1.5, f64 + 1.5);
    check_same(f64.to(kEmu1) * 0.25, f64 * 0.25);
    check_same(i64.to(kEmu0) * 3, i64 * 3);
    check_same(i64.to(kEmu0) - 2, i64 - 2);
    check_same(bools.to(kEmu0) == true, bools == true);
    check_same(2.0 - f64.to(kEmu0), 2.0 - f64);
    Tensor acc = i64.to(kEmu1);
    acc.add_(5);
    check_same(acc, i64 + 5);
  }
  SECTION("where and clamp with a number of the tensor's dtype") {
    check_same(where(f64.to(kEmu0) > 0, f64.to(kEmu0), 0.5), where(f64 > 0, f64, 0.5));
    check_same(where(bools.to(kEmu1), 1.0, f32.to(kEmu1)), where(bools, 1.0, f32));
    check_same(clamp(i64.to(kEmu0), 0, 5), clamp(i64, 0, 5));
    check_same(clamp(f64.to(kEmu0), -0.5, 0.5), clamp(f64, -0.5, 0.5));
    Tensor c = f32.to(kEmu0);
    c.clamp_(-1.0, 1.0);
    check_same(c, clamp(f32, -1.0, 1.0));
  }
}

// Finding: a C++ number reached a device kernel through a host-to-device copy (on CUDA
// a blocking one, which drained the GPU's queue on every scalar op). It is passed to
// the kernel by value: no byte crosses for it.
TEST_CASE("a C++ number reaches an emu kernel by value, with no host-to-device copy", "[emu][scalar]") {
  EmuState state;
  manual_seed(4);
  const Tensor x_cpu = randn({3, 5}), n_cpu = arange(0, 15).reshape({3, 5}).to(kInt32);
  const Tensor h_cpu = x_cpu.to(kFloat16), x_t_cpu = x_cpu.t();
  const Tensor x = x_cpu.to(kEmu1), n = n_cpu.to(kEmu1), h = h_cpu.to(kEmu1), x_t = x.t();
  Tensor y = x.clone();
  emu::reset_counters();
  // Numbers whose dtype differs from the tensor's (converted on the host) and equal.
  const Tensor r1 = x * 0.5, r2 = 2 + n, r3 = n / 4, r4 = h * 3, r5 = x_t - 1.0, r6 = x > 0.25;
  const Tensor r7 = where(x > 0, x, -1.0), r8 = clamp(n, 2, 9), r9 = pow(x, 2.0), r10 = maximum(h, 0.5);
  y.mul_(0.5);
  Tensor filled = empty({5, 3}, kEmu1).t();
  filled.fill_(1.25);
  const emu::Counters during = emu::counters();
  CHECK(during.host_to_device == 0);
  CHECK(during.device_to_host == 0);
  CHECK(during.bytes == 0);
  check_same(r1, x_cpu * 0.5);
  check_same(r2, 2 + n_cpu);
  check_same(r3, n_cpu / 4);
  check_same(r4, h_cpu * 3);
  check_same(r5, x_t_cpu - 1.0);
  check_same(r6, x_cpu > 0.25);
  check_same(r7, where(x_cpu > 0, x_cpu, -1.0));
  check_same(r8, clamp(n_cpu, 2, 9));
  check_same(r9, pow(x_cpu, 2.0));
  check_same(r10, maximum(h_cpu, 0.5));
  check_same(y, x_cpu * 0.5);
  check_same(filled, full({3, 5}, 1.25));
  // The counter is not blind: reading results back is one device-to-host copy each.
  CHECK(emu::counters().device_to_host == 12);
}

TEST_CASE("training-shaped work on emu moves no number to the device", "[emu][scalar][autograd]") {
  EmuState state;
  manual_seed(5);
  const Tensor x_cpu = randn({8, 6}), w_cpu = randn({6, 4}), target_cpu = tensor(std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3});
  Tensor w = w_cpu.to(kEmu1).requires_grad_(true);
  Tensor w_ref = w_cpu.clone().requires_grad_(true);
  const Tensor x = x_cpu.to(kEmu1), target = target_cpu.to(kEmu1);
  emu::reset_counters();
  Tensor loss = cross_entropy(relu(matmul(x, w)) * 0.5 + 0.1, target);
  loss.backward();
  const emu::Counters during = emu::counters();
  CHECK(during.host_to_device == 0);
  Tensor loss_ref = cross_entropy(relu(matmul(x_cpu, w_ref)) * 0.5 + 0.1, target_cpu);
  loss_ref.backward();
  check_same(loss.detach(), loss_ref.detach());
  check_same(w.grad(), w_ref.grad());
}

// Finding: gradcheck wrote its perturbations and its one-hot output gradient through
// host pointers, which a GPU's memory does not take (emu's host memory hid it). It
// now fills device elements by ops; the inputs stay on their device throughout.
TEST_CASE("gradcheck of emu inputs perturbs them on emu, and still catches a wrong gradient", "[emu][autograd]") {
  EmuState state;
  manual_seed(9);
  const Tensor a = randn({3, 4}, kFloat64).to(kEmu1).requires_grad_(true);
  const Tensor b = randn({4, 2}, kFloat64).to(kEmu1).requires_grad_(true);
  int calls_off_emu = 0;
  auto f = [&](const std::vector<Tensor>& x) {
    for (const Tensor& t : x) calls_off_emu += t.device() == kEmu1 ? 0 : 1;
    return (matmul(x[0], x[1]).tanh() * x[0].sum()).sum(std::vector<int64_t>{0});
  };
  std::string why;
  CHECK(autograd::gradcheck(f, {a, b}, {}, &why));
  CHECK(why.empty());
  CHECK(calls_off_emu == 0);
  // The same check on the CPU gives the same verdict, and a wrong gradient fails on emu.
  CHECK(autograd::gradcheck(f, {a.cpu().requires_grad_(true), b.cpu().requires_grad_(true)}));
  auto wrong = [](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); };
  CHECK_FALSE(autograd::gradcheck(wrong, {a}, {}, &why));
  CHECK(why.find("Jacobian mismatch") != std::string::npos);
}

// Finding: from_blob kept a bare "emu" (or "cuda") as it was, index -1, so the first
// op on the tensor raised "expected device emu:1 but got device emu".
TEST_CASE("from_blob on a bare device name takes the current device", "[emu][device]") {
  EmuState state;
  emu::set_device(1);
  std::vector<float> data = {1, 2, 3};
  const Tensor t = from_blob(data.data(), {3}, kFloat32, {}, nullptr, Device("emu"));
  CHECK(t.device() == kEmu1);
  check_same(t + 1, tensor({2.0f, 3.0f, 4.0f}));
}

// Finding: an op on device 1 made device 1 current for good, so a later bare "emu"
// (or "cuda") meant device 1. Ops hold their device for their own scope only.
TEST_CASE("ops on emu:1 leave the thread's current device as they found it", "[emu][guard]") {
  EmuState state;
  manual_seed(6);
  const Tensor a_cpu = randn({4, 4});
  const Tensor a = a_cpu.to(kEmu1);
  REQUIRE(emu::current_device() == 0);
  emu::reset_counters();
  const Tensor r = softmax(matmul(a, a) + 1, 1).sum({0}) * 2;
  CHECK(emu::current_device() == 0);
  // The ops did make emu:1 current while they ran (each switch in was undone).
  const int64_t switches = emu::counters().device_switches;
  CHECK(switches > 0);
  CHECK(switches % 2 == 0);
  CHECK(zeros({1}, Device("emu")).device() == kEmu0);
  CHECK(ones({2}).to(Device("emu")).device() == kEmu0);
  check_same(r, softmax(matmul(a_cpu, a_cpu) + 1, 1).sum({0}) * 2);
  // From the other side: with emu:1 current, work on emu:0 leaves emu:1 current.
  emu::set_device(1);
  const Tensor b = a_cpu.to(kEmu0);
  (void)(b * b).sum().item();
  CHECK(emu::current_device() == 1);
  // A failing op restores it too.
  CHECK_THROWS_AS(matmul(b, zeros({3, 2}, kEmu0)), ShapeError);
  CHECK(emu::current_device() == 1);
}

TEST_CASE("copies between cpu, emu:0 and emu:1 convert on one side and move once", "[emu][copy]") {
  EmuState state;
  manual_seed(7);
  const Tensor x = randn({6, 5});

  SECTION("to() with a dtype change converts on the source side: only the final dtype crosses") {
    const Tensor d = x.to(kEmu0, kFloat64);
    CHECK(emu::counters().host_to_device == 1);
    CHECK(emu::counters().bytes == 6 * 5 * 8);
    check_same(d, x.to(kFloat64));
    emu::reset_counters();
    const Tensor back = d.to(kCPU, kFloat16);
    CHECK(emu::counters().device_to_host == 1);
    CHECK(emu::counters().bytes == 6 * 5 * 2);
    CHECK(equal(back, x.to(kFloat64).to(kFloat16)));
  }
  SECTION("to() without a change returns the tensor itself; to another emu moves device to device") {
    const Tensor a = x.to(kEmu0);
    CHECK(a.to(kEmu0).is_same(a));
    emu::reset_counters();
    const Tensor b = a.to(kEmu1);
    CHECK(b.device() == kEmu1);
    CHECK(emu::counters().device_to_device == 1);
    CHECK(emu::counters().host_to_device == 0);
    check_same(b, x);
  }
  SECTION("non-contiguous sources and destinations, broadcasting") {
    Tensor dst = zeros({5, 6}, kEmu1).t();  // (6, 5) with strides (1, 6)
    emu::reset_counters();
    dst.copy_(x.t().contiguous().t());  // a non-contiguous CPU source
    CHECK(emu::counters().host_to_device == 1);
    check_same(dst.contiguous(), x);
    Tensor row_dst = zeros({6, 5}, kEmu0);
    row_dst.copy_(x[0]);  // (5) broadcast over 6 rows
    check_same(row_dst, x[0].expand({6, 5}).contiguous());
    Tensor host = zeros({5, 6}).t();
    host.copy_(x.to(kEmu1, kFloat64));  // into a non-contiguous CPU destination
    CHECK(equal(host, x.to(kFloat64).to(kFloat32)));
  }
  SECTION("non_blocking reaches the transfer") {
    emu::reset_counters();
    const Tensor a = x.to(kEmu0, /*non_blocking=*/true);
    CHECK(emu::counters().non_blocking == 1);
    Tensor b = empty({6, 5}, kEmu0);
    b.copy_(x, /*non_blocking=*/false);
    CHECK(emu::counters().non_blocking == 1);
    CHECK(emu::counters().host_to_device == 2);
    check_same(a, x);
    check_same(b, x);
  }
  SECTION("a wrapped number becomes a device tensor without a transfer") {
    emu::reset_counters();
    Tensor z = zeros({3}, kEmu0);
    z.copy_(scalar_tensor(4));  // int64 number into float32
    CHECK(emu::counters().host_to_device == 0);
    check_same(z, full({3}, 4.0f));
  }
}

TEST_CASE("emu's allocator book: tensors and temporaries are freed", "[emu][allocator]") {
  EmuState state;
  const size_t before0 = emu::memory_allocated(0), before1 = emu::memory_allocated(1);
  {
    Tensor a = ones({1000}, kEmu1);
    CHECK(emu::memory_allocated(1) == before1 + 4000);
    Tensor b = (a * 2 + 1).sum();  // temporaries come and go
    CHECK(emu::memory_allocated(1) == before1 + 4000 + 4);
    Tensor c = a.to(kEmu0, kFloat64);
    CHECK(emu::memory_allocated(0) == before0 + 8000);
    CHECK(emu::memory_allocated(1) == before1 + 4000 + 4);  // the conversion's temporary is gone
    Tensor empty_one = empty({0}, kEmu0);
    CHECK(emu::memory_allocated(0) == before0 + 8000);
  }
  CHECK(emu::memory_allocated(0) == before0);
  CHECK(emu::memory_allocated(1) == before1);
}
