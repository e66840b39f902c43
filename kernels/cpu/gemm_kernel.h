// The instruction-set-specific half of the CPU GEMM: packing routines and the
// macro-kernel over packed blocks, bundled in a table per instruction set. gemm.cpp
// owns the cache blocking and threads and picks one table at run time (isa.h).
#pragma once

#include <cstdint>

#include "kernels/base/half.h"

namespace ember::cpu::gemm_detail {

// A kernel reads A and B as In, packs them as Packed and accumulates C as Out. For
// float and double all three are the same type and one packed element is one value
// of A or B. The bfloat16 kernel packs pairs: one uint32_t holds the values of two
// consecutive k (vdpbf16ps multiplies pairs and adds both products), so a packed
// panel is kpair = 2 times shallower than its depth in k; an odd k is padded with
// a zero.
template <class In, class Packed, class Out>
struct GemmKernelOf {
  using in_type = In;
  using packed_type = Packed;
  using out_type = Out;

  const char* name;
  int64_t mr, nr;  // micro-tile: mr rows of A by nr columns of B
  int64_t kpair;   // values of k per packed element: 1, or 2 for bfloat16 pairs

  // Copies an mc x kc block of A (read through its strides) into ceil(mc/mr)
  // panels; each panel holds, for every packed step p in [0, ceil(kc/kpair)), mr
  // consecutive packed elements of A's rows. Rows past mc are zero so the
  // micro-kernel never branches on them.
  void (*pack_a)(int64_t mc, int64_t kc, const In* a, int64_t a_rs, int64_t a_cs, Packed* out);

  // Copies a kc x nc block of B into ceil(nc/nr) panels of ceil(kc/kpair) rows of nr
  // packed elements, zero-padding the last panel's missing columns.
  void (*pack_b)(int64_t kc, int64_t nc, const In* b, int64_t b_rs, int64_t b_cs, Packed* out);

  // C[mc x nc] = alpha * Apacked.Bpacked + beta * C over the packed blocks above;
  // beta == 0 writes C without reading it.
  void (*macro)(int64_t mc, int64_t nc, int64_t kc, const Packed* pa, const Packed* pb, Out alpha,
                Out beta, Out* c, int64_t c_rs, int64_t c_cs);

  // A few rows of A (m up to a handful): C = alpha * A.B + beta * C, reading B in
  // its own layout, once per few rows (packing it would cost more than the product:
  // a batch-1 or small-batch Linear). B must have contiguous rows (b_cs == 1) or
  // contiguous columns (b_rs == 1, with a_cs == 1); C's rows are contiguous. Null
  // where the kernel has none (the packed path runs instead).
  void (*rows)(int64_t m, int64_t n, int64_t k, Out alpha, const In* a, int64_t a_rs, int64_t a_cs,
               const In* b, int64_t b_rs, int64_t b_cs, Out beta, Out* c, int64_t c_rs);
};

template <class T>
using GemmKernel = GemmKernelOf<T, T, T>;

// bfloat16 A and B, float32 sums (kernels/cpu/gemm_kernel_bf16.cpp).
struct GemmKernelBf16 : GemmKernelOf<BFloat16, uint32_t, float> {
  // macro for the last depth block when C is bfloat16: each alpha * sum + beta * c
  // (c: the float32 sums of the earlier depth blocks, unit column stride, read only
  // when beta != 0), plus bias[j] when bias is set, through ReLU when relu is,
  // rounded once to bfloat16 into out (rows out_rs apart, contiguous columns). So no
  // float32 C is written when k fits one depth block.
  void (*macro_rounded)(int64_t mc, int64_t nc, int64_t kc, const uint32_t* pa, const uint32_t* pb,
                        float alpha, float beta, const float* c, int64_t c_rs, BFloat16* out,
                        int64_t out_rs, const float* bias, bool relu);
};

struct GemmKernelSet {
  GemmKernel<float> f32;
  GemmKernel<double> f64;
};

// Each returns nullptr when this build cannot emit that instruction set; gemm.cpp
// uses one only at or below the active level (isa.h).
const GemmKernelSet* gemm_kernels_avx512();
const GemmKernelSet* gemm_kernels_avx2();
const GemmKernelSet* gemm_kernels_generic();

// The vdpbf16ps kernel, or nullptr when this build cannot emit the avx512_bf16 level.
const GemmKernelBf16* gemm_kernel_bf16_avx512();

// Turns off (or back on) the fallback to one thread that gemm takes for a while
// after a thread team failed to run together (see TeamHealth in gemm.cpp), so that
// tests exercise the threaded paths even on a loaded machine.
void set_gemm_thread_backoff(bool enabled);

}  // namespace ember::cpu::gemm_detail
