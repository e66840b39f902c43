// The geometry a pad kernel receives (kernels/cpu/pad.h, kernels/cuda/pad.h): the
// output sizes, the input's strides and where each dim's coordinate map starts.
// Plain data, shared by both backends and passed to CUDA kernels by value.
#pragma once

#include <cstdint>

#include "kernels/base/strided.h"

namespace ember {

// The geometry of one pad call. maps + map_offset[d] holds out_sizes[d] entries: for
// output coordinate o along dim d, the input coordinate to read (in [0, in_size)), or
// -1 for "fill". in_strides are the input's strides in elements (any view).
struct PadGeometry {
  int ndim = 0;
  int64_t out_sizes[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t map_offset[kMaxDims] = {};
};

}  // namespace ember
