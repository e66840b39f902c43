// C++ numbers meeting CUDA tensors, and the current device around ops: the GPU half
// of tests/tensor/test_emu.cpp. A number of the tensor's own dtype used to recurse
// without end; a number of another dtype used to cross to the GPU through a blocking
// copy (a stream synchronization on every scalar op); an op on cuda:1 used to leave
// cuda:1 current. Each result is compared with the CPU's.
#include <chrono>
#include <random>

#include "cuda/both.h"
#include "kernels/cuda/runtime.h"
#include "tensor/cuda.h"

using namespace ember;
using cuda_test::both_of;
using cuda_test::diff;
using cuda_test::kCuda;
using cuda_test::tol_for;

namespace {

void check_close(const Tensor& gpu, const Tensor& cpu) {
  INFO(cuda_test::describe(cpu));
  CHECK(diff(gpu, cpu, tol_for(cpu.dtype())) == "");
}

}  // namespace

TEST_CASE("a C++ number meets CUDA tensors of its own dtype", "[cuda][scalar]") {
  manual_seed(11);
  const Tensor f32 = randn({33, 17}), f64 = randn({257}).to(kFloat64), i64 = arange(-40, 90).to(kInt64);
  const Tensor bools = f32 > 0;
  // fill_ and zero_ of non-contiguous tensors (the strided copy kernel with a by-value source).
  Tensor t = zeros({17, 33}, kCuda).t();
  t.fill_(2.5);
  check_close(t.contiguous(), full({33, 17}, 2.5));
  Tensor it = ones({9, 40}, TensorOptions(kInt64, kCuda)).slice(1, 0, 40, 3);
  it.fill_(-7);
  check_close(it.contiguous(), full({9, 14}, -7, kInt64));
  Tensor h = ones({64, 8}, TensorOptions(kFloat16, kCuda)).t();
  h.zero_();
  check_close(h.contiguous(), zeros({8, 64}, kFloat16));
  // Numbers of the tensor's kind, both operand orders, contiguous and strided kernels.
  check_close(f64.to(kCuda) + 1.5, f64 + 1.5);
  check_close(0.25 * f64.to(kCuda), 0.25 * f64);
  check_close(i64.to(kCuda) * 3, i64 * 3);
  check_close(5 - i64.to(kCuda), 5 - i64);
  check_close(bools.to(kCuda) == true, bools == true);
  check_close(f32.to(kCuda).t() * 0.5, f32.t() * 0.5);
  check_close(where(f64.to(kCuda) > 0, f64.to(kCuda), 0.5), where(f64 > 0, f64, 0.5));
  check_close(where(bools.to(kCuda), 1.0, f32.to(kCuda)), where(bools, 1.0, f32));
  check_close(where(bools.to(kCuda).t(), f32.to(kCuda).t(), -2.0), where(bools.t(), f32.t(), -2.0));
  check_close(clamp(i64.to(kCuda), 0, 50), clamp(i64, 0, 50));
  Tensor c = f32.to(kCuda);
  c.clamp_(-1.0, 1.0);
  check_close(c, clamp(f32, -1.0, 1.0));
  // Half and integer types take the number converted on the host, by value.
  for (DType dt : {kFloat16, kBFloat16, kInt8, kUInt8, kInt32}) {
    INFO(dtype_name(dt));
    const Tensor x = arange(0, 100).to(dt);
    check_close(x.to(kCuda) * 2, x * 2);
    check_close(x.to(kCuda) + 1, x + 1);
    check_close(maximum(x.to(kCuda), 50), maximum(x, 50));
  }
}

// The scalar op must return while earlier GPU work still runs: queue a GEMM that takes
// tens of milliseconds, then time `x * 0.5` (a float64 number converted to float32)
// on the host. A synchronizing op would wait for the GEMM; one that passes the number
// by value returns in microseconds.
TEST_CASE("a scalar op queues its kernel without waiting for the GPU", "[cuda][scalar]") {
  const Tensor a = randn({8192, 8192}, kCuda), x = randn({1024}, kCuda);
  cuda::synchronize();
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  Tensor p = matmul(a, a);
  cuda::synchronize();
  const double gemm_s = std::chrono::duration<double>(clock::now() - t0).count();
  REQUIRE(gemm_s > 2e-3);  // long enough to tell a wait from no wait
  {
    // Warm the caching allocator: later blocks of these sizes come from its free
    // lists (a first cudaMalloc may itself synchronize the device).
    Tensor warm = x * 0.5 + 1;
    p = matmul(a, a);
    cuda::synchronize();
  }
  for (int trial = 0; trial < 3; ++trial) {
    p = matmul(a, a);  // queued: returns at once
    t0 = clock::now();
    Tensor y = x * 0.5;
    Tensor z = y + 1;  // the same dtype: no conversion at all
    const double op_s = std::chrono::duration<double>(clock::now() - t0).count();
    // The "not ready" this may leave as the thread's last error must not fail the
    // next trial's launches (cuda::check_launch ignores it).
    const cudaError_t state = cudaStreamQuery(cuda::stream(0));
    INFO("gemm " << gemm_s << " s, scalar ops " << op_s << " s");
    CHECK(op_s < gemm_s / 4);
    CHECK(state == cudaErrorNotReady);  // the GEMM was still running: nobody waited for it
    cuda::synchronize();
    CHECK(diff(z, x.cpu() * 0.5 + 1, tol_for(kFloat32)) == "");
  }
}

TEST_CASE("ops on another GPU leave the current device as they found it", "[cuda][guard]") {
  const int n = cuda::device_count();
  cuda::set_device(0);
  const Tensor x_cpu = randn({64, 64});
  // One GPU: ops on cuda:0 keep cuda:0; with two, ops on cuda:1 keep cuda:0 current.
  const Device last(DeviceType::CUDA, n - 1);
  const Tensor x = x_cpu.to(last);
  const Tensor r = softmax(matmul(x, x) * 0.5 + 1, 1).sum({0});
  CHECK(cuda::current_device() == 0);
  CHECK(zeros({1}, Device("cuda")).device().str() == "cuda:0");
  CHECK(ones({2}).cuda().device().str() == "cuda:0");
  CHECK(diff(r.to(kCuda), softmax(matmul(x_cpu, x_cpu) * 0.5 + 1, 1).sum({0}), {1e-4, 1e-5}) == "");
  if (n < 2) {
    WARN("one GPU: the two-device half of this test needs a second GPU");
    return;
  }
  // Copies between the GPUs, with a dtype change, in both directions.
  const Tensor y = x.to(Device("cuda:0"), kFloat64);
  CHECK(cuda::current_device() == 0);
  CHECK(diff(y, x_cpu.to(kFloat64), {0, 0}) == "");
  cuda::set_device(1);
  const Tensor w = y.to(Device("cuda:1"), kFloat16) * 2;
  CHECK(cuda::current_device() == 1);
  CHECK(w.device().str() == "cuda:1");
  cuda::set_device(0);
}
