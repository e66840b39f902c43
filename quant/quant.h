// The quant layer in one include: parameters, quantized tensors, the int8 Linear,
// quantize_dynamic and saving/loading quantized models. docs/quant.md explains them.
#pragma once

#include "quant/conv_integer.h"
#include "quant/dynamic_linear.h"
#include "quant/linear_int8.h"
#include "quant/matmul_integer.h"
#include "quant/qparams.h"
#include "quant/quantize_dynamic.h"
#include "quant/quantize_linear.h"
#include "quant/quantized_tensor.h"
#include "quant/serialize.h"
