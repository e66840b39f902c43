// gradcheck (see gradcheck.h). The numerical Jacobian perturbs one element of a
// private contiguous copy of each input at a time; the analytical one runs
// backward once per output element with a one-hot output gradient. Inputs may live
// on any device: values cross to the host only through copies (to_vector, to()).
#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/engine.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::autograd {
namespace {

// Writes v into element k (row-major) of the contiguous float64 tensor x: through its
// pointer on the CPU, by a one-element fill elsewhere (the host cannot write a GPU's
// memory).
void set_element(Tensor& x, int64_t k, double v) {
  if (x.device().is_cpu()) x.data_ptr<double>()[k] = v;
  else x.reshape({-1}).select(0, k).fill_(v);
}

}  // namespace

bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options, std::string* why) {
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) {
    if (t.dtype() != kFloat64 && t.requires_grad())
      throw ValueError(msg("gradcheck: inputs that require grad must be float64, got ", t.dtype()));
    Tensor c = t.detach().clone();
    if (t.requires_grad()) c.requires_grad_(true);
    xs.push_back(c);
  }
  Tensor y = f(xs);
  if (y.dtype() != kFloat64) throw ValueError(msg("gradcheck: the output must be float64, got ", y.dtype()));
  const int64_t ny = y.numel();

  // Analytical: row j of the Jacobian is the gradient of y[j].
  std::vector<std::vector<double>> analytical(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) analytical[i].assign(static_cast<size_t>(xs[i].numel() * ny), 0.0);
  if (y.requires_grad())
    for (int64_t j = 0; j < ny; ++j) {
      for (Tensor& x : xs)
        if (x.requires_grad()) x.set_grad(Tensor());
      Tensor onehot = zeros(y.shape(), kFloat64);
      onehot.data_ptr<double>()[j] = 1.0;
      if (!y.device().is_cpu()) onehot = onehot.to(y.device());
      backward({y}, {onehot}, /*retain_graph=*/true);
      for (size_t i = 0; i < xs.size(); ++i) {
        if (!xs[i].requires_grad() || !xs[i].grad().defined()) continue;
        std::vector<double> g = xs[i].grad().contiguous().to_vector<double>();
        for (size_t k = 0; k < g.size(); ++k) analytical[i][k * ny + j] = g[k];
      }
    }

  // Numerical, by central differences.
  NoGradGuard no_grad;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].requires_grad()) continue;
    const std::vector<double> values = xs[i].contiguous().to_vector<double>();
    for (int64_t k = 0; k < xs[i].numel(); ++k) {
      const double orig = values[static_cast<size_t>(k)];
      set_element(xs[i], k, orig + options.eps);
      std::vector<double> plus = f(xs).contiguous().to_vector<double>();
      set_element(xs[i], k, orig - options.eps);
      std::vector<double> minus = f(xs).contiguous().to_vector<double>();
      set_element(xs[i], k, orig);
      for (int64_t j = 0; j < ny; ++j) {
        const double numerical = (plus[j] - minus[j]) / (2 * options.eps);
        const double a = analytical[i][k * ny + j];
        if (!(std::fabs(a - numerical) <= options.atol + options.rtol * std::fabs(numerical))) {
          if (why)
            *why = msg("Jacobian mismatch for output ", j, " with respect to input ", i, ", element ", k,
                       ": numerical ", numerical, ", analytical ", a);
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace ember::autograd
