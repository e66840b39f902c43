// The instruction-set-specific half of the int8 GEMM (see gemm_int8.h): one function
// that multiplies a block of activation rows by one packed weight panel and applies
// the epilogue. gemm_int8.cpp owns packing, blocking and threads and picks a panel
// function at run time. Not part of the public API.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm_int8.h"

namespace ember::cpu::gemm_int8_detail {

// Rows [0, rows) of A times panel columns [0, ncols) (ncols <= kInt8PanelCols) over
// kp = int8_padded_k(k) depth. `ep` null: write the raw int32 sums to c (int32_t*);
// otherwise the epilogue's floats to c (float*). col0 is the panel's first output
// channel, where the epilogue's per-channel arrays are read.
using PanelFn = void (*)(int64_t rows, int64_t ncols, int64_t kp, const uint8_t* a, int64_t lda,
                         const int8_t* panel, const Int8Epilogue* ep, int64_t col0, void* c, int64_t ldc);

struct Int8Kernel {
  const char* name;
  PanelFn panel;
};

// nullptr when this build cannot emit AVX-512 VNNI; the caller also checks the CPU.
const Int8Kernel* int8_kernel_vnni512();

}  // namespace ember::cpu::gemm_int8_detail
