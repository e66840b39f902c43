// Building and coalescing StridedLoops.
#include "tensor/strided_loop.h"

#include <cstring>

#include "tensor/checks.h"

namespace ember {

StridedLoop make_loop(const Shape& shape, const std::vector<const Tensor*>& operands) {
  StridedLoop L;
  const int nops = static_cast<int>(operands.size());
  const int nd = static_cast<int>(shape.size());
  // Any zero dim makes the loop empty; the product is formed only without one (the
  // other dims of an empty tensor may be huge: their product could overflow).
  int64_t numel = 1;
  for (int64_t s : shape) numel = s == 0 ? 0 : numel;
  if (numel != 0)
    for (int64_t s : shape) numel *= s;
  L.numel = numel;
  for (int o = 0; o < nops; ++o) {
    const Tensor& t = *operands[o];
    if (o > 0 && t.device() != operands[0]->device()) {
      // Only a number on the host may join a loop on another device: it goes by value.
      if (!t.device().is_cpu() || t.dim() != 0)
        throw DeviceError(msg("expected device ", operands[0]->device(), " but got device ", t.device()));
      if (numel) std::memcpy(L.values[o], t.data_ptr(), t.element_size());
      L.by_value |= 1u << o;
      continue;  // data[o] stays null; its strides are 0 below (a 0-dim operand broadcasts)
    }
    L.data[o] = numel ? static_cast<char*>(t.data_ptr()) : nullptr;
  }
  // Nothing to visit: one empty dim. Returned before the merging below, whose
  // stride * size products can overflow for the other dims of an empty tensor
  // (shape (0, 3e13, ...) in Fortran order: found by the npy fuzzer).
  if (numel == 0) {
    L.ndim = 1;
    L.sizes[0] = 0;
    return L;
  }
  // Fill dims innermost-first, skipping size-1 dims and merging where possible.
  int n = 0;  // dims written so far, stored innermost at index 0 for now
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxOperands][kMaxDims];
  for (int d = nd - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    int64_t st[kMaxOperands];
    for (int o = 0; o < nops; ++o) {
      const Tensor& t = *operands[o];
      const int td = d - (nd - static_cast<int>(t.dim()));
      st[o] = (td < 0 || t.shape()[td] == 1) ? 0
                                             : t.stride()[td] * static_cast<int64_t>(t.element_size());
    }
    bool merge = n > 0;
    for (int o = 0; o < nops && merge; ++o) merge = st[o] == strides[o][n - 1] * sizes[n - 1];
    if (merge) {
      sizes[n - 1] *= shape[d];
      continue;  // the merged dim keeps the inner stride
    }
    sizes[n] = shape[d];
    for (int o = 0; o < nops; ++o) strides[o][n] = st[o];
    ++n;
  }
  if (n == 0) {  // a single element (or a 0-dim tensor)
    sizes[0] = 1;
    for (int o = 0; o < nops; ++o) strides[o][0] = 0;
    n = 1;
  }
  L.ndim = n;
  for (int i = 0; i < n; ++i) {
    L.sizes[n - 1 - i] = sizes[i];
    for (int o = 0; o < nops; ++o) L.strides[o][n - 1 - i] = strides[o][i];
  }
  return L;
}

}  // namespace ember
