// take, index_select and embedding on CUDA against the CPU: forward for every dtype
// (a copy, so exact), non-contiguous inputs, repeated and negative indices, int32
// and int64 indices; the scatter-add backward (the same summation order on both
// devices); and the CPU's errors for out-of-range indices and mixed devices.
#include "cuda/both.h"

using namespace ember;
using cuda_test::Both;
using cuda_test::kCuda;
using ref::Layout;

namespace {

struct Case {
  Shape shape;
  Layout layout;
  int64_t dim;
  std::vector<int64_t> index;
  Shape index_shape;
};

const std::vector<Case> kCases = {
    {{7}, Layout::contiguous, 0, {6, 0, -1, 2, 2}, {5}},
    {{4, 3}, Layout::transposed, 1, {2, 0, -3, 1}, {2, 2}},
    {{2, 3, 5}, Layout::permuted, 1, {2}, {}},
    {{3, 4, 2}, Layout::sliced, 2, {1, 1, 0}, {3}},
    {{300, 64}, Layout::contiguous, 0, {}, {0}},
    {{3, 0, 2}, Layout::contiguous, 0, {2, 0}, {2}},
};

Tensor index_tensor(const std::vector<int64_t>& v, const Shape& shape, DType dt) {
  return ref::make(shape, dt, std::vector<double>(v.begin(), v.end()));
}

}  // namespace

TEST_CASE("take on CUDA matches the CPU for every dtype and layout", "[cuda][take]") {
  std::mt19937_64 rng(4201);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool})
    for (const Case& c : kCases)
      for (DType it : {kInt64, kInt32}) {
        INFO(ref::str(dt) << ref::str(c.shape) << " dim " << c.dim << " index " << ref::str(c.index_shape));
        const Both x = cuda_test::random_both(c.shape, dt, c.layout, rng, -8, 8);
        const Both idx = cuda_test::both_of(index_tensor(c.index, c.index_shape, it));
        CHECK_SAME(take(x.gpu, c.dim, idx.gpu), take(x.cpu, c.dim, idx.cpu), cuda_test::kExact);
      }
}

TEST_CASE("take's backward on CUDA matches the CPU (repeats summed in the same order)", "[cuda][take]") {
  std::mt19937_64 rng(4202);
  // A large table read at few rows many times (as an embedding is), and a small one.
  std::vector<int64_t> many(2000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int64_t>((i * 7919) % 13);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const auto& [shape, index] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{50, 96}, many}, {{4, 3}, {3, 3, 0, 3}}}) {
      INFO(ref::str(dt) << ref::str(shape));
      Both w = cuda_test::random_both(shape, dt, Layout::contiguous, rng, -1, 1);
      w.cpu.requires_grad_();
      w.gpu.requires_grad_();
      const Both idx = cuda_test::both_of(index_tensor(index, {static_cast<int64_t>(index.size())}, kInt64));
      const Both g = cuda_test::random_both({static_cast<int64_t>(index.size()), shape[1]}, dt, Layout::contiguous,
                                            rng, -1, 1);
      embedding(w.cpu, idx.cpu).backward(g.cpu);
      embedding(w.gpu, idx.gpu).backward(g.gpu);
      CHECK_SAME(w.gpu.grad(), w.cpu.grad(), cuda_test::kExact);
    }
}

TEST_CASE("take on CUDA raises the CPU's errors", "[cuda][take][errors]") {
  const Both x = cuda_test::both_of(zeros({3, 4}));
  for (const auto& v : std::vector<std::vector<int64_t>>{{0, 3}, {-4}, {5}}) {
    const Both idx = cuda_test::both_of(tensor(v));
    cuda_test::same_outcome(cuda_test::run([&] { return std::vector<Tensor>{take(x.cpu, 0, idx.cpu)}; }),
                            cuda_test::run([&] { return std::vector<Tensor>{take(x.gpu, 0, idx.gpu)}; }));
    cuda_test::same_outcome(cuda_test::run([&] { return std::vector<Tensor>{index_select(x.cpu, 1, idx.cpu)}; }),
                            cuda_test::run([&] { return std::vector<Tensor>{index_select(x.gpu, 1, idx.gpu)}; }));
  }
  CHECK_THROWS_MATCHES(take(x.gpu, 0, tensor(std::vector<int64_t>{0})), DeviceError,
                       Catch::Message("expected device cuda:0 but got device cpu"));
}
