// Optimizers against torch.optim: a [2, 3] float64 parameter stepped with fixed
// gradients, every configuration's trajectory compared with the values torch 1.13
// computed (tests/nn/make_optim_reference.py -> data/optim_reference.json); plain
// SGD and momentum also by hand. Then state dicts (a loaded state continues
// exactly), StepLR, zero_grad, parameters without gradients, and argument errors.
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember.h"
#include "nn/nn.h"
#include "kernels/cpu/optim.h"
#include "../kernels/isa_guard.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/nn/data in the source tree (see tests/nn/meson.build)"
#endif

using namespace ember;
using namespace ember::nn::optim;
using json = nlohmann::json;
using Catch::Matchers::Message;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

const json& reference() {
  static const json j = [] {
    std::ifstream in(std::string(EMBER_TEST_DATA_DIR) + "/optim_reference.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

// A [2, 3] tensor from the JSON's nested lists.
Tensor matrix(const json& rows, DType dt = kFloat64) {
  std::vector<double> v;
  for (const auto& row : rows)
    for (const auto& x : row) v.push_back(x.get<double>());
  return tensor(v, {2, 3}).to(dt);
}

std::vector<double> values(const Tensor& t) { return t.detach().to(kFloat64).to_vector<double>(); }

// The optimizer a reference case names, with torch's defaults for what it leaves out.
std::unique_ptr<Optimizer> make(const json& c, const Tensor& p) {
  const std::string kind = c.at("optimizer");
  const json& h = c.at("hyper");
  const double lr = h.at("lr");
  if (kind == "SGD") {
    SGDOptions o;
    o.momentum = h.value("momentum", 0.0);
    o.dampening = h.value("dampening", 0.0);
    o.weight_decay = h.value("weight_decay", 0.0);
    o.nesterov = h.value("nesterov", false);
    return std::make_unique<SGD>(std::vector<Tensor>{p}, lr, o);
  }
  AdamOptions o;
  if (h.contains("betas")) o.beta1 = h.at("betas")[0], o.beta2 = h.at("betas")[1];
  o.eps = h.value("eps", 1e-8);
  o.amsgrad = h.value("amsgrad", false);
  if (kind == "Adam") {
    o.weight_decay = h.value("weight_decay", 0.0);
    return std::make_unique<Adam>(std::vector<Tensor>{p}, lr, o);
  }
  REQUIRE(kind == "AdamW");
  o.weight_decay = h.value("weight_decay", 0.01);  // torch's AdamW default
  return std::make_unique<AdamW>(std::vector<Tensor>{p}, lr, o);
}

void check_row(const Tensor& p, const json& want, double tol) {
  const std::vector<double> got = values(p);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i].get<double>()).margin(tol).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("SGD, Adam and AdamW follow torch.optim step for step", "[nn][optim]") {
  const json& ref = reference();
  const json& grads = ref.at("grads");
  for (const auto& [name, c] : ref.at("cases").items()) {
    for (DType dt : {kFloat64, kFloat32}) {
      INFO(name << " in " << dt);
      Tensor p = matrix(ref.at("p0"), dt).requires_grad_();
      auto opt = make(c, p);
      const double tol = dt == kFloat64 ? 1e-13 : 2e-6;
      for (size_t k = 0; k < grads.size(); ++k) {
        INFO("step " << k + 1);
        p.set_grad(matrix(grads[k], dt));
        opt->step();
        CHECK(p.dtype() == dt);
        check_row(p, c.at("params")[k], tol);
      }
    }
  }
}

// cpu::adam_step's vectorized loop against the update written out in float64, on
// lengths that leave every tail size and on one long enough for the thread team,
// for Adam, AMSGrad and AdamW, over several steps (m, v and vmax carried), at every
// instruction-set level this CPU runs (4, 8 and 16 lanes): the same bits at each,
// as vector division and square root round as the scalar ones do.
TEST_CASE("adam_step matches the update in float64 on every length", "[nn][optim]") {
  ember::testing::IsaGuard guard;
  std::map<std::pair<int64_t, int>, std::vector<float>> first_level;
  for (const char* level : {"generic", "avx2", "avx512"}) {
  if (!cpu::set_isa(level)) continue;
  for (int64_t n : {1, 3, 4, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 40000}) {
    for (int variant = 0; variant < 3; ++variant) {
      INFO("level " << level << ", n " << n << ", " << (variant == 0 ? "adam" : variant == 1 ? "amsgrad" : "adamw"));
      const size_t len = size_t(n);
      std::vector<float> p(len), m(len, 0.0f), v(len, 0.0f), vmax(len, 0.0f), g(len);
      std::vector<double> pd(len), md(len, 0.0), vd(len, 0.0), vmaxd(len, 0.0);
      for (int64_t i = 0; i < n; ++i) p[size_t(i)] = float(std::sin(0.37 * double(i) + 1.0)), pd[size_t(i)] = p[size_t(i)];
      const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = variant == 0 ? 0.0 : 0.05;
      double worst = 0;
      for (int64_t t = 1; t <= 4; ++t) {
        for (int64_t i = 0; i < n; ++i) g[size_t(i)] = float(std::cos(0.11 * double(i * t) + double(t)) * (t == 2 ? 1e-3 : 1.0));
        const AdamParams h{lr, b1, b2, eps, wd, variant == 2, variant == 1, t};
        cpu::adam_step(DType::Float32, n, p.data(), g.data(), m.data(), v.data(), variant == 1 ? vmax.data() : nullptr, h);
        for (int64_t i = 0; i < n; ++i) {
          const size_t k = size_t(i);
          double pi = pd[k], gi = g[k];
          if (variant == 2) pi *= 1 - lr * wd;
          else gi += wd * pi;
          md[k] = b1 * md[k] + (1 - b1) * gi;
          vd[k] = b2 * vd[k] + (1 - b2) * gi * gi;
          double vs = vd[k];
          if (variant == 1) vs = vmaxd[k] = std::max(vmaxd[k], vd[k]);
          const double bc1 = 1 - std::pow(b1, double(t)), bc2 = 1 - std::pow(b2, double(t));
          pd[k] = pi - lr / bc1 * md[k] / (std::sqrt(vs) / std::sqrt(bc2) + eps);
          worst = std::max(worst, std::abs(double(p[k]) - pd[k]) / std::max(1e-3, std::abs(pd[k])));
        }
      }
      CHECK(worst < 1e-5);
      const auto [it, inserted] = first_level.emplace(std::make_pair(n, variant), p);
      if (!inserted) CHECK(std::memcmp(it->second.data(), p.data(), len * sizeof(float)) == 0);
    }
  }
  }
}

TEST_CASE("SGD by hand: plain and with momentum", "[nn][optim]") {
  Tensor p = tensor({1.0f, -2.0f}).requires_grad_();
  SGD plain({p}, 0.5);
  p.set_grad(tensor({0.25f, 1.0f}));
  plain.step();
  CHECK(values(p) == std::vector<double>{1 - 0.5 * 0.25, -2 - 0.5 * 1});
  // The update happens in place: the same storage, a newer version.
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());

  // momentum 0.5: buf1 = g1, buf2 = 0.5 g1 + g2 (no dampening), p -= lr buf.
  Tensor q = tensor({0.0f}).requires_grad_();
  SGD mom({q}, 0.1, {.momentum = 0.5});
  q.set_grad(tensor({1.0f}));
  mom.step();
  CHECK(q.item<double>() == Approx(-0.1).epsilon(1e-7));
  q.set_grad(tensor({2.0f}));
  mom.step();
  CHECK(q.item<double>() == Approx(-0.1 - 0.1 * (0.5 * 1 + 2)).epsilon(1e-7));
}

TEST_CASE("a loaded optimizer state continues exactly where the original was", "[nn][optim]") {
  const json& ref = reference();
  const json& grads = ref.at("grads");
  for (const char* name : {"sgd_momentum", "adam_amsgrad", "adamw_weight_decay"}) {
    INFO(name);
    const json& c = ref.at("cases").at(name);
    Tensor p = matrix(ref.at("p0")).requires_grad_();
    auto opt = make(c, p);
    for (size_t k = 0; k < 2; ++k) {
      p.set_grad(matrix(grads[k]));
      opt->step();
    }
    const nn::StateDict saved = opt->state_dict();

    // A fresh optimizer on a copy of the parameter, given the saved state.
    Tensor q = p.detach().clone().requires_grad_();
    json fresh = c;
    fresh["hyper"]["lr"] = 123.0;  // overwritten by the load
    auto other = make(fresh, q);
    other->load_state_dict(saved);
    CHECK(other->lr() == c.at("hyper").at("lr").get<double>());
    for (size_t k = 2; k < grads.size(); ++k) {
      p.set_grad(matrix(grads[k]));
      q.set_grad(matrix(grads[k]));
      opt->step();
      other->step();
      CHECK(values(q) == values(p));
      check_row(q, c.at("params")[k], 1e-13);
    }
    // The saved state was a copy: stepping on did not change it.
    const nn::StateDict again = opt->state_dict();
    bool changed = false;
    for (size_t i = 0; i < saved.size(); ++i)
      if (saved[i].first.rfind("state.", 0) == 0) changed = changed || values(saved[i].second) != values(again[i].second);
    CHECK(changed);
  }
}

TEST_CASE("optimizer state_dict names: lr, hyperparameters, state.<i>.<name>", "[nn][optim]") {
  Tensor a = zeros({2}, kFloat64).requires_grad_(), b = zeros({3}, kFloat64).requires_grad_();
  Adam adam({a, b}, 0.01, {.amsgrad = true});
  std::vector<std::string> names;
  for (const auto& [n, t] : adam.state_dict()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"lr", "amsgrad", "beta1", "beta2", "eps", "weight_decay"});
  // Only b has a gradient: only b gets state, and a is left alone.
  b.set_grad(ones({3}, kFloat64));
  adam.step();
  names.clear();
  std::map<std::string, Tensor> sd;
  for (const auto& [n, t] : adam.state_dict()) names.push_back(n), sd[n] = t;
  CHECK(names == std::vector<std::string>{"lr", "amsgrad", "beta1", "beta2", "eps", "weight_decay", "state.1.exp_avg",
                                          "state.1.exp_avg_sq", "state.1.max_exp_avg_sq", "state.1.step"});
  CHECK(values(a) == std::vector<double>{0, 0});
  CHECK(sd.at("state.1.step").item<double>() == 1);
  CHECK(sd.at("lr").item<double>() == 0.01);
  CHECK(sd.at("amsgrad").item<double>() == 1);
  // First Adam step with gradient 1: m = 1 - beta1, v = 1 - beta2, and the
  // bias-corrected step is lr m / (1 - beta1) / (sqrt(v / (1 - beta2)) + eps) = lr / (1 + eps).
  for (double v : values(sd.at("state.1.exp_avg"))) CHECK(v == Approx(0.1).epsilon(1e-14));
  for (double v : values(sd.at("state.1.exp_avg_sq"))) CHECK(v == Approx(0.001).epsilon(1e-14));
  for (double v : values(sd.at("state.1.max_exp_avg_sq"))) CHECK(v == Approx(0.001).epsilon(1e-14));
  for (double v : values(b)) CHECK(v == Approx(-0.01 / (1 + 1e-8)).epsilon(1e-14));

  SGD sgd({a}, 0.1, {.momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
  names.clear();
  for (const auto& [n, t] : sgd.state_dict()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"lr", "dampening", "momentum", "nesterov", "weight_decay"});
  a.set_grad(ones({2}, kFloat64));
  sgd.step();
  CHECK(sgd.state_dict().back().first == "state.0.momentum_buffer");
}

TEST_CASE("optimizer load_state_dict errors leave the optimizer as it was", "[nn][optim][errors]") {
  Tensor p = zeros({2, 3}).requires_grad_();
  SGD sgd({p}, 0.1, {.momentum = 0.9});
  Adam adam({p}, 0.01);
  p.set_grad(ones({2, 3}));
  adam.step();
  const nn::StateDict before = adam.state_dict();
  auto unchanged = [&] {
    const nn::StateDict now = adam.state_dict();
    REQUIRE(now.size() == before.size());
    for (size_t i = 0; i < now.size(); ++i) {
      INFO(now[i].first);
      CHECK(now[i].first == before[i].first);
      CHECK(values(now[i].second) == values(before[i].second));
    }
  };
  EXPECT_ERROR(adam.load_state_dict(sgd.state_dict()), ValueError,
               "optimizer state_dict: unknown hyperparameter 'dampening'");
  unchanged();
  EXPECT_ERROR(adam.load_state_dict({{"lr", zeros({2})}}), ValueError,
               "optimizer state_dict: hyperparameter 'lr' is not a scalar");
  EXPECT_ERROR(adam.load_state_dict({{"state.3.exp_avg", zeros({2, 3})}}), ValueError,
               "optimizer state_dict: state for parameter 3 but the optimizer has 1 parameters");
  EXPECT_ERROR(adam.load_state_dict({{"lr", full({}, 0.5)}, {"state.0.exp_avg", zeros({3})}}), ShapeError,
               "optimizer state_dict: state.0.exp_avg has shape [3] but parameter 0 has shape [2, 3]");
  for (const char* key : {"state.0", "state.x.exp_avg", "state..exp_avg", "state.0.", "state.99999999999999999999.m"}) {
    INFO(key);
    EXPECT_ERROR(adam.load_state_dict({{key, zeros({2, 3})}}), ValueError,
                 std::string("optimizer state_dict: malformed key '") + key + "'");
  }
  unchanged();
  CHECK(adam.lr() == 0.01);
}

TEST_CASE("StepLR multiplies the learning rate by gamma every step_size steps, as torch", "[nn][optim]") {
  const json& ref = reference().at("step_lr");
  Tensor p = zeros({1}).requires_grad_();
  SGD sgd({p}, ref.at("lr").get<double>());
  StepLR sched(sgd, ref.at("step_size").get<int64_t>(), ref.at("gamma").get<double>());
  CHECK(sched.last_epoch() == 0);
  const std::vector<double> lrs = ref.at("lrs");
  for (size_t i = 0; i < lrs.size(); ++i) {
    sched.step();
    CHECK(sched.last_epoch() == static_cast<int64_t>(i + 1));
    CHECK(sched.get_last_lr() == Approx(lrs[i]).epsilon(1e-15));
    CHECK(sgd.lr() == sched.get_last_lr());
  }
  // The optimizer steps with the scheduled rate: 0.0125 * 2.
  p.set_grad(full({1}, 2.0));
  sgd.step();
  CHECK(p.item<double>() == Approx(-0.025).epsilon(1e-6));
  EXPECT_ERROR(StepLR(sgd, 0), ValueError, "StepLR: step_size must be positive, got 0");
}

TEST_CASE("StepLR state_dict: a restored scheduler continues the schedule", "[nn][optim]") {
  Tensor p = zeros({1}).requires_grad_();
  SGD sgd({p}, 0.1), other_sgd({p}, 0.1);
  StepLR sched(sgd, 2, 0.5);
  for (int i = 0; i < 3; ++i) sched.step();
  const nn::StateDict saved = sched.state_dict();
  REQUIRE(saved.size() == 2);
  CHECK(saved[0].first == "last_epoch");
  CHECK(saved[1].first == "base_lr");
  // A fresh scheduler made after the optimizer's lr had changed still uses the saved base.
  other_sgd.set_lr(sgd.lr());
  StepLR restored(other_sgd, 2, 0.5);
  restored.load_state_dict(saved);
  CHECK(restored.last_epoch() == 3);
  for (int i = 0; i < 3; ++i) {
    sched.step();
    restored.step();
    CHECK(other_sgd.lr() == sgd.lr());
  }
  CHECK(sgd.lr() == 0.1 * 0.125);
  EXPECT_ERROR(restored.load_state_dict({}), ValueError, "StepLR.load_state_dict: missing key 'last_epoch'");
  EXPECT_ERROR(restored.load_state_dict({{"last_epoch", full({}, int64_t{-1}, kInt64)}, {"base_lr", full({}, 0.1)}}),
               ValueError, "StepLR.load_state_dict: last_epoch must be non-negative, got -1");
  CHECK(restored.last_epoch() == 6);  // a refused state changes nothing
}

TEST_CASE("optimizer zero_grad; parameters without a gradient are skipped", "[nn][optim]") {
  manual_seed(9);
  nn::Network net;
  SGD sgd(net.parameters(), 0.1);
  Generator g(3);
  const Tensor x = rand({2, 1, 28, 28}, kFloat32, &g);
  net(x).sum().backward();
  // One step equals p - lr * grad, parameter by parameter.
  std::vector<std::vector<double>> expected;
  for (const Tensor& p : net.parameters()) {
    std::vector<double> v = values(p), gr = values(p.grad());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(v[i] - static_cast<float>(0.1) * gr[i]);
    expected.push_back(v);
  }
  sgd.step();
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::vector<double> got = values(net.parameters()[i]);
    for (size_t k = 0; k < got.size(); k += 101) CHECK(got[k] == Approx(expected[i][k]).margin(1e-7));
  }
  sgd.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : net.parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().abs().max().item<double>() == 0);
  }
  // A step with zero gradients changes nothing (no weight decay, no momentum).
  const std::vector<double> w = values(net.fc1->weight);
  sgd.step();
  CHECK(values(net.fc1->weight) == w);
  sgd.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
  // No gradients at all: nothing moves, even with momentum and weight decay.
  SGD heavy(net.parameters(), 0.1, {.momentum = 0.9, .weight_decay = 0.5});
  heavy.step();
  CHECK(values(net.fc1->weight) == w);
  CHECK(heavy.state_dict().size() == 5);  // lr and the four hyperparameters, no state
  // Only the output layer's gradient: only it moves.
  net.out->bias.set_grad(ones({10}));
  heavy.step();
  CHECK(values(net.fc1->weight) == w);
  CHECK(values(net.out->bias) != std::vector<double>(10, 0.0));
}

TEST_CASE("optimizer argument errors", "[nn][optim][errors]") {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_ERROR(SGD({}, 0.1), ValueError, "optimizer got an empty parameter list");
  EXPECT_ERROR(SGD({p}, -0.1), ValueError, "Invalid learning rate: -0.1");
  EXPECT_ERROR(SGD({p}, 0.1, {.momentum = -0.5}), ValueError, "Invalid momentum value: -0.5");
  EXPECT_ERROR(SGD({p}, 0.1, {.weight_decay = -1}), ValueError, "Invalid weight_decay value: -1");
  EXPECT_ERROR(SGD({p}, 0.1, {.nesterov = true}), ValueError, "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_ERROR(SGD({p}, 0.1, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}), ValueError,
               "Nesterov momentum requires a momentum and zero dampening");
  EXPECT_ERROR(Adam({p}, -1), ValueError, "Invalid learning rate: -1");
  EXPECT_ERROR(Adam({p}, 0.1, {.eps = -1e-8}), ValueError, "Invalid epsilon value: -1e-08");
  EXPECT_ERROR(Adam({p}, 0.1, {.beta1 = 1.5}), ValueError, "Invalid beta parameter at index 0: 1.5");
  EXPECT_ERROR(Adam({p}, 0.1, {.beta2 = -0.1}), ValueError, "Invalid beta parameter at index 1: -0.1");
  EXPECT_ERROR(AdamW({p}, 0.1, {.weight_decay = -0.01}), ValueError, "Invalid weight_decay value: -0.01");

  // Steps that cannot update the parameter in place.
  Tensor t = zeros({3, 2}).t().requires_grad_();
  t.set_grad(ones({2, 3}));
  EXPECT_ERROR(SGD({t}, 0.1).step(), ValueError, "SGD.step: parameters must be contiguous");
  Tensor m = zeros({2}, kMeta).requires_grad_();
  m.set_grad(zeros({2}, kMeta));
  EXPECT_ERROR(Adam({m}).step(), NotImplementedError, "Adam.step: no kernel for device meta and dtype float32");
  EXPECT_ERROR(AdamW({m}).step(), NotImplementedError, "AdamW.step: no kernel for device meta and dtype float32");
}

// torch applies (1 - beta1) and (1 - beta2) as doubles, rounded once to float32;
// rounding beta to float32 first would make 1 - 0.999f = 0.00099998713, 200 ulp off.
TEST_CASE("Adam in float32: the first moments are (1 - beta) g as torch rounds them", "[nn][optim]") {
  Tensor p = zeros({1}).requires_grad_();
  Adam adam({p}, 0.01);
  p.set_grad(ones({1}));
  adam.step();
  std::map<std::string, Tensor> sd;
  for (const auto& [n, t] : adam.state_dict()) sd[n] = t;
  // torch 1.13: torch.optim.Adam on float32 gives exp_avg 0.1f, exp_avg_sq 0.001f.
  CHECK(sd.at("state.0.exp_avg").item<float>() == 0.1f);
  CHECK(sd.at("state.0.exp_avg_sq").item<float>() == 0.001f);
}
