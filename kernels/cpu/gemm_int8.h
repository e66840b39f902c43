// The int8 GEMM of dynamic quantization: C = A . B^T with A uint8 activations
// (m x k, row-major) and B int8 weights (n x k, one row per output channel),
// products summed exactly in int32. Weights are packed once (pack_int8_weights) into
// the layout the kernels read; activations are read as they are.
//
// The float result comes from a fused epilogue, so the int32 sums never go to memory:
//   C[i][j] = a_scale * w_scale[j] * (sum_p A[i][p] * B[j][p]  -  a_zero * rowsum[j]) + bias[j]
// where rowsum[j] = sum_p B[j][p]. This is (A - a_zero) . B^T written so the zero point
// costs one multiply per output instead of a subtraction per product.
//
// Two kernels share the packed layout and are chosen at run time: AVX-512 VNNI
// (vpdpbusd: 64 u8 x s8 products summed into 16 int32 lanes per instruction) where the
// CPU has it, and a portable C++ loop otherwise.
#pragma once

#include <cstdint>

namespace ember::cpu {

// The packed layout: panels of kInt8PanelCols output channels; inside a panel, for each
// group of 4 consecutive p, the 4 bytes of every channel in turn (64 bytes per 16
// channels, one zmm register). k is padded to a multiple of 4 and n to a multiple of
// kInt8PanelCols with zero weights.
inline constexpr int64_t kInt8PanelCols = 32;
inline int64_t int8_padded_k(int64_t k) { return (k + 3) / 4 * 4; }
int64_t packed_int8_weights_bytes(int64_t n, int64_t k);

// Packs W (n x k, row stride w_rs) into `out` (packed_int8_weights_bytes(n, k) bytes,
// 64-byte aligned) and writes each row's sum into row_sums[n].
void pack_int8_weights(int64_t n, int64_t k, const int8_t* w, int64_t w_rs, int8_t* out, int32_t* row_sums);

struct Int8Epilogue {
  float a_scale = 1;
  int32_t a_zero_point = 0;
  const int32_t* w_row_sums = nullptr;  // [n]
  const float* w_scales = nullptr;      // [n] when per_channel, else [1]
  bool per_channel = true;
  const float* bias = nullptr;          // [n] or null
};

// C (m x n float32, row stride ldc) from A (m x k uint8, row stride lda) and packed
// weights. A's rows are read in groups of 4 bytes: lda must be at least
// int8_padded_k(k) and those bytes readable; their values do not matter (the packed
// weights are zero there). Exact in int32 while k <= 65536 (|product| <= 255 * 128).
void gemm_int8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_w,
               const Int8Epilogue& ep, float* c, int64_t ldc);

// The same product without the epilogue: C = A . B^T in int32, for tests and for
// callers that want the raw sums.
void gemm_int8_s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_w,
                   int32_t* c, int64_t ldc);

// Integer matmul with zero points (ONNX's MatMulInteger) on this kernel. Rows of
// m codes of k bytes (row stride a_rs) become kernel rows of int8_padded_k(k)
// bytes at `out`, each byte XORed with `flip` (0x80 turns int8 codes into uint8
// ones, shifted by 128); `row_sums`, when not null, receives each row's sum.
void int8_gemm_rows(int64_t m, int64_t k, const uint8_t* a, int64_t a_rs, uint8_t flip, uint8_t* out,
                    int32_t* row_sums);
// c[i][j] (m x n, in place) -= zb[j] * row_sums[i] + za[i] * col_sums[j] - k * za[i] * zb[j]:
// the sums of (a - za)(b - zb) from those of a . b, wrapping in 32 bits as int32
// sums do. row_sums may be null when every zb is 0.
void int8_apply_zero_points(int64_t m, int64_t n, int64_t k, const int32_t* za, const int32_t* zb,
                            const int32_t* row_sums, const int32_t* col_sums, int32_t* c);

// "vnni512" or "generic": the kernel later calls use (the avx512_vnni level or any
// other; cpu::set_isa in kernels/cpu/isa.h lowers it for tests).
const char* gemm_int8_kernel_name();

}  // namespace ember::cpu
