// Dense matrix multiply on the CPU: C = alpha * A.B + beta * C.
// A is m x k, B is k x n, C is m x n. Every matrix is a pointer plus a row stride
// and a column stride in elements, so transposed or sliced views need no copy:
// packing reads them through the strides. beta == 0 never reads C.
#pragma once

#include <cstdint>

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

// Name of the micro-kernel chosen for this CPU at run time ("avx512", "avx2", "generic").
const char* gemm_kernel_name();

}  // namespace ember::cpu
