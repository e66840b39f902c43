// Turning tensors into the StridedLoop a kernel walks: right-aligned broadcasting
// (stride 0 where an input is broadcast), strides in bytes, size-1 dims dropped and
// adjacent dims merged wherever every operand allows it.
#pragma once

#include <vector>

#include "kernels/base/strided.h"
#include "tensor/tensor.h"

namespace ember {

// operands[0] is the output and must have exactly `shape`; the others broadcast to it.
StridedLoop make_loop(const Shape& shape, const std::vector<const Tensor*>& operands);

}  // namespace ember
