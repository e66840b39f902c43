// The IDX reader: MNIST-format files (a magic number naming the element type and
// rank, big-endian uint32 dims, then the elements in big-endian row-major order),
// plain or gzipped. Every size in the header is checked against the file itself.
#pragma once

#include "kernels/base/export.h"

#include <string>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::data {

// Reads the IDX file at `path` into a new contiguous CPU tensor with the file's
// dims as its shape. Element types: 0x08 uint8, 0x09 int8, 0x0c int32, 0x0d float32,
// 0x0e float64 (0x0b int16 has no Ember dtype). Ranks 1 to 4; a dim may be 0.
// Anything wrong with the file raises FormatError naming it (docs/errors.md,
// "Data files"); nothing is allocated for a header that the data does not back.
Tensor read_idx(const std::string& path);

}  // namespace ember::data

EMBER_API_END
