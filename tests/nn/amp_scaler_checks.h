// The GradScaler checks that run on any device: an independent transcription of
// PyTorch's scale-update rule, the scale trajectory under injected infinities and
// NaNs, and one fused unscale over many gradients against a naive loop. Shared by
// the nn suite (on the CPU) and the cuda suite (tests/cuda/test_amp.cpp), so both
// devices are held to the same trajectory and the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/nn.h"

namespace amp_checks {

using namespace ember;
namespace F = ember::nn::functional;
using nn::amp::GradScaler;
using nn::amp::GradScalerOptions;

// PyTorch's _amp_update_scale_ rule, written out again independently of the library:
// scale and tracker as float32 and int32, the products in double as in the CUDA kernel.
struct ReferenceScaler {
  float scale;
  int32_t tracker = 0;
  double growth = 2, backoff = 0.5;
  int64_t interval;
  void update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(static_cast<double>(scale) * backoff);
      tracker = 0;
    } else if (tracker + 1 == interval) {
      const float grown = static_cast<float>(static_cast<double>(scale) * growth);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    } else {
      ++tracker;
    }
  }
};

inline std::vector<float> flat(const std::vector<Tensor>& ts) {
  std::vector<float> out;
  for (const Tensor& t : ts)
    for (float v : t.detach().contiguous().to_vector<float>()) out.push_back(v);
  return out;
}

// The trajectory test on one device; returns the scales after each update.
inline std::vector<float> trajectory(const Device& device) {
  manual_seed(12);
  nn::Linear fc(4, 3);
  fc.to(device);
  nn::optim::Adam opt(fc.parameters(), 0.01);
  GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  GradScaler scaler(o);
  ReferenceScaler ref{1024, 0, 2, 0.5, 3};
  Tensor x = randn({8, 4}).to(device), y = randn({8, 3}).to(device);
  // Iterations with an overflow: backoff, clean runs to growth, two overflows in a row, recovery.
  const std::vector<int> inject{0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 2, 0, 0, 0};  // 1: inf, 2: NaN
  std::vector<float> scales;
  for (size_t it = 0; it < inject.size(); ++it) {
    opt.zero_grad();
    scaler.scale(F::mse_loss(fc(x), y)).backward();
    if (inject[it]) {
      NoGradGuard no_grad;
      fc.parameters()[1].mutable_grad().narrow(0, 1, 1).fill_(inject[it] == 1 ? INFINITY : NAN);
    }
    const std::vector<float> params_before = flat(fc.parameters());
    const nn::StateDict state_before = opt.state_dict();
    const bool stepped = scaler.step(opt);
    INFO("iteration " << it);
    CHECK(stepped == !inject[it]);
    if (inject[it]) {
      // Skipped: parameters and the optimizer state are untouched, bit for bit.
      CHECK(flat(fc.parameters()) == params_before);
      const nn::StateDict state_after = opt.state_dict();
      REQUIRE(state_after.size() == state_before.size());
      for (size_t i = 0; i < state_after.size(); ++i) {
        CHECK(state_after[i].first == state_before[i].first);
        CHECK(flat(std::vector<Tensor>{state_after[i].second.to(kFloat32)}) == flat(std::vector<Tensor>{state_before[i].second.to(kFloat32)}));
      }
    } else {
      CHECK(flat(fc.parameters()) != params_before);
    }
    scaler.update();
    ref.update(inject[it] != 0);
    CHECK(scaler.get_scale() == ref.scale);
    CHECK(scaler.growth_tracker() == ref.tracker);
    scales.push_back(static_cast<float>(scaler.get_scale()));
  }
  return scales;
}

// The trajectory written out: backoff at 2, growth after 3 clean steps, ...
inline const std::vector<float> kWantedScales{1024, 1024, 512, 512, 512, 1024, 1024, 1024, 2048,
                                       1024, 512,  512, 512, 1024, 512, 512, 512, 1024};

// Many gradients of mixed types in one call (more than one CUDA launch's table of 48),
// with one bad value placed in turn in each; a naive loop is the reference.
inline void check_many_gradients(const Device& device) {
  std::vector<Tensor> params;
  for (int i = 0; i < 60; ++i) {
    const int64_t n = 1 + (i * 977) % 20011;  // 1 .. 20011 elements: tails and several chunks
    params.push_back(zeros({n}, {i % 3 == 2 ? kBFloat16 : kFloat32, device}).requires_grad_());
  }
  nn::optim::SGD opt(params, 0.1);
  for (int bad : {-1, 0, 47, 48, 59}) {
    std::vector<Tensor> want;
    manual_seed(static_cast<uint64_t>(bad + 2));
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor g = (randn(params[i].shape()) * 1000).to(params[i].dtype());
      if (static_cast<int>(i) == bad) g.narrow(0, g.numel() - 1, 1).fill_(INFINITY);
      params[i].mutable_grad() = g.to(device);
      // Reference: each value times 1/256, rounded to the gradient's type.
      want.push_back((g.to(kFloat64) * (1.0 / 256)).to(g.dtype()).to(kFloat32));
    }
    GradScaler s(GradScalerOptions{.init_scale = 256});
    s.scale(ones({1}, {kFloat32, device}));
    s.unscale_(opt);
    const bool stepped = s.step(opt);
    INFO("bad gradient " << bad << " on " << device);
    CHECK(stepped == (bad < 0));
    int64_t wrong = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const auto got = params[i].grad().to(kFloat32).cpu().to_vector<float>();
      const auto exp = want[i].to_vector<float>();
      for (size_t j = 0; j < got.size(); ++j) wrong += !(got[j] == exp[j] || (std::isinf(got[j]) && std::isinf(exp[j])));
    }
    CHECK(wrong == 0);
    s.update();
    CHECK(s.get_scale() == (bad < 0 ? 256 : 128));
  }
}

}  // namespace amp_checks
