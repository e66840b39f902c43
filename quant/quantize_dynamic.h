// quantize_dynamic: PyTorch's torch.ao.quantization.quantize_dynamic for Ember.
// Walks a model and replaces every child of the chosen layer types (Linear) with its
// dynamically quantized version, in place and recursively, then returns the model.
#pragma once

#include "kernels/base/export.h"

#include <memory>
#include <set>
#include <string>

#include "nn/module.h"
#include "quant/dynamic_linear.h"

EMBER_API_BEGIN

namespace ember::quant {

// types: layer type names to quantize; only "Linear" is supported (ValueError for
// another name); dtype: only kInt8 (DTypeError otherwise). A model whose root is
// itself a Linear cannot be changed in place: a new DynamicQuantizedLinear is
// returned and the float layer is left as it was. Quantized layers are eval-only.
std::shared_ptr<nn::Module> quantize_dynamic(std::shared_ptr<nn::Module> model,
                                             const std::set<std::string>& types = {"Linear"},
                                             DType dtype = kInt8, QScheme qscheme = QScheme::PerChannel);

}  // namespace ember::quant

EMBER_API_END
