// Dense matrix multiply on a CUDA device: C = alpha * A.B + beta * C for `batch`
// matrices. A is m x k, B is k x n, C is m x n; every matrix is a pointer plus a
// batch, a row and a column stride in elements, so transposed, sliced or broadcast
// (stride 0) views need no copy. beta == 0 never reads C; k == 0 gives C = beta * C.
// All calls are queued on `stream` and return at once.
//
// Two implementations sit behind one entry point (docs/kernels-cuda.md, "Which path runs"):
//   cuBLAS  cublasGemmStridedBatchedEx, when every matrix has a unit stride on one
//           side and a leading dimension cuBLAS can express (blas.cpp);
//   native  Ember's own kernels: a tiled SIMT kernel for float32 and float64
//           (gemm_simt.cu) and a tensor-core kernel for float16 and bfloat16
//           (gemm_mma.cu); both take any strides.
// gemm() uses cuBLAS whenever it can express the operands, the native kernels
// otherwise, and always the native kernels when EMBER_KERNELS=native.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"

namespace ember::cuda {

// Which implementation the default entry points (gemm, conv2d_*) pick.
enum class KernelChoice { fastest, native };
// EMBER_KERNELS=native gives `native`, anything else (or unset) `fastest`. The
// variable is read once, on the first call.
KernelChoice kernel_choice();

// dt is Float32, Float64, Float16 or BFloat16 (A, B and C all of that type; the half
// types multiply on tensor cores and accumulate in float32); any other dtype throws
// NotImplementedError. alpha and beta are converted to the accumulator type.
void gemm(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
          const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
          void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);

// The hand-written kernels, whatever the strides (for tests and ember-bench).
void gemm_native(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                 const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                 void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);

// cuBLAS. Operands cuBLAS cannot describe (no unit stride, a negative stride, a
// leading dimension too small or past int range) go to gemm_native instead, so this
// too accepts any strides; gemm_cublas_supports says which case applies.
void gemm_cublas(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                 const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                 void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);
bool gemm_cublas_supports(int64_t batch, int64_t m, int64_t n, int64_t k,
                          int64_t a_bs, int64_t a_rs, int64_t a_cs,
                          int64_t b_bs, int64_t b_rs, int64_t b_cs,
                          int64_t c_bs, int64_t c_rs, int64_t c_cs);

// The two native kernels behind gemm_native, by dtype: gemm_simt takes Float32 and
// Float64, gemm_tensor_core Float16 and BFloat16. Sizes must be positive (the
// callers above handle empty products and k == 0).
void gemm_simt(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
               const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
               void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);
void gemm_tensor_core(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                      const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                      const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                      void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);

// The Hopper kernel (gemm_wgmma.cu): float16 and bfloat16 on wgmma, for a compute
// capability 9.0 device running the sm_90a build of the kernel, a k-contiguous A and
// a k- or n-contiguous B, all in 16-byte aligned rows. gemm_wgmma_supports says
// whether a call qualifies; gemm_wgmma throws ValueError when it does not.
// gemm_tensor_core takes this path whenever it qualifies (unless
// EMBER_CUDA_WGMMA=0), gemm_mma_sync (gemm_mma.cu, any GPU, any strides) otherwise.
// Its panels travel by cp.async, issued by the multiplying threads themselves.
bool wgmma_available(int device = -1);
bool gemm_wgmma_supports(DType dt, int64_t batch, const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                         const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs);
void gemm_mma_sync(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                   const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                   const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                   void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);
void gemm_wgmma(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);
// gemm_wgmma_tma: the same tiles, with the panels moved by the bulk tensor copies
// (TMA) of a producer warpgroup while two warpgroups only multiply (mbarrier
// handshakes, no block-wide barrier). Operands with no tensor map (a broadcast or
// overlapping batch, sizes from 2^31) take gemm_wgmma. Not yet run on a GPU, so not
// the default: EMBER_CUDA_WGMMA=tma makes gemm_tensor_core use it.
void gemm_wgmma_tma(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                    const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                    const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                    void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);
// How many times the bulk-copy kernel itself was launched in this process (a call
// that fell back to cp.async does not count): lets a test prove it ran.
int64_t gemm_wgmma_tma_launches();

// C = beta * C over `batch` m x n matrices (beta == 0 writes zeros without reading
// C): the whole product when k == 0.
void gemm_scale_c(DType dt, int64_t batch, int64_t m, int64_t n, double beta,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);

// C = A.B for the integer dtypes Int8, UInt8, Int32 and Int64, exact with wrap-around
// in the element type (as cpu::gemm_integer); C is overwritten (k == 0 gives zeros).
// Other dtypes throw NotImplementedError.
void gemm_integer(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream);

}  // namespace ember::cuda
