// half <-> float conversions for AVX-512 CPUs: float16 sixteen at a time with the
// AVX-512 vcvtph2ps / vcvtps2ph (round to nearest even), bfloat16 widened by the
// portable shift loop and narrowed 32 at a time (store_bf16_vec); and half add, sub,
// mul and div in one pass (arith).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/half_vec_kernels.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/half16_avx512.h"
#include "kernels/cpu/half_vec_impl.h"
namespace ember::cpu::half_vec_detail {
namespace {

void load_half(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  load_half_scalar(src + i, dst + i, n - i);
}

void store_half(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), to_f16(_mm512_loadu_ps(src + i)));
  store_half_scalar(src + i, dst + i, n - i);
}

void add_half(const Half* src, float* acc, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i),
                                            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)))));
  add_half_scalar(src + i, acc + i, n - i);
}

// float32 -> bfloat16, 32 at a time, bit for bit as half.h rounds
// (bf16_round_avx512.h): one vpermt2w takes the rounded high halves of two vectors.
// The portable loop (half_vec_impl.h) vectorized into narrowing, widening and
// narrowing again, at about half this speed.
void store_bf16_vec(const float* src, BFloat16* dst, int64_t n) {
  // 16-bit word j of the result: word 2j + 1 of the pair (a, b), a's words first.
  alignas(64) static constexpr int16_t kHigh[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21,
                                                    23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43,
                                                    45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i high = _mm512_load_si512(kHigh);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i a = bf16_in_high_halves(_mm512_loadu_ps(src + i)), b = bf16_in_high_halves(_mm512_loadu_ps(src + i + 16));
    _mm512_storeu_si512(dst + i, _mm512_permutex2var_epi16(a, high, b));
  }
  store_bf16(src + i, dst + i, n - i);
}

template <HalfArithOp kOp>
inline __m512 apply(__m512 x, __m512 y) {
  if constexpr (kOp == HalfArithOp::add) return _mm512_add_ps(x, y);
  else if constexpr (kOp == HalfArithOp::sub) return _mm512_sub_ps(x, y);
  else if constexpr (kOp == HalfArithOp::mul) return _mm512_mul_ps(x, y);
  else return _mm512_div_ps(x, y);
}

// out = a op b, 16 at a time, a step of 0 broadcasting a[0] (or b[0]); the last
// n % 16 go through a 16-value copy on the stack (masked stores are slow on AMD).
// Each loop is its own (no per-vector test of the steps).
template <HalfArithOp kOp, class T>
void arith_run(const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n) {
  const int64_t full = n & ~int64_t{15};
  if (a_step && b_step) {
    for (int64_t i = 0; i < full; i += 16) narrow16(apply<kOp>(widen16(a + i), widen16(b + i)), out + i);
  } else if (a_step) {
    const __m512 y = _mm512_set1_ps(static_cast<float>(b[0]));
    for (int64_t i = 0; i < full; i += 16) narrow16(apply<kOp>(widen16(a + i), y), out + i);
  } else {
    const __m512 x = _mm512_set1_ps(static_cast<float>(a[0]));
    for (int64_t i = 0; i < full; i += 16) narrow16(apply<kOp>(x, widen16(b + i)), out + i);
  }
  if (full == n) return;
  T ta[16], tb[16], to[16];
  std::fill(ta, ta + 16, T(1.0f));  // unused lanes compute 1 op 1: no 0/0 for a trapping user
  std::fill(tb, tb + 16, T(1.0f));
  for (int64_t i = full; i < n; ++i) {
    ta[i - full] = a[a_step ? i : 0];
    tb[i - full] = b[b_step ? i : 0];
  }
  narrow16(apply<kOp>(widen16(ta), widen16(tb)), to);
  std::memcpy(out + full, to, (n - full) * sizeof(T));
}

template <class T>
void arith(HalfArithOp op, const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n) {
  switch (op) {
    case HalfArithOp::add: return arith_run<HalfArithOp::add>(a, a_step, b, b_step, out, n);
    case HalfArithOp::sub: return arith_run<HalfArithOp::sub>(a, a_step, b, b_step, out, n);
    case HalfArithOp::mul: return arith_run<HalfArithOp::mul>(a, a_step, b, b_step, out, n);
    case HalfArithOp::div: return arith_run<HalfArithOp::div>(a, a_step, b, b_step, out, n);
  }
}

constexpr HalfVecKernels kSet{"avx512",  load_half,    store_half,    load_bf16, store_bf16_vec,
                              add_half,  add_bf16,     arith<Half>,   arith<BFloat16>};

}  // namespace
}  // namespace ember::cpu::half_vec_detail
EMBER_ISA_END

namespace ember::cpu::half_vec_detail {
const HalfVecKernels* half_vec_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::half_vec_detail

#else

namespace ember::cpu::half_vec_detail {
const HalfVecKernels* half_vec_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::half_vec_detail

#endif
