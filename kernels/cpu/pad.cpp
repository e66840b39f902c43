// Padding on the CPU (contract in pad.h). The output is walked as rows along its
// last dim, in parallel over rows. For each row the input offset of every other dim
// comes from its map (a -1 there makes the whole row fill); along the row the last
// dim's map gives each element's source, so a row is a gather, and constant padding
// in the middle of the row is a straight copy between two fills.
#include "kernels/cpu/pad.h"

#include <cstring>
#include <string>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

template <class U>
void pad_rows(const PadGeometry& g, const int64_t* maps, const U* x, U* y, U fill) {
  const int last = g.ndim - 1;
  const int64_t n = g.out_sizes[last];
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= g.out_sizes[d];
  const int64_t* last_map = maps + g.map_offset[last];
  const int64_t last_stride = g.in_strides[last];
  parallel_rows(rows, rows * n >= kParallelGrain, [&](int64_t r) {
    U* yr = y + r * n;
    int64_t off = 0, rest = r;
    bool fill_row = false;
    for (int d = last - 1; d >= 0; --d) {  // unravel r over the leading dims
      const int64_t o = rest % g.out_sizes[d];
      rest /= g.out_sizes[d];
      const int64_t s = maps[g.map_offset[d] + o];
      if (s < 0) fill_row = true;
      else off += s * g.in_strides[d];
    }
    if (fill_row) {
      for (int64_t j = 0; j < n; ++j) yr[j] = fill;
      return;
    }
    // The offset stays an integer until an element is read: an empty input may have
    // no data pointer (x + off would be undefined), and then every last-dim map
    // entry is -1, so nothing is read.
    for (int64_t j = 0; j < n; ++j) {
      const int64_t s = last_map[j];
      yr[j] = s < 0 ? fill : x[off + s * last_stride];
    }
  });
}

template <class U>
void pad_typed(const PadGeometry& g, const int64_t* maps, const void* x, void* y, uint64_t fill_bits) {
  U fill;
  std::memcpy(&fill, &fill_bits, sizeof(U));  // the low bytes on a little-endian machine
  pad_rows<U>(g, maps, static_cast<const U*>(x), static_cast<U*>(y), fill);
}

}  // namespace

void pad(size_t element_size, const PadGeometry& g, const int64_t* maps, const void* x, void* y,
         uint64_t fill_bits) {
  if (g.ndim == 0) throw ValueError("cpu::pad: needs at least one dim");
  for (int d = 0; d < g.ndim; ++d)
    if (g.out_sizes[d] == 0) return;
  switch (element_size) {
    case 1: return pad_typed<uint8_t>(g, maps, x, y, fill_bits);
    case 2: return pad_typed<uint16_t>(g, maps, x, y, fill_bits);
    case 4: return pad_typed<uint32_t>(g, maps, x, y, fill_bits);
    case 8: return pad_typed<uint64_t>(g, maps, x, y, fill_bits);
    default: throw ValueError("cpu::pad: element size must be 1, 2, 4 or 8 bytes, got " + std::to_string(element_size));
  }
}

}  // namespace ember::cpu
