// Gradient clipping against a float64 computation written here: the joint p-norm
// of all gradients, the factor min(1, max_norm / (total + 1e-6)), gradients left
// bit-identical when no clipping is needed, parameters without gradients skipped,
// half gradients, the non-finite error (exact text), and clipping after a
// GradScaler's unscale_ seeing the true norm.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/nn.h"
#include "support/reference.h"

using namespace ember;
using nn::utils::clip_grad_norm_;
using nn::utils::clip_grad_value_;

namespace {

// A leaf with the given gradient.
Tensor param_with_grad(const Tensor& grad) {
  Tensor p = zeros(grad.shape(), {grad.dtype()}).requires_grad_();
  p.set_grad(grad.clone());
  return p;
}

double joint_norm(const std::vector<std::vector<double>>& gs, double p) {
  double r = 0;
  for (const auto& g : gs)
    for (double v : g) {
      if (std::isinf(p)) r = std::max(r, std::fabs(v));
      else r += std::pow(std::fabs(v), p);
    }
  return std::isinf(p) ? r : std::pow(r, 1 / p);
}

}  // namespace

TEST_CASE("clip_grad_norm_: total norm and scaling match a float64 computation", "[nn][clip]") {
  manual_seed(5);
  const std::vector<Tensor> grads = {randn({4, 3}), randn({7}), randn({2, 2, 2}) * 10};
  std::vector<std::vector<double>> ref_grads;
  for (const Tensor& g : grads) ref_grads.push_back(ref::read(g).v);
  for (double p : {2.0, 1.0, 3.0, double(INFINITY)}) {
    const double total = joint_norm(ref_grads, p);
    for (double max_norm : {0.5, total / 2, total * 2}) {
      INFO("p = " << p << ", max_norm = " << max_norm);
      std::vector<Tensor> params;
      for (const Tensor& g : grads) params.push_back(param_with_grad(g));
      params.push_back(zeros({3}).requires_grad_());  // no gradient: skipped
      Tensor got = clip_grad_norm_(params, max_norm, p);
      CHECK(got.dim() == 0);
      CHECK(got.dtype() == kFloat32);
      CHECK(got.item<double>() == Approx(total).epsilon(1e-5));
      const double factor = std::min(1.0, max_norm / (total + 1e-6));
      for (size_t i = 0; i < grads.size(); ++i) {
        const auto now = ref::read(params[i].grad()).v;
        for (size_t j = 0; j < now.size(); ++j) {
          if (factor == 1.0) REQUIRE(now[j] == ref_grads[i][j]);  // untouched: the same bits
          else REQUIRE(now[j] == Approx(ref_grads[i][j] * factor).epsilon(1e-5).margin(1e-7));
        }
      }
      CHECK_FALSE(params.back().grad().defined());
    }
  }
}

TEST_CASE("clip_grad_norm_: no gradients, half gradients, non-finite totals", "[nn][clip]") {
  CHECK(clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0).item<float>() == 0);
  CHECK(clip_grad_norm_({}, 1.0).item<float>() == 0);

  // A bfloat16 and a float16 gradient: norms taken in float32, gradients keep their dtype.
  Tensor a = param_with_grad(ref::make({2}, kBFloat16, {3, 4}));
  Tensor b = param_with_grad(ref::make({1}, kFloat16, {12}));
  CHECK(clip_grad_norm_({a, b}, 6.5).item<float>() == Approx(13).epsilon(1e-6));
  CHECK(a.grad().dtype() == kBFloat16);
  CHECK(b.grad().dtype() == kFloat16);
  CHECK(ref::read(b.grad()).v[0] == Approx(6).epsilon(1e-3));  // 12 * 6.5 / 13, rounded to float16
  // A float16 gradient whose norm passes float16's range though its elements do not
  // (four of 40000: norm 80000 > 65504): measured in float32, the total is finite.
  Tensor big = param_with_grad(full({4}, 40000.0).to(kFloat16));
  CHECK(clip_grad_norm_({big}, 8.0).item<float>() == Approx(80000).epsilon(1e-6));
  CHECK(ref::read(big.grad()).v[0] == Approx(4).epsilon(1e-3));

  // float64 gradients: the total and the factor in float64, as PyTorch.
  Tensor d = param_with_grad(ref::make({3}, kFloat64, {3, 4, 0}));
  Tensor total = clip_grad_norm_({d}, 1.0);
  CHECK(total.dtype() == kFloat64);
  CHECK(total.item<double>() == 5.0);
  CHECK(ref::read(d.grad()).v == std::vector<double>{3 * (1 / (5 + 1e-6)), 4 * (1 / (5 + 1e-6)), 0});

  Tensor inf = param_with_grad(ref::make({2}, kFloat32, {1, INFINITY}));
  const std::vector<double> before = ref::read(inf.grad()).v;
  CHECK_THROWS_WITH(clip_grad_norm_({inf}, 1.0, 2.0, true),
                    "clip_grad_norm_(): the total norm of order 2 for gradients from `parameters` is non-finite, so "
                    "it cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                    "anyway, set error_if_nonfinite=false");
  CHECK_THROWS_AS(clip_grad_norm_({inf}, 1.0, 2.0, true), ValueError);
  CHECK(ref::read(inf.grad()).v == before);  // untouched when it raises
  CHECK(std::isinf(clip_grad_norm_({inf}, 1.0).item<float>()));  // without the flag, as PyTorch
}

TEST_CASE("clip_grad_value_ clamps every element", "[nn][clip]") {
  Tensor a = param_with_grad(ref::make({4}, kFloat32, {-3, -0.5, 0.25, 2}));
  clip_grad_value_({a, zeros({1}).requires_grad_()}, 1.0);
  CHECK(ref::read(a.grad()).v == std::vector<double>{-1, -0.5, 0.25, 1});
}

TEST_CASE("clip_grad_norm_ after GradScaler::unscale_ sees the true gradients", "[nn][clip][amp]") {
  manual_seed(9);
  Tensor x = randn({8, 5}), t = randn({8, 3});
  auto run = [&](bool amp) {
    manual_seed(4);
    nn::Linear fc(5, 3);
    nn::optim::SGD opt(fc.parameters(), 0.1);
    nn::amp::GradScaler scaler;
    Tensor loss = nn::functional::mse_loss(fc(x), t);
    if (amp) {
      scaler.scale(loss).backward();
      scaler.unscale_(opt);
    } else {
      loss.backward();
    }
    const double total = clip_grad_norm_(fc.parameters(), 0.01).item<double>();
    if (amp) {
      scaler.step(opt);
      scaler.update();
    } else {
      opt.step();
    }
    return std::make_pair(total, ref::read(fc.weight).v);
  };
  const auto [total_amp, w_amp] = run(true);
  const auto [total_plain, w_plain] = run(false);
  CHECK(total_amp == total_plain);  // the scale is a power of two: unscaling is exact
  CHECK(total_amp > 0.01);          // so the step was clipped
  CHECK(w_amp == w_plain);
}
