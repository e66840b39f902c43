// GEMM kernels for AVX2+FMA CPUs: a 6x16 float tile and a 6x8 double tile, twelve
// ymm accumulators plus the B row within the 16 ymm registers. Compiled for the avx2
// level (isa.h); gemm.cpp uses it only when that level is active.
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX2)
#include "kernels/cpu/gemm_kernel_impl.h"

namespace ember::cpu::gemm_detail {
namespace {

#define EMBER_OPS_INLINE __attribute__((always_inline)) static inline

struct F32x8 {
  using T = float;
  using V = __m256;
  static constexpr int W = 8;
  EMBER_OPS_INLINE V zero() { return _mm256_setzero_ps(); }
  EMBER_OPS_INLINE V load(const T* p) { return _mm256_load_ps(p); }
  EMBER_OPS_INLINE V loadu(const T* p) { return _mm256_loadu_ps(p); }
  EMBER_OPS_INLINE void storeu(T* p, V v) { _mm256_storeu_ps(p, v); }
  EMBER_OPS_INLINE V set1(T x) { return _mm256_set1_ps(x); }
  EMBER_OPS_INLINE V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  EMBER_OPS_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  EMBER_OPS_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
};

struct F64x4 {
  using T = double;
  using V = __m256d;
  static constexpr int W = 4;
  EMBER_OPS_INLINE V zero() { return _mm256_setzero_pd(); }
  EMBER_OPS_INLINE V load(const T* p) { return _mm256_load_pd(p); }
  EMBER_OPS_INLINE V loadu(const T* p) { return _mm256_loadu_pd(p); }
  EMBER_OPS_INLINE void storeu(T* p, V v) { _mm256_storeu_pd(p, v); }
  EMBER_OPS_INLINE V set1(T x) { return _mm256_set1_pd(x); }
  EMBER_OPS_INLINE V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  EMBER_OPS_INLINE V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  EMBER_OPS_INLINE V add(V a, V b) { return _mm256_add_pd(a, b); }
};

#undef EMBER_OPS_INLINE

constexpr GemmKernelSet kSet{GemmImpl<F32x8, 6, 2>::table("avx2"),
                             GemmImpl<F64x4, 6, 2>::table("avx2")};

}  // namespace

const GemmKernelSet* gemm_kernels_avx2() { return &kSet; }

}  // namespace ember::cpu::gemm_detail

EMBER_ISA_END

#else

namespace ember::cpu::gemm_detail {
const GemmKernelSet* gemm_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::gemm_detail

#endif
