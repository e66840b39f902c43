// Saving and loading quantized models as safetensors. The file is the model's state
// dict (int8 weights, float32 scales, int32 zero points, float32 biases and any
// float layers left unquantized) with metadata {"ember.quantization": "dynamic-int8"}.
// Loading goes into a freshly quantized module of the same architecture (build the
// float model, quantize_dynamic it, then load): keys, shapes and dtypes must match
// exactly, and nothing is changed unless every check passes. See docs/errors.md.
#pragma once

#include "kernels/base/export.h"

#include <string>

#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::quant {

void save_quantized(const nn::Module& model, const std::string& path);

// Raises FormatError for a file that is not valid safetensors (the reader's
// messages), and ValueError "Error(s) in loading quantized state_dict for {type}:"
// followed by one line per problem: missing keys, unexpected keys, shape and dtype
// mismatches, and invalid scales or zero points.
void load_quantized(nn::Module& model, const std::string& path);
void load_quantized_state_dict(nn::Module& model, const nn::StateDict& state);

}  // namespace ember::quant

EMBER_API_END
