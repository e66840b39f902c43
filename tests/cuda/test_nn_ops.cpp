// The layer ops on CUDA against the CPU, through the public front-ends and autograd:
// matmul (1-D, 2-D, batched, broadcast, transposed operands, k = 0), conv2d forward
// and backward (stride, padding, dilation, groups), max and average pooling forward
// and backward (padding, ceil_mode), cross_entropy and nll_loss forward and backward
// (ignore_index, bad targets), dropout, and the fused SGD and Adam/AdamW steps over
// several steps, and gradcheck (finite differences in float64) of layer ops on CUDA
// inputs. Sums of products are compared with an allowance proportional to the
// sum of the absolute values of the terms (docs/numerics.md, "CUDA against CPU").
#include <algorithm>
#include <cmath>

#include "autograd/gradcheck.h"
#include "cuda/both.h"
#include "nn/nn.h"

using namespace ember;
using cuda_test::Both;
using cuda_test::kCuda;
using ref::Layout;
namespace F = ember::nn::functional;

namespace {

Tensor pick(const Both& b, bool gpu) { return gpu ? b.gpu : b.cpu; }

// Allowed error per unit of |terms| for a sum of products in dtype dt: float64
// accumulates in float64; float32 in float32 (never TF32); the half types multiply
// exactly and accumulate in float32, but cuDNN and the CPU round intermediate
// results differently, so they get a fraction of their own unit in the last place.
double product_k(DType dt) {
  switch (dt) {
    case DType::Float64: return 1e-13;
    case DType::Float32: return 1e-5;
    case DType::Float16: return 1e-3;
    case DType::BFloat16: return 8e-3;
    default: return 0;
  }
}

std::string within(const Tensor& gpu, const Tensor& cpu, const Tensor& magnitude) {
  return cuda_test::diff_within(
      gpu, cpu, cuda_test::allowance(cpu, cuda_test::tol_for(cpu.dtype()), product_k(cpu.dtype()), magnitude));
}

Tensor abs64(const Tensor& t) { return t.detach().to(kFloat64).abs(); }

// n different values that dtype dt holds exactly, shuffled: for the half types the
// consecutive representable numbers from 1.0 up (n <= 16384), else a ramp in [-1, 1).
std::vector<double> distinct_values(int64_t n, DType dt, std::mt19937_64& rng) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    if (is_half(dt)) {
      const uint16_t bits = static_cast<uint16_t>((dt == kFloat16 ? 0x3C00 : 0x3F80) + i);
      v[i] = ref::load(&bits, dt);
    } else {
      v[i] = 2.0 * static_cast<double>(i) / static_cast<double>(n) - 1.0;
    }
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// A leaf that requires grad on each device, from the same values.
Both leaf(const Shape& shape, DType dt, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  Both b = cuda_test::random_both(shape, dt, Layout::contiguous, rng, lo, hi);
  b.cpu.requires_grad_();
  b.gpu.requires_grad_();
  return b;
}

}  // namespace

// ------------------------------------------------------------------ matmul ----

TEST_CASE("matmul on CUDA matches the CPU", "[cuda][nn_ops][matmul]") {
  struct Case {
    Shape a, b;
    bool ta = false, tb = false;  // operand given as the transpose of a contiguous tensor
  };
  const std::vector<Case> cases = {
      {{5}, {5}},           {{5}, {5, 3}},          {{4, 5}, {5}},          {{4, 5}, {5, 3}},
      {{1, 1}, {1, 1}},     {{17, 65}, {65, 33}},   {{3, 0}, {0, 4}},       {{0, 5}, {5, 2}},
      {{2, 4, 5}, {2, 5, 3}}, {{2, 1, 4, 5}, {3, 5, 6}}, {{3, 4, 5}, {5, 2}}, {{5}, {2, 5, 3}},
      {{4, 5}, {5, 3}, true, false}, {{4, 5}, {5, 3}, false, true}, {{33, 129}, {129, 65}, true, true},
      {{2, 7, 9}, {2, 9, 4}, true, true}, {{130, 257}, {257, 129}},
  };
  std::mt19937_64 rng(31);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8, kUInt8})
    for (const Case& c : cases) {
      const Layout la = c.ta ? Layout::transposed : Layout::contiguous;
      const Layout lb = c.tb ? Layout::transposed : Layout::contiguous;
      const Both a = cuda_test::random_both(c.a, dt, la, rng, -1, 1), b = cuda_test::random_both(c.b, dt, lb, rng, -1, 1);
      INFO("matmul(" << cuda_test::describe(a.cpu) << ", " << cuda_test::describe(b.cpu) << ")");
      const cuda_test::Outcome oc = cuda_test::run([&] { return std::vector<Tensor>{matmul(a.cpu, b.cpu)}; });
      const cuda_test::Outcome og = cuda_test::run([&] { return std::vector<Tensor>{matmul(a.gpu, b.gpu)}; });
      if (!cuda_test::same_outcome(oc, og)) continue;
      if (!is_floating(dt)) {
        CHECK_SAME(og.results[0], oc.results[0], cuda_test::kExact);  // integers wrap the same way
        continue;
      }
      CHECK(within(og.results[0], oc.results[0], matmul(abs64(a.cpu), abs64(b.cpu))) == "");
    }
  // Mismatched inner sizes raise the same error on both devices.
  const Both a = cuda_test::random_both({2, 3}, kFloat32, Layout::contiguous, rng, -1, 1);
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{matmul(pick(a, gpu), pick(a, gpu))}; });
}

TEST_CASE("matmul's gradients on CUDA match the CPU", "[cuda][nn_ops][matmul]") {
  std::mt19937_64 rng(32);
  for (DType dt : {kFloat32, kFloat64}) {
    const Both a = leaf({3, 17, 33}, dt, rng), b = leaf({33, 9}, dt, rng);
    const Both gy = cuda_test::random_both({3, 17, 9}, dt, Layout::contiguous, rng, -1, 1);
    for (bool gpu : {false, true}) (matmul(pick(a, gpu), pick(b, gpu)) * pick(gy, gpu)).sum().backward();
    CHECK(within(a.gpu.grad(), a.cpu.grad(), matmul(abs64(gy.cpu), abs64(b.cpu).t())) == "");
    CHECK(within(b.gpu.grad(), b.cpu.grad(),
                 matmul(abs64(a.cpu).transpose(1, 2), abs64(gy.cpu)).sum({0})) == "");
  }
}

// ------------------------------------------------------------------ conv2d ----

TEST_CASE("conv2d forward and backward on CUDA match the CPU", "[cuda][nn_ops][conv2d]") {
  struct Case {
    Shape x, w;
    Pair stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 4, 9, 11}, {6, 4, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {{2, 4, 9, 11}, {6, 4, 3, 3}, {2, 1}, {1, 2}, {1, 1}, 1, true},
      {{2, 4, 9, 11}, {6, 4, 3, 2}, {1, 2}, {2, 1}, {2, 1}, 1, false},
      {{2, 6, 8, 8}, {9, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3, true},   // groups
      {{1, 8, 7, 7}, {8, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 8, true},   // depthwise
      {{3, 5, 6, 6}, {7, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},   // 1x1
      {{4, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true}, // the seed network's conv1
      {{2, 6, 12, 12}, {12, 6, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true},// and conv2
      {{1, 3, 5, 5}, {2, 3, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true},   // 1x1 output
      {{2, 64, 14, 14}, {32, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},  // long sums (576 terms)
  };
  std::mt19937_64 rng(33);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases) {
      const Both x = leaf(c.x, dt, rng), w = leaf(c.w, dt, rng), b = leaf({c.w[0]}, dt, rng);
      INFO(ref::str(dt) << " x" << ref::str(c.x) << " w" << ref::str(c.w) << " stride " << c.stride[0] << ","
                        << c.stride[1] << " pad " << c.padding[0] << "," << c.padding[1] << " dil " << c.dilation[0]
                        << "," << c.dilation[1] << " groups " << c.groups);
      Tensor y[2];
      Both gy;
      for (bool gpu : {false, true}) {
        y[gpu] = conv2d(pick(x, gpu), pick(w, gpu), c.bias ? pick(b, gpu) : Tensor(), c.stride, c.padding,
                        c.dilation, c.groups);
        if (!gpu) gy = cuda_test::random_both(y[0].shape(), dt, Layout::contiguous, rng, -1, 1);
        (y[gpu] * pick(gy, gpu)).sum().backward();
      }
      const Tensor b64 = c.bias ? abs64(b.cpu.detach()) : Tensor();
      CHECK(within(y[1], y[0], conv2d(abs64(x.cpu.detach()), abs64(w.cpu.detach()), b64, c.stride, c.padding,
                                      c.dilation, c.groups)) == "");
      CHECK(within(x.gpu.grad(), x.cpu.grad(),
                   conv2d_backward_input(abs64(gy.cpu), abs64(w.cpu.detach()), c.x, c.stride, c.padding,
                                         c.dilation, c.groups)) == "");
      auto [gw, gb] = conv2d_backward_weight(abs64(gy.cpu), abs64(x.cpu.detach()), c.w, c.stride, c.padding,
                                             c.dilation, c.groups, true);
      CHECK(within(w.gpu.grad(), w.cpu.grad(), gw) == "");
      if (c.bias) CHECK(within(b.gpu.grad(), b.cpu.grad(), gb) == "");
    }
}

TEST_CASE("conv2d argument errors and empty batches on CUDA are the CPU's", "[cuda][nn_ops][conv2d]") {
  std::mt19937_64 rng(34);
  const Both x = cuda_test::random_both({1, 3, 4, 4}, kFloat32, Layout::contiguous, rng, -1, 1);
  const Both w = cuda_test::random_both({2, 3, 5, 5}, kFloat32, Layout::contiguous, rng, -1, 1);
  const Both w3 = cuda_test::random_both({2, 3, 3, 3}, kFloat32, Layout::contiguous, rng, -1, 1);
  const Both e = cuda_test::random_both({0, 3, 4, 4}, kFloat32, Layout::contiguous, rng, -1, 1);
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{conv2d(pick(x, gpu), pick(w, gpu), Tensor())}; });
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{conv2d(pick(e, gpu), pick(w3, gpu), Tensor())}; });
  // Non-contiguous input (a channel slice).
  const Both wide = cuda_test::random_both({2, 6, 7, 7}, kFloat32, Layout::contiguous, rng, -1, 1);
  cuda_test::check_op([&](bool gpu) {
    return std::vector<Tensor>{conv2d(pick(wide, gpu).slice(1, 0, std::nullopt, 2), pick(w3, gpu), Tensor())};
  });
}

// ------------------------------------------------------------------ pooling ----

TEST_CASE("max and average pooling forward and backward on CUDA match the CPU", "[cuda][nn_ops][pool]") {
  struct Case {
    Shape x;
    Pair kernel, stride, padding, dilation;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},   {{2, 3, 9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{1, 2, 10, 9}, {3, 2}, {1, 2}, {1, 0}, {2, 1}, false},  {{1, 2, 5, 5}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {{3, 1, 7, 6}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, true},    {{1, 4, 6, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, false},
      {{2, 4, 32, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false}, {{0, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
  };
  std::mt19937_64 rng(35);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases) {
      INFO(ref::str(dt) << " x" << ref::str(c.x) << " kernel " << c.kernel[0] << "," << c.kernel[1] << " stride "
                        << c.stride[0] << "," << c.stride[1] << " pad " << c.padding[0] << "," << c.padding[1]
                        << " dil " << c.dilation[0] << "," << c.dilation[1] << " ceil " << c.ceil_mode);
      // Distinct values (a shuffled ramp every dtype holds exactly): the maximum of
      // each window is unique, so the indices must agree.
      Both x = cuda_test::both_of(ref::make(c.x, dt, distinct_values(ref::numel(c.x), dt, rng)));
      x.cpu.requires_grad_();
      x.gpu.requires_grad_();
      Tensor y[2], idx[2];
      Both gy;
      for (bool gpu : {false, true}) {
        std::tie(y[gpu], idx[gpu]) =
            max_pool2d_with_indices(pick(x, gpu), c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
        if (!gpu) gy = cuda_test::random_both(y[0].shape(), dt, Layout::contiguous, rng, -1, 1);
        (y[gpu] * pick(gy, gpu)).sum().backward();
      }
      CHECK_SAME(y[1], y[0], cuda_test::kExact);
      CHECK_SAME(idx[1], idx[0], cuda_test::kExact);
      CHECK(within(x.gpu.grad(), x.cpu.grad(), max_pool2d_backward(abs64(gy.cpu), idx[0], c.x)) == "");

      // Average pooling has no dilation; each padding mode and a divisor override.
      if (c.dilation != Pair{1, 1}) continue;
      for (int mode = 0; mode < 3; ++mode) {
        const bool include_pad = mode != 1;
        const int64_t divisor = mode == 2 ? 5 : 0;
        INFO("avg_pool2d count_include_pad " << include_pad << " divisor_override " << divisor);
        Both xa = cuda_test::random_both(c.x, dt, Layout::contiguous, rng, -1, 1);
        xa.cpu.requires_grad_();
        xa.gpu.requires_grad_();
        Tensor ya[2];
        Both ga;
        for (bool gpu : {false, true}) {
          ya[gpu] = avg_pool2d(pick(xa, gpu), c.kernel, c.stride, c.padding, c.ceil_mode, include_pad, divisor);
          if (!gpu) ga = cuda_test::random_both(ya[0].shape(), dt, Layout::contiguous, rng, -1, 1);
          (ya[gpu] * pick(ga, gpu)).sum().backward();
        }
        CHECK(within(ya[1], ya[0],
                     avg_pool2d(abs64(xa.cpu.detach()), c.kernel, c.stride, c.padding, c.ceil_mode, include_pad,
                                divisor)) == "");
        CHECK(within(xa.gpu.grad(), xa.cpu.grad(),
                     avg_pool2d_backward(abs64(ga.cpu), c.x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad,
                                         divisor)) == "");
      }
    }
}

TEST_CASE("max pooling ties pick the same (first) element on CUDA as on the CPU", "[cuda][nn_ops][pool]") {
  for (DType dt : {kFloat32, kBFloat16}) {
    const Both x = cuda_test::both_of(ones({2, 3, 7, 7}, dt));
    cuda_test::check_op([&](bool gpu) {
      auto [y, i] = max_pool2d_with_indices(pick(x, gpu), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
      auto [y2, i2] = max_pool2d_with_indices(pick(x, gpu), {2, 3}, {1, 2}, {1, 0}, {2, 1}, false);
      return std::vector<Tensor>{y, i, y2, i2};
    });
  }
  // A NaN in a window wins it, as on the CPU.
  const Both n = cuda_test::both_of(ref::make({1, 1, 2, 2}, kFloat32, {1, NAN, 3, 2}));
  cuda_test::check_op([&](bool gpu) {
    auto [y, i] = max_pool2d_with_indices(pick(n, gpu), {2, 2}, {2, 2});
    return std::vector<Tensor>{y, i};
  });
}

// ------------------------------------------------------------------ losses ----

TEST_CASE("cross_entropy and nll_loss forward and backward on CUDA match the CPU", "[cuda][nn_ops][loss]") {
  std::mt19937_64 rng(36);
  struct Case {
    int64_t n, c, ignore_index;
    Reduction reduction;
  };
  const std::vector<Case> cases = {{64, 10, -100, Reduction::Mean}, {64, 10, -100, Reduction::Sum},
                                   {64, 10, -100, Reduction::None}, {5, 1000, 3, Reduction::Mean},
                                   {1, 1, -100, Reduction::Mean},    {300, 7, 2, Reduction::None},
                                   {0, 5, -100, Reduction::Mean},    {7, 4, 0, Reduction::Sum}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Case& c : cases)
      for (bool nll : {false, true}) {
        INFO((nll ? "nll_loss " : "cross_entropy ") << ref::str(dt) << " [" << c.n << ", " << c.c
                                                    << "] ignore_index " << c.ignore_index);
        const Both x = leaf({c.n, c.c}, dt, rng, -4, 4);
        // Targets: classes, some equal to ignore_index (and -100 where it is not ignored is never drawn).
        std::vector<double> tv = ref::random_values(c.n, kInt64, rng, 0, c.c - 1);
        for (size_t i = 0; i < tv.size(); i += 5) tv[i] = static_cast<double>(c.ignore_index == -100 ? -100 : c.ignore_index);
        const Both t = cuda_test::both_of(ref::make({c.n}, kInt64, tv));
        Tensor loss[2];
        for (bool gpu : {false, true}) {
          const Tensor in = nll ? pick(x, gpu).log_softmax(1) : pick(x, gpu);
          loss[gpu] = nll ? F::nll_loss(in, pick(t, gpu), c.reduction, c.ignore_index)
                          : F::cross_entropy(in, pick(t, gpu), c.reduction, c.ignore_index);
          const Tensor g = c.reduction == Reduction::None ? ones_like(loss[gpu]) * 0.5 : ones_like(loss[gpu]);
          loss[gpu].backward(g);
        }
        // Half inputs: nll_loss's log_softmax is rounded to the half type on each device,
        // one ulp apart at worst, so the loss is judged at the input's precision, and
        // the gradient (where p - 1 cancels) relative to the largest gradient entry.
        CHECK_SAME(loss[1], loss[0], cuda_test::tol_for(dt));
        ref::Tol gt = cuda_test::tol_for(dt);
        if (is_half(dt) && c.n > 0) gt.atol = gt.rtol * x.cpu.grad().abs().amax().to(kFloat64).item<double>();
        CHECK_SAME(x.gpu.grad(), x.cpu.grad(), gt);
      }
}

TEST_CASE("cross_entropy on CUDA keeps its precision for logits near 1e6, as on the CPU", "[cuda][nn_ops][loss]") {
  // The CPU holds loss and gradient to float64 there (tests/kernels/test_loss.cpp);
  // one number max + log sum (float32 spacing 0.0625 near 1e6) would put the loss
  // 0.03 and the gradient's probabilities 3% off.
  std::mt19937_64 rng(38);
  const Both x = leaf({64, 10}, kFloat32, rng, 1e6 - 3, 1e6 + 3);
  const Both t = cuda_test::both_of(ref::make({64}, kInt64, ref::random_values(64, kInt64, rng, 0, 9)));
  Tensor loss[2];
  for (bool gpu : {false, true}) {
    loss[gpu] = F::cross_entropy(pick(x, gpu), pick(t, gpu), Reduction::None);
    loss[gpu].backward(ones_like(loss[gpu]));
  }
  CHECK_SAME(loss[1], loss[0], (ref::Tol{0, 1e-5}));
  CHECK_SAME(x.gpu.grad(), x.cpu.grad(), (ref::Tol{0, 1e-6}));
}

TEST_CASE("bad targets raise the CPU's IndexError on CUDA", "[cuda][nn_ops][loss]") {
  std::mt19937_64 rng(37);
  const Both x = cuda_test::random_both({6, 5}, kFloat32, Layout::contiguous, rng, -1, 1);
  for (const std::vector<double>& tv : {std::vector<double>{0, 1, 5, 2, 7, 1}, std::vector<double>{0, -3, 1, 1, 9, 2},
                                        std::vector<double>{-100, 4, 4, 4, 4, 100}}) {
    const Both t = cuda_test::both_of(ref::make({6}, kInt64, tv));
    for (bool nll : {false, true}) {
      cuda_test::Outcome o[2];
      for (bool gpu : {false, true})
        o[gpu] = cuda_test::run([&] {
          return std::vector<Tensor>{nll ? F::nll_loss(pick(x, gpu), pick(t, gpu)) : F::cross_entropy(pick(x, gpu), pick(t, gpu))};
        });
      REQUIRE(o[0].threw());
      CHECK(o[0].error_type == typeid(IndexError).name());
      CHECK(o[1].error_type == o[0].error_type);
      CHECK(o[1].error_text == o[0].error_text);
    }
  }
  // The documented text itself (docs/errors.md).
  const Both t = cuda_test::both_of(ref::make({6}, kInt64, {0, 1, 5, 2, 7, 1}));
  REQUIRE_THROWS_MATCHES(F::cross_entropy(x.gpu, t.gpu), IndexError, Catch::Matchers::Message("Target 5 is out of bounds."));
  // The device is still usable after the error.
  CHECK(x.gpu.sum().item<float>() == Approx(x.cpu.sum().item<float>()).epsilon(1e-5));
}

// ------------------------------------------------------------------ dropout ----

TEST_CASE("dropout on CUDA draws the CPU's mask and keeps the right share", "[cuda][nn_ops][dropout]") {
  const int64_t n = 1 << 20;
  for (double p : {0.1, 0.3, 0.5, 0.9})
    for (DType dt : {kFloat32, kFloat16, kFloat64}) {
      INFO("p " << p << " " << ref::str(dt));
      Generator g_cpu(555), g_gpu(555);
      const Tensor x_cpu = ones({n}, dt), x_gpu = ones({n}, {dt, kCuda});
      const Tensor y_cpu = F::dropout(x_cpu, p, true, &g_cpu), y_gpu = F::dropout(x_gpu, p, true, &g_gpu);
      // The same counter-based numbers on both devices: the same elements dropped.
      CHECK_SAME(y_gpu, y_cpu, cuda_test::kExact);
      // Share dropped within 6 standard deviations of p; kept ones scaled by 1/(1-p).
      const double dropped = (y_gpu == 0).sum().item<double>() / static_cast<double>(n);
      CHECK(dropped == Approx(p).margin(6 * std::sqrt(p * (1 - p) / static_cast<double>(n))));
      const double kept_max = y_gpu.amax().item<double>();
      const double kept_min = where(y_gpu == 0, Scalar(1e9), y_gpu).amin().item<double>();
      const double scale = 1.0 / (1.0 - p);
      CHECK(kept_max == Approx(scale).epsilon(cuda_test::tol_for(dt).rtol));
      CHECK(kept_min == Approx(scale).epsilon(cuda_test::tol_for(dt).rtol));
    }
  // Evaluation mode and p = 0 leave the input; p = 1 zeroes it.
  const Tensor x = rand({100}, {kFloat32, kCuda});
  CHECK(F::dropout(x, 0.5, false).is_same(x));
  CHECK(F::dropout(x, 1.0).abs().sum().item<float>() == 0.0f);
}

// ------------------------------------------------------------------ optimizers ----

namespace {

struct OptCase {
  const char* name;
  std::function<std::unique_ptr<nn::optim::Optimizer>(std::vector<Tensor>)> make;
};

const std::vector<OptCase> kOptimizers = {
    {"SGD", [](std::vector<Tensor> p) { return std::make_unique<nn::optim::SGD>(p, 0.05); }},
    {"SGD momentum, dampening, weight decay",
     [](std::vector<Tensor> p) { return std::make_unique<nn::optim::SGD>(p, 0.05, nn::optim::SGDOptions{0.9, 0.1, 1e-2, false}); }},
    {"SGD nesterov",
     [](std::vector<Tensor> p) { return std::make_unique<nn::optim::SGD>(p, 0.05, nn::optim::SGDOptions{0.9, 0, 1e-3, true}); }},
    {"Adam", [](std::vector<Tensor> p) { return std::make_unique<nn::optim::Adam>(p, 1e-2); }},
    {"Adam amsgrad, weight decay",
     [](std::vector<Tensor> p) { return std::make_unique<nn::optim::Adam>(p, 1e-2, nn::optim::AdamOptions{0.8, 0.99, 1e-6, 1e-2, true}); }},
    {"AdamW", [](std::vector<Tensor> p) { return std::make_unique<nn::optim::AdamW>(p, 1e-2); }},
    {"AdamW amsgrad",
     [](std::vector<Tensor> p) { return std::make_unique<nn::optim::AdamW>(p, 1e-2, nn::optim::AdamOptions{0.9, 0.999, 1e-8, 0.1, true}); }},
};

}  // namespace

TEST_CASE("fused SGD and Adam/AdamW steps on CUDA follow the CPU optimizer", "[cuda][nn_ops][optim]") {
  std::mt19937_64 rng(38);
  for (const OptCase& oc : kOptimizers)
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      INFO(oc.name << " " << ref::str(dt));
      // Sizes around the kernels' vector width, with a tail, and one large parameter.
      std::vector<Both> params;
      for (int64_t size : {1, 7, 4096 + 3, 300001}) params.push_back(cuda_test::random_both({size}, dt, Layout::contiguous, rng, -1, 1));
      std::vector<Tensor> pc, pg;
      for (Both& b : params) {
        b.cpu.requires_grad_();
        b.gpu.requires_grad_();
        pc.push_back(b.cpu);
        pg.push_back(b.gpu);
      }
      auto opt_cpu = oc.make(pc), opt_gpu = oc.make(pg);
      // The largest |value| each parameter held: a half-type parameter that rounded to
      // its neighbour while large keeps that ulp when later steps shrink it.
      std::vector<Tensor> peak;
      for (Both& b : params) peak.push_back(abs64(b.cpu));
      for (int step = 0; step < 5; ++step) {
        for (Both& b : params) {
          // Gradients away from zero, so that Adam's ratio is well conditioned.
          std::vector<double> g = ref::random_values(b.cpu.numel(), dt, rng, 0.1, 1);
          for (size_t i = 0; i < g.size(); i += 2) g[i] = -g[i];
          const Tensor gc = ref::make(b.cpu.shape(), dt, g);
          b.cpu.set_grad(gc);
          b.gpu.set_grad(gc.to(kCuda));
        }
        opt_cpu->step();
        opt_gpu->step();
        for (size_t i = 0; i < params.size(); ++i) peak[i] = maximum(peak[i], abs64(params[i].cpu));
      }
      // The kernels use the CPU's formulas; float32 may differ by contractions into
      // fused multiply-adds, the half types by one rounding of a parameter, an ulp of
      // the largest value it held (docs/numerics.md, "Optimizers").
      ref::Tol tol = cuda_test::tol_for(dt);
      if (dt == kFloat32) tol = {1e-5, 1e-6};
      if (is_half(dt)) tol.atol = 1e-4;
      for (size_t i = 0; i < params.size(); ++i) {
        INFO("parameter " << i << " of " << params[i].cpu.numel() << " elements");
        if (is_half(dt))
          CHECK(cuda_test::diff_within(params[i].gpu.detach(), params[i].cpu.detach(),
                                       cuda_test::allowance(params[i].cpu.detach(), tol, tol.rtol, peak[i])) == "");
        else
          CHECK_SAME(params[i].gpu.detach(), params[i].cpu.detach(), tol);
      }
      // The optimizer state follows too (momentum buffers, moments, step counts).
      const auto sc = opt_cpu->state_dict(), sg = opt_gpu->state_dict();
      REQUIRE(sc.size() == sg.size());
      for (size_t i = 0; i < sc.size(); ++i) {
        INFO(sc[i].first);
        CHECK(sg[i].first == sc[i].first);
        if (sg[i].second.device().is_cuda()) CHECK_SAME(sg[i].second, sc[i].second, tol);
        else CHECK(ref::compare(sg[i].second, ref::read(sc[i].second), cuda_test::kExact) == "");
      }
    }
}

// The CUDA backward kernels against finite differences of the CUDA forward kernels,
// in float64: gradcheck perturbs the inputs on the GPU itself.
TEST_CASE("gradcheck of layer ops on CUDA inputs", "[cuda][nn_ops][gradcheck]") {
  manual_seed(41);
  auto on_gpu = [](const Shape& s) { return randn(s, kFloat64).to(kCuda).requires_grad_(true); };
  const std::vector<std::pair<const char*, std::function<Tensor(const std::vector<Tensor>&)>>> rows = {
      {"matmul + tanh", [](const auto& x) { return matmul(x[0], x[1]).tanh(); }},
      {"conv2d, stride 2, padding 1, bias",
       [](const auto& x) { return F::conv2d(x[0], x[2], x[3], {2, 2}, {1, 1}); }},
      {"max_pool2d", [](const auto& x) { return F::max_pool2d(x[0], {2, 2}); }},
      {"log_softmax", [](const auto& x) { return x[1].log_softmax(1); }},
      {"layer_norm", [](const auto& x) { return layer_norm(x[1], {2}); }},
      {"cross_entropy", [](const auto& x) {
         return F::cross_entropy(x[1].reshape({8, 4}),
                                 tensor(std::vector<int64_t>{1, 0, 3, 2, 0, 1, 2, 3}).to(kCuda));
       }},
  };
  // Images [2, 2, 4, 4] (also a batch of 4 x 4 matrices), [2, 2, 4, 2] (matrices and
  // rows), a conv weight [3, 2, 3, 3] and its bias. A row perturbs the inputs it does
  // not use too; their gradients are 0 both ways.
  const std::vector<Tensor> inputs = {on_gpu({2, 2, 4, 4}), on_gpu({2, 2, 4, 2}), on_gpu({3, 2, 3, 3}),
                                      on_gpu({3})};
  for (const auto& [name, f] : rows) {
    INFO(name);
    std::string why;
    CHECK(autograd::gradcheck(f, inputs, {}, &why));
    INFO(why);
    CHECK(why.empty());
  }
}
