// Parameter initialisation, as torch.nn.init: each fills a tensor in place without
// recording autograd, from `gen` (the default generator if null).
#pragma once

#include "kernels/base/export.h"

#include "tensor/generator.h"
#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::nn::init {

void uniform_(Tensor& t, double low, double high, Generator* gen = nullptr);
void normal_(Tensor& t, double mean = 0, double stddev = 1, Generator* gen = nullptr);
void zeros_(Tensor& t);
void ones_(Tensor& t);
// (fan_in, fan_out) of a weight: dim 1 and dim 0 sizes times the receptive field.
std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& t);
// PyTorch's default for Linear and Conv weights: kaiming_uniform_ with a = sqrt(5),
// i.e. U(-b, b) with b = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)).
void kaiming_uniform_(Tensor& t, double a = 0, Generator* gen = nullptr);

}  // namespace ember::nn::init

EMBER_API_END
