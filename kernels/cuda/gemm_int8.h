// The dynamic int8 Linear on CUDA: three kernels queued on one stream, with no host
// synchronization (the activation's quantization parameters are computed on the
// device from its min and max, by the same formulas as quant::choose_qparams):
//   1. min/max of the float32 input, per block;
//   2. quantize the input to uint8 rows padded to a multiple of 16 bytes;
//   3. the int8 GEMM on tensor cores (mma.sync m16n8k32, u8 x s8 -> s32) with the
//      fused epilogue of kernels/cpu/gemm_int8.h:
//      y = a_scale * w_scale[j] * (sum a*w - a_zero * rowsum[j]) + bias[j].
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace ember::cuda {

// Weight rows and quantized activation rows are padded with zeros to this many bytes.
inline int64_t int8_padded_k16(int64_t k) { return (k + 15) / 16 * 16; }

// Device scratch bytes linear_int8_dynamic needs for an m x k input and n outputs.
size_t linear_int8_workspace_bytes(int64_t m, int64_t n, int64_t k);

// y (m x n float32, contiguous) from x (m x k float32, contiguous) and the weights:
// w int8 [n, int8_padded_k16(k)] (rows zero-padded), row_sums int32 [n] over the real
// k, w_scales float32 [n] (per_channel) or [1], bias float32 [n] or null.
// reduce_range quantizes x to [0, 127] as PyTorch's dynamic Linear. Every pointer is
// device memory; `workspace` holds linear_int8_workspace_bytes(m, n, k) bytes.
void linear_int8_dynamic(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const int32_t* row_sums,
                         const float* w_scales, bool per_channel, const float* bias, bool reduce_range, float* y,
                         void* workspace, cudaStream_t stream);

// The raw product C = A . B^T in int32 (m x n, contiguous) from uint8 A [m, kp] and
// int8 B [n, kp], kp a multiple of 16: the GEMM alone, for tests and benchmarks.
// When it splits the depth it zeroes C and adds into it with atomics.
void gemm_int8_s32(int64_t m, int64_t n, int64_t kp, const uint8_t* a, const int8_t* b, int32_t* c,
                   cudaStream_t stream);

}  // namespace ember::cuda
