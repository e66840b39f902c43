// gradcheck (see gradcheck.h). The numerical Jacobian perturbs one element of a
// private contiguous copy of each input at a time; the analytical one runs
// backward once per output element with a one-hot output gradient.
#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/engine.h"
#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::autograd {

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
    double* p = xs[i].data_ptr<double>();
    for (int64_t k = 0; k < xs[i].numel(); ++k) {
      const double orig = p[k];
      p[k] = orig + options.eps;
      std::vector<double> plus = f(xs).contiguous().to_vector<double>();
      p[k] = orig - options.eps;
      std::vector<double> minus = f(xs).contiguous().to_vector<double>();
      p[k] = orig;
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
