// Automatic mixed precision: autocast's dtype for every listed op, nested and
// disabled regions, the parameter cast cache, backward in the forward's dtype; the
// GradScaler's fused unscale kernel, its scale trajectory under injected infinities
// against an independent transcription of PyTorch's update rule, its ordering
// errors (exact texts, docs/errors.md), state_dict, and training that recovers
// from an overflow and ends as accurate as float32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "ember.h"
#include "kernels/cpu/amp.h"
#include "nn/amp_scaler_checks.h"
#include "nn/nn.h"

using namespace ember;
namespace F = ember::nn::functional;
using nn::amp::AutocastGuard;
using nn::amp::GradScaler;
using nn::amp::GradScalerOptions;

// ---------------------------------------------------------------- autocast ----

TEST_CASE("autocast: each listed op runs in its policy's dtype", "[amp][autocast]") {
  for (DType low : {kBFloat16, kFloat16}) {
    AutocastGuard autocast(DeviceType::CPU, low);
    Tensor a = rand({4, 6}), b = rand({6, 3});
    Tensor w = rand({5, 6}).requires_grad_(), bias = rand({5}).requires_grad_();
    Tensor img = rand({2, 1, 6, 6}), k = rand({2, 1, 3, 3});
    Tensor h = rand({4, 6}).to(low);
    Tensor y = tensor(std::vector<int64_t>{0, 1, 2, 3});
    INFO("autocast dtype " << low);
    // Lower precision: the GEMM-like ops.
    CHECK(matmul(a, b).dtype() == low);
    CHECK(F::linear(a, w, bias).dtype() == low);
    CHECK(F::conv2d(img, k).dtype() == low);
    CHECK(F::conv2d(img, k, rand({2})).dtype() == low);
    // float32: rounding-sensitive ops, even on half inputs.
    CHECK(h.softmax(1).dtype() == kFloat32);
    CHECK(h.log_softmax(1).dtype() == kFloat32);
    CHECK(F::cross_entropy(h, y).dtype() == kFloat32);
    CHECK(F::nll_loss(h.log_softmax(1), y).dtype() == kFloat32);
    CHECK(F::mse_loss(h, h).dtype() == kFloat32);
    CHECK(h.sum().dtype() == kFloat32);
    CHECK(h.mean({1}).dtype() == kFloat32);
    CHECK(h.exp().dtype() == kFloat32);
    CHECK(h.log().dtype() == kFloat32);
    CHECK(pow(h, 2).dtype() == kFloat32);
    CHECK(h.norm().dtype() == kFloat32);
    CHECK(h.norm(1, {1}).dtype() == kFloat32);
    // Everything else follows type promotion: mixed inputs take the widest.
    CHECK((h + a).dtype() == kFloat32);
    CHECK((h * h).dtype() == low);
    CHECK(h.relu().dtype() == low);
    CHECK(where(a > 0.5, h, a).dtype() == kFloat32);
    // float64 is never touched, integers neither.
    CHECK(matmul(a.to(kFloat64), b.to(kFloat64)).dtype() == kFloat64);
    CHECK(y.sum().dtype() == kInt64);
  }
}

TEST_CASE("autocast: values equal the op on inputs cast by hand", "[amp][autocast]") {
  manual_seed(2);
  Tensor a = randn({9, 17}), b = randn({17, 5});
  Tensor want = matmul(a.to(kBFloat16), b.to(kBFloat16));
  Tensor got;
  {
    AutocastGuard autocast(DeviceType::CPU);
    got = matmul(a, b);
  }
  CHECK(got.dtype() == kBFloat16);
  CHECK(((got.to(kFloat32)) != (want.to(kFloat32))).sum().item<int64_t>() == 0);
}

TEST_CASE("autocast: regions nest, can be disabled inside, and restore the outer state", "[amp][autocast]") {
  Tensor a = rand({3, 3});
  CHECK_FALSE(nn::amp::is_autocast_enabled(DeviceType::CPU));
  {
    AutocastGuard outer(DeviceType::CPU, kBFloat16);
    CHECK(matmul(a, a).dtype() == kBFloat16);
    {
      AutocastGuard inner(DeviceType::CPU, kFloat16);
      CHECK(matmul(a, a).dtype() == kFloat16);
      {
        AutocastGuard off(DeviceType::CPU, std::nullopt, false);
        CHECK(matmul(a, a).dtype() == kFloat32);
        CHECK_FALSE(nn::amp::is_autocast_enabled(DeviceType::CPU));
      }
      CHECK(matmul(a, a).dtype() == kFloat16);
    }
    CHECK(matmul(a, a).dtype() == kBFloat16);
    CHECK(nn::amp::get_autocast_dtype(DeviceType::CPU) == kBFloat16);
    // A CUDA region does not touch CPU tensors.
    {
      AutocastGuard cuda_region(DeviceType::CUDA);
      CHECK(nn::amp::get_autocast_dtype(DeviceType::CUDA) == kFloat16);
      AutocastGuard off(DeviceType::CPU, std::nullopt, false);
      CHECK(matmul(a, a).dtype() == kFloat32);
    }
  }
  CHECK_FALSE(nn::amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(matmul(a, a).dtype() == kFloat32);
}

TEST_CASE("autocast: the state is per thread, so a replica's forward enters its own region", "[amp][autocast]") {
  // DataParallel runs each replica's forward on a worker thread: the caller's region
  // does not reach it, and a guard inside the forward (as the seed documents write it) does.
  Tensor a = rand({3, 3});
  DType outside = kFloat64, inside = kFloat64;
  {
    AutocastGuard autocast(DeviceType::CPU);
    std::thread worker([&] {
      outside = matmul(a, a).dtype();
      AutocastGuard replica(DeviceType::CPU, kFloat16);
      inside = matmul(a, a).dtype();
    });
    worker.join();
    CHECK(matmul(a, a).dtype() == kBFloat16);  // the worker's guard did not touch this thread
  }
  CHECK(outside == kFloat32);
  CHECK(inside == kFloat16);
}

TEST_CASE("autocast: guard arguments are checked before any state changes", "[amp][autocast]") {
  CHECK_THROWS_WITH(AutocastGuard(DeviceType::CPU, kFloat64),
                    "autocast: the lower-precision dtype must be float16 or bfloat16, got float64");
  CHECK_THROWS_WITH(AutocastGuard(DeviceType::Meta), "autocast: device type meta is not supported; use cpu or cuda");
  CHECK_FALSE(nn::amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(nn::amp::get_autocast_dtype(DeviceType::CPU) == kBFloat16);
  CHECK(autocast::cache_size() == 0);
}

TEST_CASE("autocast: casts of parameters are cached within one region", "[amp][autocast]") {
  nn::Linear fc(6, 4);
  Tensor x = rand({2, 6});
  {
    AutocastGuard autocast(DeviceType::CPU);
    Tensor y1 = fc(x);
    CHECK(autocast::cache_size() == 2);  // weight and bias
    Tensor y2 = fc(x * 2);
    CHECK(autocast::cache_size() == 2);  // reused, not cast again
    // Activations are never cached.
    Tensor z = matmul(x, x.t());
    CHECK(autocast::cache_size() == 2);
    // A cast is shared by both uses: one graph node feeds both outputs.
    CHECK(y1.grad_fn() != nullptr);
    // An in-place update of the parameter (an optimizer step) invalidates its cast.
    {
      NoGradGuard no_grad;
      fc.parameters()[0].mul_(2);
    }
    Tensor y3 = fc(x);
    Tensor want = F::linear(x.to(kBFloat16), (fc.parameters()[0]).to(kBFloat16), fc.parameters()[1].to(kBFloat16));
    CHECK(((y3.to(kFloat32)) != (want.to(kFloat32))).sum().item<int64_t>() == 0);
  }
  CHECK(autocast::cache_size() == 0);  // the outermost exit frees them
}

TEST_CASE("autocast: backward runs in the forward's dtype; parameters keep float32 gradients", "[amp][autocast]") {
  manual_seed(4);
  nn::Linear fc(8, 3);
  Tensor x = randn({5, 8});
  Tensor y, loss;
  {
    AutocastGuard autocast(DeviceType::CPU);
    y = fc(x);
    y.retain_grad();
    loss = y.sum();  // sum runs in float32
    CHECK(loss.dtype() == kFloat32);
  }
  loss.backward();
  CHECK(y.grad().dtype() == kBFloat16);  // the linear's backward saw bfloat16 gradients
  const Tensor& gw = fc.parameters()[0].grad();
  CHECK(fc.parameters()[0].dtype() == kFloat32);
  CHECK(gw.dtype() == kFloat32);
  // d(sum y)/dW = ones^T x, computed in bfloat16 from the bfloat16 x.
  Tensor want = matmul(ones({3, 5}, kBFloat16), x.to(kBFloat16)).to(kFloat32);
  CHECK(((gw) != (want)).sum().item<int64_t>() == 0);
  // Backward called inside a region behaves the same (the engine suspends autocast).
  fc.zero_grad();
  {
    AutocastGuard autocast(DeviceType::CPU);
    Tensor l = fc(x).sum();
    l.backward();
    CHECK_FALSE(autocast::is_suspended());
  }
  CHECK(((fc.parameters()[0].grad()) != (want)).sum().item<int64_t>() == 0);
}

// -------------------------------------------------------- unscale kernel ----

TEST_CASE("amp kernel: fused unscale multiplies by 1/scale and flags inf and NaN anywhere", "[amp][scaler]") {
  const float scale = 1024.0f;
  for (int64_t n : {1, 15, 16, 17, 300, 70001}) {
    for (int64_t bad_at : {int64_t{-1}, int64_t{0}, n / 2, n - 1}) {
      for (float bad : {INFINITY, -INFINITY, NAN}) {
        std::vector<float> f(n);
        std::vector<Half> h(n);
        std::vector<BFloat16> b(n);
        std::mt19937 g(7);
        std::uniform_real_distribution<float> u(-60000, 60000);
        for (int64_t i = 0; i < n; ++i) {
          f[i] = u(g);
          h[i] = Half(f[i] / 4);
          b[i] = BFloat16(f[i]);
        }
        if (bad_at >= 0) {
          f[bad_at] = bad;
          h[n - 1 - bad_at] = Half(bad);
          b[bad_at] = BFloat16(bad);
        }
        const std::vector<float> f0 = f;
        const std::vector<Half> h0 = h;
        const std::vector<BFloat16> b0 = b;
        for (int which = 0; which < 3; ++which) {
          cpu::GradBuffer buf{which == 0 ? static_cast<void*>(f.data())
                              : which == 1 ? static_cast<void*>(h.data())
                                           : static_cast<void*>(b.data()),
                              n, which == 0 ? kFloat32 : which == 1 ? kFloat16 : kBFloat16};
          float found = 0;
          cpu::amp_unscale_grads(&buf, 1, &scale, &found);
          INFO("n " << n << " bad at " << bad_at << " buffer " << which);
          CHECK(found == (bad_at >= 0 ? 1.0f : 0.0f));
        }
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          auto same = [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); };
          wrong += !same(f[i], f0[i] * (1.0f / 1024));
          wrong += !same(float(h[i]), float(Half(float(h0[i]) * (1.0f / 1024))));
          wrong += !same(float(b[i]), float(BFloat16(float(b0[i]) * (1.0f / 1024))));
        }
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("amp kernel: one flag gathers several buffers and is never cleared", "[amp][scaler]") {
  std::vector<float> a{1, 2}, b{3, NAN};
  cpu::GradBuffer bufs[2] = {{a.data(), 2, kFloat32}, {b.data(), 2, kFloat32}};
  const float scale = 2;
  float found = 0;
  cpu::amp_unscale_grads(bufs, 2, &scale, &found);
  CHECK(found == 1);
  CHECK(a == std::vector<float>{0.5f, 1});
  cpu::amp_unscale_grads(bufs, 1, &scale, &found);  // clean, but the flag stays set
  CHECK(found == 1);
}

// ----------------------------------------------------------- GradScaler ----

using amp_checks::check_many_gradients;
using amp_checks::flat;
using amp_checks::kWantedScales;
using amp_checks::trajectory;

TEST_CASE("GradScaler: PyTorch's defaults", "[amp][scaler]") {
  GradScaler s;
  CHECK(s.get_scale() == 65536.0);
  CHECK(s.get_growth_factor() == 2.0);
  CHECK(s.get_backoff_factor() == 0.5);
  CHECK(s.get_growth_interval() == 2000);
  CHECK(s.is_enabled());
  Tensor loss = full({}, 0.5);
  Tensor scaled = s.scale(loss);
  CHECK(scaled.item<double>() == 32768.0);
  CHECK(scaled.dtype() == kFloat32);
}

TEST_CASE("GradScaler: unscaled gradients equal the unscaled run's exactly", "[amp][scaler]") {
  manual_seed(8);
  Tensor x = randn({16, 6});
  Tensor t = randn({16, 2});
  auto grads = [&](bool scaled) {
    manual_seed(3);
    nn::Linear fc(6, 2);
    nn::optim::SGD opt(fc.parameters(), 0.1);
    GradScaler scaler;
    Tensor loss = F::mse_loss(fc(x), t);
    (scaled ? scaler.scale(loss) : loss).backward();
    if (scaled) scaler.unscale_(opt);
    std::vector<Tensor> g;
    for (const Tensor& p : fc.parameters()) g.push_back(p.grad());
    return flat(g);
  };
  CHECK(grads(true) == grads(false));  // 2^16 is a power of two: scaling is exact
}


TEST_CASE("GradScaler: scale trajectory under injected infinities matches PyTorch's rule step by step",
          "[amp][scaler]") {
  CHECK(trajectory(kCPU) == kWantedScales);
}


TEST_CASE("GradScaler: one fused unscale over many float32 and bfloat16 gradients", "[amp][scaler]") {
  check_many_gradients(kCPU);
}

TEST_CASE("GradScaler: the scale never grows to infinity; update(new_scale) sets it", "[amp][scaler]") {
  GradScalerOptions o;
  o.init_scale = std::ldexp(1.0, 127);
  o.growth_interval = 1;
  GradScaler scaler(o);
  nn::Linear fc(2, 1);
  nn::optim::SGD opt(fc.parameters(), 0.0);
  scaler.scale(fc(ones({1, 2})).sum() * 0.0).backward();
  scaler.step(opt);
  scaler.update();
  CHECK(scaler.get_scale() == std::ldexp(1.0, 127));
  CHECK(scaler.growth_tracker() == 0);
  scaler.update(8.0);
  CHECK(scaler.get_scale() == 8.0);
  scaler.update(full({1}, 4.0));
  CHECK(scaler.get_scale() == 4.0);
  CHECK_THROWS_WITH(scaler.update(full({2}, 4.0)),
                    "new_scale should be a float or a 1-element float32 tensor with requires_grad=False.");
}

TEST_CASE("GradScaler: calls out of order raise the documented errors", "[amp][scaler]") {
  nn::Linear fc(2, 1);
  nn::optim::SGD opt(fc.parameters(), 0.1);
  auto backward = [&](GradScaler& s) {
    opt.zero_grad();
    s.scale(fc(ones({1, 2})).sum()).backward();
  };
  {
    GradScaler s;
    CHECK_THROWS_WITH(s.unscale_(opt), "Attempted unscale_ but _scale is None.  This may indicate your script did not "
                                       "use scaler.scale(loss or outputs) earlier in the iteration.");
    CHECK_THROWS_WITH(s.step(opt), "Attempted step but _scale is None.  This may indicate your script did not use "
                                   "scaler.scale(loss or outputs) earlier in the iteration.");
    CHECK_THROWS_WITH(s.update(), "Attempted update but _scale is None.  This may indicate your script did not use "
                                  "scaler.scale(loss or outputs) earlier in the iteration.");
  }
  {
    GradScaler s;
    backward(s);
    s.unscale_(opt);
    CHECK_THROWS_WITH(s.unscale_(opt),
                      "unscale_() has already been called on this optimizer since the last update().");
    s.step(opt);
    CHECK_THROWS_WITH(s.unscale_(opt), "unscale_() is being called after step().");
    CHECK_THROWS_WITH(s.step(opt), "step() has already been called since the last update().");
    s.update();
    CHECK_THROWS_WITH(s.update(), "No inf checks were recorded prior to update.");
    // A new iteration after update() is fine.
    backward(s);
    CHECK(s.step(opt));
    s.update();
  }
  {
    GradScaler s;
    s.scale(full({}, 1.0));
    opt.zero_grad();  // no gradients at all
    CHECK_THROWS_WITH(s.step(opt), "No inf checks were recorded for this optimizer.");
  }
  {
    GradScaler s;
    nn::Linear half_fc(2, 1);
    half_fc.half();
    nn::optim::SGD half_opt(half_fc.parameters(), 0.1);
    s.scale(half_fc(ones({1, 2}, kFloat16)).sum()).backward();
    CHECK_THROWS_WITH(s.unscale_(half_opt), "Attempting to unscale FP16 gradients.");
  }
  CHECK_THROWS_WITH(GradScaler(GradScalerOptions{.growth_factor = 1.0}), "The growth factor must be > 1.0.");
  CHECK_THROWS_WITH(GradScaler(GradScalerOptions{.backoff_factor = 1.0}), "The backoff factor must be < 1.0.");
  CHECK_THROWS_WITH(GradScaler(GradScalerOptions{.growth_interval = 0}),
                    "The growth interval must be a positive integer.");
  {
    nn::Linear f64(2, 1);
    f64.float64();
    nn::optim::SGD opt64(f64.parameters(), 0.1);
    GradScaler s;
    s.scale(f64(ones({1, 2}, kFloat64)).sum()).backward();
    CHECK_THROWS_WITH(s.unscale_(opt64), "GradScaler.unscale_: gradients must be float32 or bfloat16, got float64");
  }
  {
    GradScaler s;
    nn::StateDict sd = GradScaler(GradScalerOptions{.init_scale = 8}).state_dict();
    sd.pop_back();
    CHECK_THROWS_WITH(s.load_state_dict(sd), "GradScaler.load_state_dict: missing key '_growth_tracker'");
    CHECK(s.get_scale() == 65536.0);  // nothing loaded
  }
  {
    // Gradients on a device without kernels (meta) are refused by name before any
    // data is read.
    nn::Linear meta_fc(2, 1);
    meta_fc.to(kMeta);
    for (Tensor& p : meta_fc.parameters()) p.mutable_grad() = zeros_like(p.detach());
    nn::optim::SGD meta_opt(meta_fc.parameters(), 0.1);
    GradScaler s;
    s.scale(zeros({}, kMeta));
    CHECK_THROWS_WITH(s.unscale_(meta_opt), "GradScaler.unscale_: no kernel for device meta and dtype float32");
  }
  CHECK_THROWS_WITH(GradScaler().load_state_dict({}),
                    "The source state dict is empty, possibly because it was saved from a disabled instance of "
                    "GradScaler.");
}

TEST_CASE("GradScaler: bfloat16 gradients are unscaled; state_dict round trips; disabled is a no-op",
          "[amp][scaler]") {
  {
    nn::Linear fc(3, 2);
    fc.bfloat16();
    nn::optim::SGD opt(fc.parameters(), 0.1);
    GradScaler s;
    Tensor loss = fc(ones({4, 3}, kBFloat16)).sum();
    s.scale(loss).backward();
    s.unscale_(opt);
    // d(sum)/d(bias) = 4 per output, exactly, after unscaling.
    CHECK(fc.parameters()[1].grad().to(kFloat32).to_vector<float>() == std::vector<float>{4, 4});
  }
  {
    GradScalerOptions o;
    o.init_scale = 256;
    o.growth_interval = 7;
    GradScaler a(o);
    nn::Linear fc(2, 1);
    nn::optim::SGD opt(fc.parameters(), 0.1);
    a.scale(fc(ones({1, 2})).sum()).backward();
    a.step(opt);
    a.update();
    const nn::StateDict sd = a.state_dict();
    REQUIRE(sd.size() == 5);
    CHECK(sd[0].first == "scale");
    CHECK(sd[4].first == "_growth_tracker");
    GradScaler b;
    b.load_state_dict(sd);
    CHECK(b.get_scale() == 256);
    CHECK(b.growth_tracker() == 1);
    CHECK(b.get_growth_interval() == 7);
  }
  {
    GradScaler off(GradScalerOptions{.enabled = false});
    Tensor loss = full({}, 3.0);
    CHECK(off.scale(loss).is_same(loss));
    CHECK(off.get_scale() == 1.0);
    CHECK(off.state_dict().empty());
    nn::Linear fc(2, 1);
    nn::optim::SGD opt(fc.parameters(), 0.1);
    fc(ones({1, 2})).sum().backward();
    const auto before = flat(fc.parameters());
    CHECK(off.step(opt));
    CHECK(flat(fc.parameters()) != before);
  }
}

// ------------------------------------------------------------ training ----

namespace {

// A small classification problem: 4 Gaussian blobs in 16 dimensions.
struct Blobs {
  Tensor x, y;
};
Blobs blobs(int64_t n, uint64_t seed) {
  manual_seed(seed);
  Tensor centers = randn({4, 16}) * 2;
  Tensor y = (rand({n}) * 4).to(kInt64).clamp(0, 3);
  std::vector<Tensor> rows;
  const auto labels = y.to_vector<int64_t>();
  Tensor noise = randn({n, 16});
  Tensor x = empty({n, 16});
  for (int64_t i = 0; i < n; ++i) x.select(0, i).copy_(centers.select(0, labels[i]) + noise.select(0, i));
  return {x, y};
}

struct TrainResult {
  double accuracy;
  std::vector<int> skipped;  // iterations whose step was skipped
  std::vector<double> scales;
};

// amp: 0 float32, 1 bfloat16 autocast, 2 float16 autocast; inject_at: iteration
// whose gradients get an inf (-1: none).
TrainResult train(int amp, int inject_at) {
  const Blobs train_set = blobs(2000, 21), test_set = blobs(1000, 21);
  manual_seed(5);
  auto net = std::make_shared<nn::Sequential>();
  net->add(std::make_shared<nn::Linear>(16, 32));
  net->add(std::make_shared<nn::ReLU>());
  net->add(std::make_shared<nn::Linear>(32, 4));
  nn::optim::SGD opt(net->parameters(), 0.05, {.momentum = 0.9});
  GradScalerOptions so;
  so.enabled = amp != 0;
  so.growth_interval = 20;
  GradScaler scaler(so);
  TrainResult r;
  int it = 0;
  for (int epoch = 0; epoch < 3; ++epoch)
    for (int64_t s = 0; s < 2000; s += 50, ++it) {
      Tensor xb = train_set.x.narrow(0, s, 50), yb = train_set.y.narrow(0, s, 50);
      opt.zero_grad();
      Tensor loss;
      {
        std::optional<AutocastGuard> autocast;
        if (amp) autocast.emplace(DeviceType::CPU, amp == 1 ? kBFloat16 : kFloat16);
        loss = F::cross_entropy((*net)(xb), yb);
      }
      scaler.scale(loss).backward();
      if (it == inject_at) {
        NoGradGuard no_grad;
        net->parameters()[0].mutable_grad().narrow(0, 0, 1).fill_(INFINITY);
      }
      if (!scaler.step(opt)) r.skipped.push_back(it);
      scaler.update();
      r.scales.push_back(scaler.get_scale());
    }
  NoGradGuard no_grad;
  r.accuracy = ((*net)(test_set.x).argmax(1) == test_set.y).to(kFloat32).mean().item<double>();
  return r;
}

}  // namespace

TEST_CASE("AMP training: bf16 and fp16 reach float32's accuracy; an injected overflow is recovered from",
          "[amp][training]") {
  const TrainResult f32 = train(0, -1);
  CHECK(f32.accuracy > 0.9);
  for (int amp : {1, 2}) {
    const TrainResult r = train(amp, 50);
    INFO("amp " << amp << ": accuracy " << r.accuracy << " vs float32 " << f32.accuracy);
    CHECK(std::abs(r.accuracy - f32.accuracy) <= 0.01);
    // The injected step is skipped; float16 may overflow on its own now and then as
    // the scale grows (that is the scaler doing its job), bfloat16 never does.
    CHECK(std::count(r.skipped.begin(), r.skipped.end(), 50) == 1);
    if (amp == 1) CHECK(r.skipped.size() == 1);
    CHECK(r.skipped.size() <= 6);
    CHECK(r.scales[49] == r.scales[50] * 2);  // backoff at the overflow
    CHECK(r.scales.back() > r.scales[50]);   // and growth again afterwards
  }
}
