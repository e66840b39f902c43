// NumPy's .npy files: one array per file, a small text header (element type,
// memory order, shape) followed by the raw values. ember-run reads its inputs
// and writes its outputs in this format, so any NumPy user can feed a model
// and read its results. The reader trusts nothing in the file: every size is
// checked against the file before anything is allocated (docs/errors.md).
#pragma once

#include "kernels/base/export.h"

#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::serialize {

// Reads an .npy file (format versions 1.0, 2.0 and 3.0; little-endian or
// byte-order-free types: float32, float64, float16, int8, uint8, int32, int64,
// bool; C or Fortran order) into a contiguous CPU tensor.
Tensor load_npy(const std::string& path);
// Parses the bytes of an .npy file; `name` stands for the file in errors.
Tensor parse_npy(const std::string& bytes, const std::string& name);

// Writes `t` (any device) as format 1.0 (2.0 if the header needs it), atomically
// (serialize::AtomicFile). NumPy has no bfloat16: a bfloat16 tensor is written
// as float32, which holds every bfloat16 value exactly.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace ember::serialize

EMBER_API_END
