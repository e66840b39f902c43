// GEMM kernels for AVX-512 CPUs: a 14x32 float tile (28 of the 32 zmm registers
// accumulate, two hold the B row) and a 14x16 double tile. The file is compiled for
// the avx512 level (isa.h); gemm.cpp uses it only when that level is active.
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/gemm_kernel_impl.h"
#include "kernels/cpu/transpose16_avx512.h"

namespace ember::cpu::gemm_detail {
namespace {

#define EMBER_OPS_INLINE __attribute__((always_inline)) static inline

struct F32x16 {
  using T = float;
  using V = __m512;
  static constexpr int W = 16;
  EMBER_OPS_INLINE V zero() { return _mm512_setzero_ps(); }
  EMBER_OPS_INLINE V load(const T* p) { return _mm512_load_ps(p); }
  EMBER_OPS_INLINE V loadu(const T* p) { return _mm512_loadu_ps(p); }
  EMBER_OPS_INLINE void storeu(T* p, V v) { _mm512_storeu_ps(p, v); }
  EMBER_OPS_INLINE V set1(T x) { return _mm512_set1_ps(x); }
  EMBER_OPS_INLINE V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  EMBER_OPS_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  EMBER_OPS_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  EMBER_OPS_INLINE __mmask16 first(int n) { return __mmask16((1u << n) - 1); }
  EMBER_OPS_INLINE V loadn(const T* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  EMBER_OPS_INLINE void storen(T* p, V v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
  // Lane l + lane l+8, then l + l+4, l + l+2, l + l+1: GemmImpl::hsum's order.
  EMBER_OPS_INLINE T hsum(V v) {
    const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_movehdup_ps(h2)));
  }

  // Packing's 16 x 16 transpose (transpose16_avx512.h).
  EMBER_OPS_INLINE void transpose(const T* src, int64_t ld, int rows, T* dst, int64_t dst_ld) {
    transpose16x16_32bit(src, ld * int64_t(sizeof(T)), rows, dst, dst_ld);
  }
};

struct F64x8 {
  using T = double;
  using V = __m512d;
  static constexpr int W = 8;
  EMBER_OPS_INLINE V zero() { return _mm512_setzero_pd(); }
  EMBER_OPS_INLINE V load(const T* p) { return _mm512_load_pd(p); }
  EMBER_OPS_INLINE V loadu(const T* p) { return _mm512_loadu_pd(p); }
  EMBER_OPS_INLINE void storeu(T* p, V v) { _mm512_storeu_pd(p, v); }
  EMBER_OPS_INLINE V set1(T x) { return _mm512_set1_pd(x); }
  EMBER_OPS_INLINE V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  EMBER_OPS_INLINE V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  EMBER_OPS_INLINE V add(V a, V b) { return _mm512_add_pd(a, b); }
  EMBER_OPS_INLINE __mmask8 first(int n) { return __mmask8((1u << n) - 1); }
  EMBER_OPS_INLINE V loadn(const T* p, int n) { return _mm512_maskz_loadu_pd(first(n), p); }
  EMBER_OPS_INLINE void storen(T* p, V v, int n) { _mm512_mask_storeu_pd(p, first(n), v); }
  // Lane l + lane l+4, then l + l+2, l + l+1: GemmImpl::hsum's order.
  EMBER_OPS_INLINE T hsum(V v) {
    const __m256d h4 = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    const __m128d h2 = _mm_add_pd(_mm256_castpd256_pd128(h4), _mm256_extractf128_pd(h4, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h2, _mm_unpackhi_pd(h2, h2)));
  }
};

#undef EMBER_OPS_INLINE

constexpr GemmKernelSet kSet{GemmImpl<F32x16, 14, 2>::table("avx512"),
                             GemmImpl<F64x8, 14, 2>::table("avx512")};

}  // namespace

const GemmKernelSet* gemm_kernels_avx512() { return &kSet; }

}  // namespace ember::cpu::gemm_detail

EMBER_ISA_END

#else

namespace ember::cpu::gemm_detail {
const GemmKernelSet* gemm_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::gemm_detail

#endif
