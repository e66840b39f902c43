// GEMM kernels for AVX2+FMA CPUs: a 6x16 float tile and a 6x8 double tile, twelve
// ymm accumulators plus the B row within the 16 ymm registers. Compiled for AVX2 by
// a target pragma; gemm.cpp calls it only when the CPU reports avx2 and fma.
#include "kernels/cpu/gemm_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

// Everything up to the matching pop is compiled for AVX2, templates included.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
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
};

#undef EMBER_OPS_INLINE

constexpr GemmKernelSet kSet{GemmImpl<F32x8, 6, 2>::table("avx2"),
                             GemmImpl<F64x4, 6, 2>::table("avx2")};

}  // namespace

const GemmKernelSet* gemm_kernels_avx2() { return &kSet; }

}  // namespace ember::cpu::gemm_detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ember::cpu::gemm_detail {
const GemmKernelSet* gemm_kernels_avx2() { return nullptr; }
}  // namespace ember::cpu::gemm_detail

#endif
