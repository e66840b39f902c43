// Initialisers (see init.h).
#include "nn/init.h"

#include <cmath>

#include "tensor/checks.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::nn::init {

void uniform_(Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard no_grad;
  Tensor u = rand(t.shape(), TensorOptions(is_floating(t.dtype()) ? t.dtype() : kFloat32), gen);
  t.copy_(u * (high - low) + low);
}

void normal_(Tensor& t, double mean, double stddev, Generator* gen) {
  NoGradGuard no_grad;
  Tensor z = randn(t.shape(), TensorOptions(is_floating(t.dtype()) ? t.dtype() : kFloat32), gen);
  t.copy_(z * stddev + mean);
}

void zeros_(Tensor& t) {
  NoGradGuard no_grad;
  t.fill_(0);
}

void ones_(Tensor& t) {
  NoGradGuard no_grad;
  t.fill_(1);
}

std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& t) {
  if (t.dim() < 2)
    throw ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.shape()[d];
  return {t.shape()[1] * receptive, t.shape()[0] * receptive};
}

void kaiming_uniform_(Tensor& t, double a, Generator* gen) {
  const int64_t fan_in = fan_in_and_out(t).first;
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = fan_in > 0 ? gain * std::sqrt(3.0 / static_cast<double>(fan_in)) : 0.0;
  uniform_(t, -bound, bound, gen);
}

}  // namespace ember::nn::init
