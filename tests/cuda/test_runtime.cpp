// The CUDA runtime as a user sees it (tensor/cuda.h): devices and the device guard,
// the caching allocator's reuse and statistics, OutOfMemoryError, transfers between
// host and device (every path of copy_, dtype conversion on the way, non_blocking,
// and round trips larger than the 16 MiB staging chunk), a second GPU where there is
// one (skipped with a warning on one), and printing.
#include <cstring>
#include <sstream>
#include <vector>

#include "cuda/both.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/pinned.h"
#include "kernels/cuda/runtime.h"
#include "tensor/cuda.h"

using namespace ember;
using cuda_test::Both;
using cuda_test::kCuda;
using Catch::Matchers::Message;
using Catch::Matchers::StartsWith;

TEST_CASE("devices: count, current device and the guard", "[cuda][runtime]") {
  REQUIRE(cuda::is_available());
  const int n = cuda::device_count();
  REQUIRE(n >= 1);
  CHECK(cuda::current_device() == 0);
  {
    cuda::DeviceGuard guard(n - 1);
    CHECK(cuda::current_device() == n - 1);
    // A bare "cuda" means the current device.
    CHECK(zeros({2}, Device("cuda")).device() == Device(DeviceType::CUDA, n - 1));
  }
  CHECK(cuda::current_device() == 0);
  { cuda::DeviceGuard none(-1); CHECK(cuda::current_device() == 0); }
  CHECK(zeros({2}, Device("cuda")).device().str() == "cuda:0");
  REQUIRE_THROWS_MATCHES(cuda::set_device(n), DeviceError,
                         Message("CUDA error: invalid device ordinal " + std::to_string(n) + " (" + std::to_string(n) +
                                 " devices)"));
  REQUIRE_THROWS_MATCHES(zeros({2}, Device(DeviceType::CUDA, n)), DeviceError,
                         Message("CUDA error: invalid device ordinal " + std::to_string(n) + " (" + std::to_string(n) +
                                 " devices)"));
  CHECK(cuda::current_device() == 0);
  cuda::synchronize();
  cuda::synchronize(0);
}

TEST_CASE("the caching allocator reuses freed blocks and keeps torch's statistics", "[cuda][runtime][allocator]") {
  cuda::synchronize();
  cuda::empty_cache();
  const size_t base = cuda::memory_allocated();
  // With the cache emptied, memory reserved is exactly what live blocks hold.
  CHECK(cuda::memory_reserved() == base);
  const size_t mallocs0 = cuda::memory_stats(0).num_mallocs;
  {
    Tensor a = empty({1000}, kCuda);  // 4000 bytes: a 4096-byte block (512-byte classes below 1 MiB)
    CHECK(cuda::memory_allocated() == base + 4096);
    CHECK(cuda::memory_stats(0).num_mallocs == mallocs0 + 1);
  }
  CHECK(cuda::memory_allocated() == base);
  CHECK(cuda::memory_reserved() == base + 4096);  // cached, not returned
  {
    Tensor b = empty({1000}, kCuda);  // the cached block again: no cudaMalloc
    CHECK(cuda::memory_stats(0).num_mallocs == mallocs0 + 1);
    CHECK(cuda::memory_allocated() == base + 4096);
    Tensor c = empty({900}, kCuda);   // 3600 bytes: a 4096-byte class too, and none is cached now
    CHECK(cuda::memory_stats(0).num_mallocs == mallocs0 + 2);
    CHECK(cuda::memory_allocated() == base + 8192);
  }
  // Large blocks round to 2 MiB: 3 MiB takes 4 MiB.
  cuda::reset_peak_memory_stats();
  CHECK(cuda::max_memory_allocated() == base);
  {
    Tensor big = empty({3 << 18}, kCuda);  // 3 MiB of float32
    CHECK(cuda::memory_allocated() == base + (size_t(4) << 20));
    Tensor small = empty({128}, kCuda);  // 512 bytes
    CHECK(cuda::max_memory_allocated() == base + (size_t(4) << 20) + 512);
  }
  CHECK(cuda::memory_allocated() == base);
  CHECK(cuda::max_memory_allocated() == base + (size_t(4) << 20) + 512);  // the peak stays after the free
  cuda::reset_peak_memory_stats();
  CHECK(cuda::max_memory_allocated() == base);
  // empty_cache returns every cached block.
  const size_t reserved = cuda::memory_reserved();
  CHECK(reserved >= base + (size_t(4) << 20) + 8192 + 512);
  cuda::empty_cache();
  CHECK(cuda::memory_reserved() == base);
  CHECK(cuda::memory_reserved() < reserved);
  // A zero-size tensor takes no memory at all.
  Tensor z = empty({0, 5}, kCuda);
  CHECK(cuda::memory_allocated() == base);
}

TEST_CASE("asking for more memory than the device has raises OutOfMemoryError", "[cuda][runtime][allocator]") {
  const size_t before = cuda::memory_allocated();
  const Shape one_pib{int64_t(1) << 48};  // 2^48 float32 = 1 PiB
  REQUIRE_THROWS_AS(empty(one_pib, kCuda), OutOfMemoryError);
  REQUIRE_THROWS_WITH(empty(one_pib, kCuda),
                      StartsWith("CUDA out of memory. Tried to allocate 1048576.00 GiB. GPU 0 has a total capacity of "));
  try {
    empty(one_pib, kCuda);
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Matchers::Contains(" is allocated by Ember, and "));
    CHECK_THAT(m, Catch::Matchers::EndsWith(" is reserved by Ember but unallocated."));
  }
  // The failure leaves the allocator and the device usable.
  CHECK(cuda::memory_allocated() == before);
  Tensor t = ones({1000}, kCuda);
  CHECK(t.sum().item<float>() == 1000.0f);
}

TEST_CASE("allocating until the device is full raises OutOfMemoryError; the cache then gives memory back",
          "[cuda][runtime][allocator]") {
  // Fill the device with 1 GiB blocks until an allocation fails (bounded by the
  // device's capacity), free half of them into the cache, then ask for a 2 GiB
  // block: no cached block fits it, so it succeeds only if the allocator returns
  // its cached blocks to the driver and retries.
  const size_t before = cuda::memory_allocated();
  const int64_t gib = int64_t(1) << 28;  // float32 elements in 1 GiB
  std::vector<Tensor> blocks;
  bool ran_out = false;
  for (int i = 0; i < 4096 && !ran_out; ++i) {
    try {
      blocks.push_back(empty({gib}, kCuda));
    } catch (const OutOfMemoryError& e) {
      ran_out = true;
      CHECK_THAT(std::string(e.what()), StartsWith("CUDA out of memory. Tried to allocate 1.00 GiB."));
    }
  }
  REQUIRE(ran_out);
  REQUIRE(blocks.size() >= 4);
  blocks.resize(blocks.size() / 2);
  const size_t reserved = cuda::memory_reserved();
  Tensor big = empty({2 * gib}, kCuda);
  big.fill_(1.0);
  CHECK(big.select(0, 0).item<float>() == 1.0f);
  CHECK(big.select(0, 2 * gib - 1).item<float>() == 1.0f);
  CHECK(cuda::memory_reserved() <= reserved);  // cached blocks went back to make room
  blocks.clear();
  big = Tensor();
  cuda::empty_cache();
  CHECK(cuda::memory_allocated() == before);
}

TEST_CASE("to(), cuda() and cpu() move tensors and keep values, dtype and shape", "[cuda][runtime][transfer]") {
  std::mt19937_64 rng(51);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool}) {
    INFO(ref::str(dt));
    const Tensor x = ref::make({3, 5}, dt, ref::random_values(15, dt, rng, -100, 100));
    for (const Tensor& g : {x.to(Device("cuda")), x.cuda(), x.to(Device("cuda:0")), x.to(kCuda, true)}) {
      cuda::synchronize();
      CHECK(g.device() == kCuda);
      CHECK(g.dtype() == dt);
      CHECK(g.shape() == x.shape());
      CHECK(g.is_contiguous());
      const Tensor back = g.cpu();
      CHECK(back.device() == kCPU);
      CHECK(ref::compare(back, ref::read(x), cuda_test::kExact) == "");
      CHECK(ref::compare(g.to(kCPU), ref::read(x), cuda_test::kExact) == "");
    }
    // Moving to where a tensor already is returns it, as PyTorch does.
    const Tensor g = x.cuda();
    CHECK(g.cuda().is_same(g));
    CHECK(g.to(kCuda).is_same(g));
    CHECK(x.cpu().is_same(x));
  }
  // 0-dim, empty and non-contiguous sources.
  const Tensor s = full({}, 3.5);
  CHECK(s.cuda().item<float>() == 3.5f);
  CHECK(s.cuda().dim() == 0);
  CHECK(zeros({0, 3}).cuda().shape() == Shape{0, 3});
  CHECK(zeros({0, 3}).cuda().cpu().shape() == Shape{0, 3});
  const Tensor t = arange(0, 24).reshape({2, 3, 4});
  const Tensor v = t.permute({2, 0, 1}).slice(0, 1, std::nullopt, 2);
  CHECK(ref::compare(v.cuda().cpu(), ref::read(v), cuda_test::kExact) == "");
  // A CUDA view moved to the host.
  const Tensor tg = t.cuda();
  CHECK(ref::compare(tg.permute({2, 0, 1}).slice(0, 1, std::nullopt, 2).cpu(), ref::read(v), cuda_test::kExact) == "");
  CHECK(ref::compare(tg.select(1, 2).cpu(), ref::read(t.select(1, 2)), cuda_test::kExact) == "");
  CHECK(ref::compare(tg[1][2].cpu(), ref::read(t[1][2]), cuda_test::kExact) == "");
  CHECK(tg[1][2][3].item<int64_t>() == 23);
}

TEST_CASE("copy_ across devices: strided sources and destinations, dtype conversion, broadcast", "[cuda][runtime][transfer]") {
  std::mt19937_64 rng(52);
  const Tensor src = ref::make({6, 8}, kFloat64, ref::random_values(48, kFloat64, rng, -50, 50));
  for (bool src_on_gpu : {false, true})
    for (bool dst_on_gpu : {false, true})
      for (DType dst_dt : {kFloat64, kFloat32, kFloat16, kInt32, kBool})
        for (int form = 0; form < 4; ++form) {
          INFO("source on " << (src_on_gpu ? "cuda" : "cpu") << ", destination on " << (dst_on_gpu ? "cuda" : "cpu")
                            << " " << ref::str(dst_dt) << ", form " << form);
          // form 0: contiguous to contiguous; 1: transposed source; 2: into a stepped
          // slice of a larger destination; 3: a broadcast [1, 8] row into [6, 8].
          const Tensor s_cpu = form == 1 ? src.t().contiguous().t() : form == 3 ? src.narrow(0, 2, 1) : src;
          const Tensor s = src_on_gpu ? (form == 1 ? src.t().contiguous().cuda().t() : s_cpu.cuda()) : s_cpu;
          if (form == 1) CHECK_FALSE(s.is_contiguous());
          const Tensor dbase_cpu = ref::make({12, 8}, dst_dt, ref::random_values(96, dst_dt, rng, -3, 3));
          Tensor dbase = dst_on_gpu ? dbase_cpu.cuda() : dbase_cpu.clone();
          Tensor d = form == 2 ? dbase.slice(0, 0, std::nullopt, 2) : dbase.narrow(0, 3, 6);
          d.copy_(s);
          // The expected result: the CPU's own copy_ into the same CPU layout.
          Tensor expected_base = dbase_cpu.clone();
          Tensor expected_view = form == 2 ? expected_base.slice(0, 0, std::nullopt, 2) : expected_base.narrow(0, 3, 6);
          expected_view.copy_(s_cpu);
          CHECK(d.device() == (dst_on_gpu ? kCuda : kCPU));
          CHECK(ref::compare(dbase.cpu(), ref::read(expected_base), cuda_test::kExact) == "");
        }
}

TEST_CASE("non_blocking transfers are complete after synchronize", "[cuda][runtime][transfer]") {
  std::mt19937_64 rng(53);
  const Tensor x = ref::make({1 << 20}, kFloat32, ref::random_values(1 << 20, kFloat32, rng, -1, 1));
  Tensor g = x.to(kCuda, /*non_blocking=*/true);
  // Work queued after the copy on the same stream sees the data.
  const Tensor doubled = g * 2;
  cuda::synchronize();
  CHECK(ref::compare(g.cpu(), ref::read(x), cuda_test::kExact) == "");
  CHECK(ref::compare(doubled.cpu(), ref::read(x * 2), cuda_test::kExact) == "");
  // Device to host with non_blocking still holds the data on return (into pageable memory).
  Tensor h = zeros({1 << 20});
  h.copy_(doubled, /*non_blocking=*/true);
  cuda::synchronize();
  CHECK(ref::compare(h, ref::read(x * 2), cuda_test::kExact) == "");
  // The host source may be changed as soon as a non-blocking copy returns.
  Tensor src = x.clone();
  Tensor dst = empty({1 << 20}, kCuda);
  dst.copy_(src, true);
  src.fill_(0);
  cuda::synchronize();
  CHECK(ref::compare(dst.cpu(), ref::read(x), cuda_test::kExact) == "");
}

TEST_CASE("large transfers crossing the 16 MiB staging chunk are bit-exact", "[cuda][runtime][transfer]") {
  // 64 MiB exactly, and 64 MiB plus 12 bytes (a short last chunk), of random bits.
  for (int64_t n : {int64_t(16) << 20, (int64_t(16) << 20) + 3}) {
    INFO(n << " float32 elements");
    manual_seed(5);
    const Tensor bits = (rand({n}, kFloat64) * 4294967295.0).to(kInt64);
    const Tensor x = bits.to(kInt32);  // wraps: every 32-bit pattern may occur
    for (bool nb : {false, true}) {
      Tensor g = x.to(kCuda, nb);
      const Tensor back = g.cpu();
      REQUIRE(back.numel() == n);
      CHECK(std::memcmp(back.data_ptr(), x.data_ptr(), static_cast<size_t>(n) * 4) == 0);
      // And through copy_ into an existing device tensor and back into an existing host one.
      Tensor d = empty({n}, {kInt32, kCuda});
      d.copy_(x, nb);
      Tensor h = empty({n}, kInt32);
      h.copy_(d, nb);
      cuda::synchronize();
      CHECK(std::memcmp(h.data_ptr(), x.data_ptr(), static_cast<size_t>(n) * 4) == 0);
    }
  }
}

TEST_CASE("the pinned staging cache trims itself once back-to-back copies are done", "[cuda][runtime][transfer]") {
  // 24 non-blocking copies of 32 MiB queued behind long GPU work (float64 GEMMs of
  // 8192^3, about 17 ms each on an H200): none can finish, so each takes two new
  // 16 MiB staging buffers and the cache grows past its 256 MiB limit. Once they are
  // done, the next copy's release trims it back to the limit. Every destination
  // still holds its data. Queuing the copies costs the host a second or more
  // (cudaHostAlloc pins each new buffer page by page), so the GEMMs queue about 3 s
  // of work, and an event recorded after them says whether they were still running
  // when the last copy was queued (the stream alone would also be busy with copies).
  const int64_t n = int64_t(8) << 20;  // float32: 32 MiB
  std::vector<Tensor> srcs;
  for (int i = 0; i < 24; ++i) srcs.push_back(full({n}, float(i)));
  const Tensor a = ones({8192, 8192}, {kFloat64, kCuda});
  cuda::synchronize();
  Tensor busy;
  for (int i = 0; i < 180; ++i) busy = matmul(a, a);
  cudaEvent_t gemms_done = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&gemms_done, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(gemms_done, cuda::stream(0)) == cudaSuccess);
  std::vector<Tensor> dsts;
  for (const Tensor& s : srcs) dsts.push_back(s.to(kCuda, /*non_blocking=*/true));
  const bool still_busy = cudaEventQuery(gemms_done) == cudaErrorNotReady;
  cudaGetLastError();
  cudaEventDestroy(gemms_done);
  const size_t grown = cuda::pinned_cached_bytes();
  INFO("cached " << grown << " bytes with the copies queued");
  if (still_busy) CHECK(grown >= (size_t(24 * 32) << 20));
  else WARN("the GPU finished its queued GEMMs before the copies were queued: the growth is not checked");
  cuda::synchronize();
  Tensor last = srcs[0].to(kCuda, /*non_blocking=*/true);
  cuda::synchronize();
  INFO("cached " << cuda::pinned_cached_bytes() << " bytes after the copies");
  CHECK(cuda::pinned_cached_bytes() <= (size_t(256) << 20));
  CHECK(cuda::pinned_in_use() == 0);
  for (int i = 0; i < 24; ++i) {
    const Tensor back = dsts[size_t(i)].cpu();
    CHECK(back.min().item<float>() == float(i));
    CHECK(back.max().item<float>() == float(i));
  }
}

TEST_CASE("a second GPU: transfers, ops, cuBLAS and cuDNN on cuda:1", "[cuda][runtime][multi-gpu]") {
  // Per-device state (streams, allocator pools, cuBLAS and cuDNN handles) and peer
  // copies only show with two devices; with one there is nothing to check.
  if (cuda::device_count() < 2) {
    WARN("only one CUDA device: the two-GPU checks are skipped");
    return;
  }
  const Device d1(DeviceType::CUDA, 1);
  std::mt19937_64 rng(55);
  const Tensor a = ref::make({64, 48}, kFloat32, ref::random_values(64 * 48, kFloat32, rng, -1, 1));
  const Tensor b = ref::make({48, 40}, kFloat32, ref::random_values(48 * 40, kFloat32, rng, -1, 1));
  // Transfers: host to cuda:1, cuda:0 to cuda:1 (peer) and back, and into a strided
  // destination on cuda:1; all bit-exact.
  const Tensor a1 = a.to(d1), a0 = a.cuda();
  CHECK(a1.device() == d1);
  CHECK(ref::compare(a1.cpu(), ref::read(a), cuda_test::kExact) == "");
  const Tensor a01 = a0.to(d1);
  CHECK(a01.device() == d1);
  CHECK(ref::compare(a01.to(kCuda).cpu(), ref::read(a), cuda_test::kExact) == "");
  Tensor dst = zeros({48, 64}, {kFloat32, d1}).t();
  dst.copy_(a0);
  CHECK(ref::compare(dst.cpu(), ref::read(a), cuda_test::kExact) == "");
  const size_t on1 = cuda::memory_allocated(1);
  CHECK(on1 >= size_t(3 * 64 * 48 * 4));  // a1, a01 and dst live on cuda:1
  // Ops run where their operands live, and leave the current device as it was.
  const Tensor e = a1 * 2 + a1.exp();
  CHECK(e.device() == d1);
  CHECK_SAME(e, a * 2 + a.exp(), cuda_test::tol_for(kFloat32));
  const Tensor b1 = b.to(d1);
  const Tensor p = matmul(a1, b1);  // cuBLAS, with device 1's handle
  CHECK(p.device() == d1);
  const Tensor want = matmul(a.to(kFloat64), b.to(kFloat64)).to(kFloat32);
  CHECK(cuda_test::diff_within(p, want, cuda_test::allowance(want, cuda_test::tol_for(kFloat32), 1e-5,
                                                             matmul(a.abs(), b.abs()))) == "");
  const Tensor x = ref::make({2, 3, 9, 9}, kFloat32, ref::random_values(2 * 3 * 81, kFloat32, rng, -1, 1));
  const Tensor w = ref::make({4, 3, 3, 3}, kFloat32, ref::random_values(4 * 27, kFloat32, rng, -1, 1));
  const Tensor bias = ref::make({4}, kFloat32, ref::random_values(4, kFloat32, rng, -1, 1));
  const Tensor y = conv2d(x.to(d1), w.to(d1), bias.to(d1));  // cuDNN (or native), on device 1
  CHECK(y.device() == d1);
  const Tensor y_want = conv2d(x.to(kFloat64), w.to(kFloat64), bias.to(kFloat64)).to(kFloat32);
  CHECK(cuda_test::diff_within(y, y_want, cuda_test::allowance(y_want, cuda_test::tol_for(kFloat32), 1e-5,
                                                               conv2d(x.abs(), w.abs(), bias.abs()))) == "");
  CHECK(cuda::current_device() == 0);
  cuda::synchronize(1);
  // Two GPUs are two devices: mixing them is the usual DeviceError.
  REQUIRE_THROWS_MATCHES(a0 + a1, DeviceError, Message("expected device cuda:0 but got device cuda:1"));
  REQUIRE_THROWS_MATCHES(a1 + a0, DeviceError, Message("expected device cuda:1 but got device cuda:0"));
}

TEST_CASE("CUDA tensors print as PyTorch prints them", "[cuda][runtime][print]") {
  CHECK(tensor({1.0f, 2.0f}).cuda().str() == "tensor([1., 2.], device='cuda:0')");
  CHECK(arange(3).cuda().str() == "tensor([0, 1, 2], device='cuda:0')");
  CHECK(tensor({1.5f, 2.0f}).to(kCuda, kFloat16).str() == "tensor([1.5000, 2.0000], device='cuda:0', dtype=ember.float16)");
  CHECK(tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}).cuda().str() == "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')");
  CHECK(full({}, 3.0).cuda().str() == "tensor(3., device='cuda:0')");
  CHECK(zeros({0}).cuda().str() == "tensor([], device='cuda:0')");
  CHECK(zeros({2, 0}).cuda().str() == "tensor([], device='cuda:0', size=(2, 0))");
  CHECK(zeros({2}, {kBool, kCuda}).str() == "tensor([False, False], device='cuda:0')");
  // Ember prints no autograd state (PyTorch adds requires_grad=True or grad_fn=...).
  Tensor r = ones({2}, kCuda);
  r.requires_grad_();
  CHECK(r.str() == "tensor([1., 1.], device='cuda:0')");
  std::ostringstream os;
  os << tensor({1.0f, 2.0f}).cuda();
  CHECK(os.str() == "tensor([1., 2.], device='cuda:0')");
  // Any tensor prints as on the CPU with the device added first among the suffixes.
  // Values within +-10 keep the last line short enough that the suffixes stay on it
  // (past 80 columns the dtype suffix wraps to a new line, as in PyTorch).
  std::mt19937_64 rng(54);
  for (DType dt : {kFloat32, kFloat64, kInt64, kFloat16}) {
    const Tensor x = ref::make({4, 3}, dt, ref::random_values(12, dt, rng, -10, 10));
    std::string want = x.str();
    want.insert(want.rfind(']') + 1, ", device='cuda:0'");
    CHECK(x.cuda().str() == want);
  }
}
