// The CPU classification losses (kernels/cpu/loss.h) against a float64 log-softmax
// written here: per-sample cross-entropy and its gradient (softmax minus one-hot,
// scaled by the incoming gradient), the negative log-likelihood, ignore_index rows,
// extreme logits, central differences, and a bad target reported before anything is
// written.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cpu/loss.h"

namespace {

using ember::DType;

// log softmax of one row in long double, max subtracted.
std::vector<double> log_softmax(const double* x, int64_t c) {
  long double m = -INFINITY;
  for (int64_t j = 0; j < c; ++j) m = std::max<long double>(m, x[j]);
  long double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp((long double)x[j] - m);
  std::vector<double> r(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) r[size_t(j)] = double((long double)x[j] - m - std::log(s));
  return r;
}

struct Problem {
  int64_t n, c;
  std::vector<double> logits, grad;
  std::vector<int64_t> targets;
};

Problem make(int64_t n, int64_t c, double scale, int64_t ignore_index, std::mt19937& g) {
  Problem p{n, c, {}, {}, {}};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int64_t> cls(0, c - 1);
  for (int64_t i = 0; i < n * c; ++i) p.logits.push_back(double(float(u(g) * scale)));
  for (int64_t i = 0; i < n; ++i) {
    p.targets.push_back(i % 4 == 3 ? ignore_index : cls(g));
    p.grad.push_back(u(g));
  }
  return p;
}

double max_abs_diff(const std::vector<double>& want, const double* got, size_t count) {
  double d = 0;
  for (size_t i = 0; i < count; ++i) {
    const double e = std::abs(want[i] - got[i]);
    d = std::max(d, e != e ? INFINITY : e);
  }
  return d;
}

template <class T>
void check_cross_entropy(const Problem& p, int64_t ignore, double tol) {
  const DType dt = ember::dtype_of_v<T>;
  std::vector<double> want_loss, want_lse, want_grad;
  for (int64_t i = 0; i < p.n; ++i) {
    const auto ls = log_softmax(&p.logits[size_t(i * p.c)], p.c);
    const bool ignored = p.targets[size_t(i)] == ignore;
    want_loss.push_back(ignored ? 0.0 : -ls[size_t(p.targets[size_t(i)])]);
    want_lse.push_back(p.logits[size_t(i * p.c)] - ls[0]);
    for (int64_t j = 0; j < p.c; ++j)
      want_grad.push_back(ignored ? 0.0
                                  : (std::exp(ls[size_t(j)]) - (j == p.targets[size_t(i)])) *
                                        p.grad[size_t(i)]);
  }
  const std::vector<T> x(p.logits.begin(), p.logits.end()), gl(p.grad.begin(), p.grad.end());
  std::vector<T> loss(size_t(p.n), T(7)), stats(size_t(2 * p.n), T(7)),
      gx(size_t(p.n * p.c), T(7));
  REQUIRE(ember::cpu::cross_entropy_forward(dt, p.n, p.c, x.data(), p.targets.data(), ignore,
                                            loss.data(), stats.data()) == -1);
  REQUIRE(ember::cpu::cross_entropy_backward(dt, p.n, p.c, x.data(), p.targets.data(), ignore,
                                             stats.data(), gl.data(), gx.data()) == -1);
  // stats holds (row max, log sum exp(x - max)): the max exactly, the sum to tol.
  std::vector<double> dlse;
  int64_t wrong_max = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const T* row = x.data() + i * p.c;
    wrong_max += stats[size_t(2 * i)] != *std::max_element(row, row + p.c);
    dlse.push_back(double(stats[size_t(2 * i)]) + double(stats[size_t(2 * i + 1)]));
  }
  CHECK(wrong_max == 0);
  const std::vector<double> dl(loss.begin(), loss.end()), dg(gx.begin(), gx.end());
  double scale = 1;
  for (double v : want_lse) scale = std::max(scale, std::abs(v));
  CHECK(max_abs_diff(want_loss, dl.data(), dl.size()) <= tol * scale);
  CHECK(max_abs_diff(want_lse, dlse.data(), dlse.size()) <= tol * scale);
  CHECK(max_abs_diff(want_grad, dg.data(), dg.size()) <= tol);

  // nll_loss over the reference log-probabilities gives the same loss, and its
  // gradient is -grad at the target.
  std::vector<T> logp;
  for (int64_t i = 0; i < p.n; ++i)
    for (double v : log_softmax(&p.logits[size_t(i * p.c)], p.c)) logp.push_back(T(v));
  std::vector<T> nll(size_t(p.n), T(7)), gn(size_t(p.n * p.c), T(7));
  REQUIRE(ember::cpu::nll_loss_forward(dt, p.n, p.c, logp.data(), p.targets.data(), ignore,
                                       nll.data()) == -1);
  REQUIRE(ember::cpu::nll_loss_backward(dt, p.n, p.c, p.targets.data(), ignore, gl.data(),
                                        gn.data()) == -1);
  const std::vector<double> dn(nll.begin(), nll.end());
  CHECK(max_abs_diff(want_loss, dn.data(), dn.size()) <= tol * scale);
  int64_t wrong = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const int64_t t = p.targets[size_t(i)];
    for (int64_t j = 0; j < p.c; ++j)
      wrong += gn[size_t(i * p.c + j)] != (t != ignore && j == t ? -gl[size_t(i)] : T(0));
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("cross_entropy and nll_loss match a float64 log-softmax", "[kernels][loss]") {
  std::mt19937 g(21);
  for (int64_t ignore : {int64_t(-100), int64_t(2)})
    for (auto [n, c, scale] : {std::tuple<int64_t, int64_t, double>{1, 10, 3.0},
                               {100, 10, 3.0},
                               {7, 1, 1.0},
                               {33, 1000, 5.0},
                               {5, 10, 1000.0},      // exp would overflow without the max
                               {4000, 10, 3.0}}) {   // enough rows for the team
      INFO("n=" << n << " c=" << c << " scale=" << scale << " ignore=" << ignore);
      const Problem p = make(n, c, scale, ignore, g);
      check_cross_entropy<double>(p, ignore, 1e-12);
      check_cross_entropy<float>(p, ignore, 1e-5);
    }
}

TEST_CASE("cross_entropy keeps its precision for logits near 1e6", "[kernels][loss]") {
  // The loss is (max - x[target]) + log sum, exact near the max, and the gradient
  // exp((x - max) - log sum): one number lse = max + log sum loses max's low bits
  // (float32 spacing 0.0625 near 1e6: the loss up to 0.03 off, the gradient's
  // probabilities up to 3%), where PyTorch's log_softmax loses nothing.
  std::mt19937 g(9);
  Problem p = make(64, 10, 3.0, -100, g);
  for (double& v : p.logits) v = double(float(1e6 + v));
  std::vector<float> x(p.logits.begin(), p.logits.end()), gl(p.grad.begin(), p.grad.end()), loss(64),
      stats(128), gx(640);
  REQUIRE(ember::cpu::cross_entropy_forward(DType::Float32, 64, 10, x.data(), p.targets.data(), -100,
                                            loss.data(), stats.data()) == -1);
  REQUIRE(ember::cpu::cross_entropy_backward(DType::Float32, 64, 10, x.data(), p.targets.data(), -100,
                                             stats.data(), gl.data(), gx.data()) == -1);
  double worst_loss = 0, worst_grad = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const auto ls = log_softmax(&p.logits[size_t(i * 10)], 10);
    const int64_t t = p.targets[size_t(i)];
    worst_loss = std::max(worst_loss, std::abs((t == -100 ? 0.0 : -ls[size_t(t)]) - double(loss[size_t(i)])));
    for (int64_t j = 0; j < 10; ++j) {
      const double want = t == -100 ? 0.0 : (std::exp(ls[size_t(j)]) - (j == t)) * p.grad[size_t(i)];
      worst_grad = std::max(worst_grad, std::abs(want - double(gx[size_t(i * 10 + j)])));
    }
  }
  CHECK(worst_loss <= 1e-5);
  CHECK(worst_grad <= 1e-6);
}

TEST_CASE("cross_entropy gradient matches central differences", "[kernels][loss]") {
  std::mt19937 g(4);
  Problem p = make(6, 5, 2.0, -100, g);
  std::vector<double> stats(12), gx(30);
  auto loss = [&] {
    std::vector<double> l(6), s(12);
    ember::cpu::cross_entropy_forward(DType::Float64, 6, 5, p.logits.data(), p.targets.data(), -100,
                                      l.data(), s.data());
    double sum = 0;
    for (int i = 0; i < 6; ++i) sum += p.grad[size_t(i)] * l[size_t(i)];
    return sum;
  };
  std::vector<double> l(6);
  ember::cpu::cross_entropy_forward(DType::Float64, 6, 5, p.logits.data(), p.targets.data(), -100,
                                    l.data(), stats.data());
  ember::cpu::cross_entropy_backward(DType::Float64, 6, 5, p.logits.data(), p.targets.data(), -100,
                                     stats.data(), p.grad.data(), gx.data());
  for (size_t i = 0; i < p.logits.size(); ++i) {
    const double keep = p.logits[i], h = 1e-6;
    p.logits[i] = keep + h;
    const double up = loss();
    p.logits[i] = keep - h;
    const double down = loss();
    p.logits[i] = keep;
    CHECK(gx[i] == Approx((up - down) / (2 * h)).margin(1e-8));
  }
}

TEST_CASE("a target out of range is reported before anything is written", "[kernels][loss]") {
  const std::vector<float> x(4 * 3, 0.5f), gl(4, 1.0f), stats_in(8, 1.0f);
  for (int64_t bad : {int64_t(3), int64_t(-1), int64_t(1) << 40}) {
    const std::vector<int64_t> t = {0, -100, bad, 7};  // samples 2 and 3 are bad: 2 is reported
    std::vector<float> loss(4, 9.0f), stats(8, 9.0f), gx(12, 9.0f);
    CHECK(ember::cpu::cross_entropy_forward(DType::Float32, 4, 3, x.data(), t.data(), -100,
                                            loss.data(), stats.data()) == 2);
    CHECK(ember::cpu::cross_entropy_backward(DType::Float32, 4, 3, x.data(), t.data(), -100,
                                             stats_in.data(), gl.data(), gx.data()) == 2);
    CHECK(ember::cpu::nll_loss_forward(DType::Float32, 4, 3, x.data(), t.data(), -100,
                                       loss.data()) == 2);
    CHECK(ember::cpu::nll_loss_backward(DType::Float32, 4, 3, t.data(), -100, gl.data(),
                                        gx.data()) == 2);
    CHECK(std::all_of(loss.begin(), loss.end(), [](float v) { return v == 9.0f; }));
    CHECK(std::all_of(stats.begin(), stats.end(), [](float v) { return v == 9.0f; }));
    CHECK(std::all_of(gx.begin(), gx.end(), [](float v) { return v == 9.0f; }));
  }
  // ignore_index itself may lie outside [0, c).
  const std::vector<int64_t> t = {0, -100, 2, -100};
  std::vector<float> loss(4), stats(8);
  CHECK(ember::cpu::cross_entropy_forward(DType::Float32, 4, 3, x.data(), t.data(), -100,
                                          loss.data(), stats.data()) == -1);
  CHECK(loss[1] == 0.0f);
  CHECK_THROWS_WITH(ember::cpu::cross_entropy_forward(DType::Int32, 1, 1, nullptr, t.data(), -100,
                                                      nullptr, nullptr),
                    "cross_entropy_forward: no kernel for device cpu and dtype int32");
}
