// The one loop every CPU elementwise kernel runs on: it walks N operands over a
// StridedLoop and hands the body runs along the innermost dimension, so the body
// can take a contiguous (vectorizable) path when the inner strides allow it.
// Work is split into equal element ranges, one per OpenMP thread.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/base/parallel.h"
#include "kernels/base/strided.h"

namespace ember::cpu {

// Calls body(char* const* ptrs, const int64_t* inner_strides_bytes, int64_t n)
// for consecutive runs of the element range [begin, end).
template <int N, class Body>
void strided_range(const StridedLoop& L, int64_t begin, int64_t end, Body& body) {
  const int nd = L.ndim;
  const int64_t inner = L.sizes[nd - 1];
  int64_t idx[kMaxDims];
  char* p[N];
  int64_t inner_stride[N];
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % L.sizes[d];
    rem /= L.sizes[d];
  }
  for (int o = 0; o < N; ++o) {
    p[o] = L.data[o];
    for (int d = 0; d < nd; ++d) p[o] += idx[d] * L.strides[o][d];
    inner_stride[o] = L.strides[o][nd - 1];
  }
  int64_t i = begin;
  while (i < end) {
    const int64_t n = std::min(inner - idx[nd - 1], end - i);
    body(p, inner_stride, n);
    i += n;
    if (i >= end) break;
    // The run ended at a row end: rewind to the row start, then carry outward.
    for (int o = 0; o < N; ++o) p[o] -= idx[nd - 1] * inner_stride[o];
    idx[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; --d) {
      ++idx[d];
      for (int o = 0; o < N; ++o) p[o] += L.strides[o][d];
      if (idx[d] < L.sizes[d]) break;
      for (int o = 0; o < N; ++o) p[o] -= L.sizes[d] * L.strides[o][d];
      idx[d] = 0;
    }
  }
}

// Below `grain` elements the loop stays on the calling thread (cheap bodies, such
// as copy_loop's, pass a larger one).
template <int N, class Body>
void strided_for(const StridedLoop& L, Body&& body, int64_t grain = kParallelGrain) {
  if (L.numel <= 0) return;
  const int threads = get_num_threads();
  if (threads <= 1 || L.numel < grain) {
    strided_range<N>(L, 0, L.numel, body);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    // Split on multiples of 64 elements so each thread's run starts vector-aligned.
    const int64_t blocks = (L.numel + 63) / 64;
    const int64_t b0 = blocks * t / nt, b1 = blocks * (t + 1) / nt;
    const int64_t begin = std::min(L.numel, b0 * 64), end = std::min(L.numel, b1 * 64);
    if (begin < end) strided_range<N>(L, begin, end, body);
  }
}

}  // namespace ember::cpu
