// Matrix multiply for integer dtypes (PyTorch allows int matmul on the CPU). Exact
// arithmetic with wrap-around in the element type; a plain loop, since integer
// matmul is rare outside quantization, which has its own int8 kernels.
#pragma once

#include <cstdint>

#include "kernels/base/scalar.h"

namespace ember::cpu {

// C = A.B for `batch` matrices; strides in elements, batch strides included.
void gemm_integer(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

}  // namespace ember::cpu
