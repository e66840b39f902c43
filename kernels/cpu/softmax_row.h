// The instruction-set-specific half of the CPU softmax: the float32 row kernel, one
// copy per instruction set (softmax_row_<isa>.cpp compiles softmax_row_impl.h for its
// set); softmax.cpp picks one at run time. Not part of the public API.
#pragma once

#include <cstdint>

namespace ember::cpu::softmax_detail {

// y[0, n) = softmax (or log_softmax) of x[0, n).
using RowFn = void (*)(const float* x, float* y, int64_t n, bool log);

struct SoftmaxRowKernels {
  const char* name;
  RowFn row_f32;
};

// nullptr when this build cannot emit that instruction set.
const SoftmaxRowKernels* softmax_row_kernels_avx512();
const SoftmaxRowKernels* softmax_row_kernels_avx2();
const SoftmaxRowKernels* softmax_row_kernels_generic();

}  // namespace ember::cpu::softmax_detail
