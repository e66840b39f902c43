// The NCCL backend with world size 1 (one process, one GPU): every collective for
// every dtype against hand-computed results (with one rank: sum, max and avg leave
// the tensor as it is, broadcast too, all_gather stacks one row), the device
// errors, DDP on one GPU equal to the plain module, and the pinned staging of the
// copies NCCL's tensors arrive by giving its buffers back when a copy fails midway.
// Exits 77 (skipped) without a GPU. Built only with NCCL.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "ember_config.h"

#if EMBER_HAVE_NCCL
#include <cmath>

#include "dist/dist.h"
#include "kernels/cuda/pinned.h"
#include "kernels/cuda/runtime.h"
#include "nn/nn.h"
#include "support/reference.h"
#include "tensor/cuda.h"

using namespace ember;
namespace dist = ember::dist;

namespace {

const DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool};

Tensor make_host(int64_t n, DType dt) {
  Tensor t = empty({n}, {dt});
  for (int64_t i = 0; i < n; ++i)
    ref::store(static_cast<char*>(t.data_ptr()) + i * dtype_size(dt), dt,
               dt == kBool ? (i % 3 == 0) : (i % 7) + 0.5 * (i % 2) * is_floating(dt));
  return t;
}

std::vector<double> read(const Tensor& t) {
  Tensor h = t.cpu();
  std::vector<double> out(static_cast<size_t>(h.numel()));
  for (int64_t i = 0; i < h.numel(); ++i)
    out[i] = ref::load(static_cast<const char*>(h.data_ptr()) + i * dtype_size(h.dtype()), h.dtype());
  return out;
}

}  // namespace

TEST_CASE("nccl collectives with world size 1, every dtype", "[dist][nccl]") {
  auto& g = dist::default_group();
  REQUIRE(g.backend() == dist::Backend::NCCL);
  REQUIRE(g.size() == 1);
  const Device dev(DeviceType::CUDA, 0);
  for (DType dt : kAllDTypes) {
    CAPTURE(dtype_name(dt));
    const Tensor host = make_host(33, dt);
    const auto want = read(host);
    std::vector<dist::ReduceOp> ops{dist::ReduceOp::Sum, dist::ReduceOp::Max};
    if (is_floating(dt)) ops.push_back(dist::ReduceOp::Avg);
    for (auto op : ops) {
      Tensor t = host.to(dev);
      g.all_reduce(t, op);
      REQUIRE(read(t) == want);
    }
    Tensor b = host.to(dev);
    g.broadcast(b, 0);
    REQUIRE(read(b) == want);
    Tensor all = g.all_gather(host.to(dev));
    REQUIRE(all.shape() == Shape{1, 33});
    REQUIRE(read(all) == want);
  }
  g.barrier();
  REQUIRE_THROWS_MATCHES(g.all_reduce(ones({2})), DistError,
                         Catch::Message("all_reduce: the nccl backend takes CUDA tensors but got a tensor on cpu"));
}

TEST_CASE("DDP on one GPU with NCCL equals the plain module", "[dist][nccl][ddp]") {
  const Device dev(DeviceType::CUDA, 0);
  auto make = [&] {
    manual_seed(1);
    auto m = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 4)});
    m->to(dev);
    return m;
  };
  auto local = make(), reference = make();
  auto ddp = std::make_shared<dist::DistributedDataParallel>(local, dist::DDPOptions{.bucket_cap_mb = 1e-6});
  nn::optim::SGD opt(ddp->parameters(), 0.1), ref_opt(reference->parameters(), 0.1);
  for (int s = 0; s < 5; ++s) {
    manual_seed(100 + s);
    Tensor x = randn({16, 8}).to(dev);
    Tensor y = (rand({16}) * 4).to(kInt64).clamp(0, 3).to(dev);
    opt.zero_grad();
    ref_opt.zero_grad();
    nn::functional::cross_entropy((*ddp)(x), y).backward();
    nn::functional::cross_entropy((*reference)(x), y).backward();
    opt.step();
    ref_opt.step();
  }
  const auto a = local->named_parameters(), b = reference->named_parameters();
  for (size_t k = 0; k < a.size(); ++k) {
    const auto va = a[k].second.to_vector<float>(), vb = b[k].second.to_vector<float>();
    for (size_t i = 0; i < va.size(); ++i) REQUIRE(std::abs(va[i] - vb[i]) <= 1e-6 * (1 + std::abs(vb[i])));
  }
}

TEST_CASE("a copy that fails midway gives its pinned staging back", "[dist][nccl][pinned]") {
  // 40 MB: three 16 MB chunks through two staging buffers, both taken (with their
  // events) before the first chunk moves. A null device pointer makes that first
  // cudaMemcpyAsync fail at once (cudaErrorInvalidValue, not sticky).
  std::vector<char> host(size_t(40) << 20, 1);
  cudaStream_t stream = cuda::stream(0);
  const size_t before = cuda::pinned_in_use();
  REQUIRE_THROWS_AS(cuda::host_to_device(nullptr, host.data(), host.size(), stream, false), CudaError);
  REQUIRE(cuda::pinned_in_use() == before);
  REQUIRE_THROWS_AS(cuda::device_to_host(host.data(), nullptr, host.size(), stream), CudaError);
  REQUIRE(cuda::pinned_in_use() == before);
  // The device and the cache still work: a large tensor makes the round trip.
  const Tensor t = arange(0, 12 << 20, 1, {kFloat32});
  const Tensor back = t.to(Device(DeviceType::CUDA, 0)).cpu();
  REQUIRE(back.to_vector<float>() == t.to_vector<float>());
  REQUIRE(cuda::pinned_in_use() == before);
}

int main(int argc, char** argv) {
  if (!ember::cuda::is_available()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  dist::init_process_group(dist::Backend::NCCL);
  const int rc = Catch::Session().run(argc, argv);
  dist::destroy_process_group();
  return rc;
}

#else
int main() { return 77; }  // built without NCCL
#endif
