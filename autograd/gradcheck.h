// gradcheck: compares the gradients autograd computes with central finite
// differences, in float64. The whole Jacobian is built both ways (one backward per
// output element, two forward calls per input element), so keep inputs small.
#pragma once

#include "kernels/base/export.h"

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::autograd {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytical - numerical| <= atol + rtol * |numerical|
  double rtol = 1e-3;
};

// `f` maps the inputs to one output. Inputs must be float64, on any one device (CUDA
// too: the perturbations are one-element fills there); those that require grad are
// checked. Returns true when every Jacobian entry agrees; otherwise false,
// with the first disagreement described in *why.
bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {}, std::string* why = nullptr);

}  // namespace ember::autograd

EMBER_API_END
