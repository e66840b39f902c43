// N-d padding and cropping (the forward of ember::pad) on the CPU: every output
// element reads the input element its per-dim source coordinates name, or the fill
// value where one of them is -1. The front-end builds those coordinate maps, one per
// dim, from the pads and the mode (constant, reflect, replicate), so the kernel
// knows nothing of modes. Algorithm in pad.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/base/pad_geometry.h"

namespace ember::cpu {

// y (contiguous, out_sizes) from x; elements of element_size bytes (1, 2, 4 or 8);
// fill_bits holds the fill element's bytes in its low element_size bytes.
void pad(size_t element_size, const PadGeometry& g, const int64_t* maps, const void* x, void* y,
         uint64_t fill_bits);

}  // namespace ember::cpu
