// ReLU's backward pass (relu_backward.h). Plain loops the compiler vectorizes: a
// compare and a select per element. Half types are compared on their bits, so
// nothing is widened: a float16 or bfloat16 value is > 0 exactly when its bits, read
// as a signed 16-bit integer, are positive and at most those of +Inf (above are NaNs).
#include "kernels/cpu/relu_backward.h"

#include <string>

#include "kernels/base/error.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {
namespace {

// Elements per parallel chunk; a team pays off from a few of them.
constexpr int64_t kChunk = 1 << 16;

// Both operands are loaded before the select: a load inside the condition
// (y > 0 ? g[i] : 0) is one the compiler may not move out of it, and the loop then
// stays scalar with a branch per element (4 GB/s instead of the copy floor).
template <class T>
void floats(int64_t lo, int64_t hi, const T* __restrict g, const T* __restrict y, T* __restrict out) {
  for (int64_t i = lo; i < hi; ++i) {
    const T gi = g[i], yi = y[i];
    out[i] = yi > T(0) ? gi : T(0);
  }
}

void halves(int64_t lo, int64_t hi, const int16_t* __restrict g, const int16_t* __restrict y, int16_t* __restrict out,
            int16_t inf_bits) {
  for (int64_t i = lo; i < hi; ++i) {
    const int16_t gi = g[i], yi = y[i];
    out[i] = ((yi > 0) & (yi <= inf_bits)) ? gi : int16_t(0);
  }
}

template <class Body>
void chunked(int64_t n, Body&& body) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(chunks, chunks >= 4, [&](int64_t c) { body(c * kChunk, c + 1 == chunks ? n : (c + 1) * kChunk); });
}

}  // namespace

void relu_backward(DType dt, int64_t n, const void* grad, const void* y, void* out) {
  if (n <= 0) return;
  switch (dt) {
    case DType::Float32:
      return chunked(n, [&](int64_t lo, int64_t hi) {
        floats(lo, hi, static_cast<const float*>(grad), static_cast<const float*>(y), static_cast<float*>(out));
      });
    case DType::Float64:
      return chunked(n, [&](int64_t lo, int64_t hi) {
        floats(lo, hi, static_cast<const double*>(grad), static_cast<const double*>(y), static_cast<double*>(out));
      });
    case DType::Float16:
    case DType::BFloat16: {
      const int16_t inf_bits = dt == DType::Float16 ? int16_t(0x7c00) : int16_t(0x7f80);
      return chunked(n, [&](int64_t lo, int64_t hi) {
        halves(lo, hi, static_cast<const int16_t*>(grad), static_cast<const int16_t*>(y), static_cast<int16_t*>(out),
               inf_bits);
      });
    }
    default:
      throw NotImplementedError(std::string("relu_backward: no kernel for device cpu and dtype ") + dtype_name(dt));
  }
}

}  // namespace ember::cpu
