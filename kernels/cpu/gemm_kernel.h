// The instruction-set-specific half of the CPU GEMM: packing routines and the
// macro-kernel over packed blocks, bundled in a table per instruction set. gemm.cpp
// owns the cache blocking and threads and picks one table at run time (isa.h).
#pragma once

#include <cstdint>

namespace ember::cpu::gemm_detail {

template <class T>
struct GemmKernel {
  const char* name;
  int64_t mr, nr;  // micro-tile: mr rows of A by nr columns of B

  // Copies an mc x kc block of A (read through its strides) into ceil(mc/mr)
  // panels; each panel holds, for every p in [0,kc), mr consecutive values
  // A[i][p]. Rows past mc are zero so the micro-kernel never branches on them.
  void (*pack_a)(int64_t mc, int64_t kc, const T* a, int64_t a_rs, int64_t a_cs, T* out);

  // Copies a kc x nc block of B into ceil(nc/nr) panels of kc rows of nr values,
  // zero-padding the last panel's missing columns.
  void (*pack_b)(int64_t kc, int64_t nc, const T* b, int64_t b_rs, int64_t b_cs, T* out);

  // C[mc x nc] = alpha * Apacked.Bpacked + beta * C over the packed blocks above;
  // beta == 0 writes C without reading it.
  void (*macro)(int64_t mc, int64_t nc, int64_t kc, const T* pa, const T* pb, T alpha, T beta,
                T* c, int64_t c_rs, int64_t c_cs);

  // One row of A: c[0..n) = alpha * a.B + beta * c, reading B once in its own
  // layout (packing it would cost more than the product: a batch-1 Linear). B must
  // have contiguous rows (b_cs == 1) or contiguous columns (b_rs == 1, with a_cs == 1);
  // c is contiguous.
  void (*row)(int64_t n, int64_t k, T alpha, const T* a, int64_t a_cs, const T* b, int64_t b_rs,
              int64_t b_cs, T beta, T* c);
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

// Turns off (or back on) the fallback to one thread that gemm takes for a while
// after a thread team failed to run together (see TeamHealth in gemm.cpp), so that
// tests exercise the threaded paths even on a loaded machine.
void set_gemm_thread_backoff(bool enabled);

}  // namespace ember::cpu::gemm_detail
