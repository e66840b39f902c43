// Dense matrix multiply on the CPU: C = alpha * A.B + beta * C.
// A is m x k, B is k x n, C is m x n. Every matrix is a pointer plus a row stride
// and a column stride in elements, so transposed or sliced views need no copy:
// packing reads them through the strides. beta == 0 never reads C.
#pragma once

#include <cstdint>

#include "kernels/base/half.h"

namespace ember::cpu {

void gemm(int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t a_rs, int64_t a_cs,
          const float* b, int64_t b_rs, int64_t b_cs, float beta,
          float* c, int64_t c_rs, int64_t c_cs);

void gemm(int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t a_rs, int64_t a_cs,
          const double* b, int64_t b_rs, int64_t b_cs, double beta,
          double* c, int64_t c_rs, int64_t c_cs);

// `batch` independent products; matrix i starts at a + i*a_bs (and so on).
// Small matrices are spread over threads by batch, large ones inside each gemm.
void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const float* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, float beta,
                  float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

void gemm_batched(int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const double* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                  double* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

// bfloat16 A and B, float32 C: C = alpha * A.B + beta * C, with every product of two
// bfloat16 values exact in float32 and the sums kept in float32. Where the CPU has
// AVX512_BF16 (the avx512_bf16 level of isa.h) the vdpbf16ps kernel runs, which, as
// that instruction defines, reads subnormal bfloat16 inputs (|x| < 2^-126) as zero
// and flushes subnormal sums to zero. Elsewhere A and B are widened to float32 in a
// per-thread buffer and the float32 GEMM runs, subnormals kept.
void gemm_bf16(int64_t m, int64_t n, int64_t k, float alpha,
               const BFloat16* a, int64_t a_rs, int64_t a_cs,
               const BFloat16* b, int64_t b_rs, int64_t b_cs, float beta,
               float* c, int64_t c_rs, int64_t c_cs);

void gemm_bf16_batched(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                       const BFloat16* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const BFloat16* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, float beta,
                       float* c, int64_t c_bs, int64_t c_rs, int64_t c_cs);

// Where gemm_bf16_rounded stores C: matrix i of the batch at c + i * c_bs, its rows
// c_rs apart and its columns contiguous; `bias` (n float32 values, or null) is added
// to every row, and `relu` applies ReLU (NaN kept, -0 to 0), both before rounding.
struct Bf16Out {
  BFloat16* c;
  int64_t c_bs, c_rs;
  const float* bias = nullptr;
  bool relu = false;
};

// The bfloat16 product with bfloat16 C: C = alpha * A.B (+ bias, ReLU), the float32
// sums of gemm_bf16_batched rounded once to bfloat16 (to nearest even, as
// BFloat16(float)) as the last depth block stores them, instead of written as float32
// and rounded by a second pass. A product deeper than one depth block keeps its
// partial sums in a float32 buffer of the calling thread.
void gemm_bf16_rounded(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha,
                       const BFloat16* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                       const BFloat16* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, const Bf16Out& out);

// "avx512_bf16" (vdpbf16ps) or "widen" (float32 GEMM on widened copies): what the
// bfloat16 GEMM runs at the active instruction-set level.
const char* gemm_bf16_kernel_name();

// Name of the micro-kernel chosen for this CPU at run time ("avx512", "avx2", "generic").
const char* gemm_kernel_name();

}  // namespace ember::cpu
