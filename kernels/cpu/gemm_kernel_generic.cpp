// Portable GEMM kernels for any CPU: 16-byte GCC vectors (SSE2 on x86-64, NEON or
// scalar code elsewhere), a 4x8 float tile and a 4x4 double tile. The fallback when
// neither AVX-512 nor AVX2 is present; built with the library's ordinary flags.
#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/gemm_kernel_impl.h"

namespace ember::cpu::gemm_detail {
namespace {

// Vector extensions rather than intrinsics so that this file compiles everywhere;
// the compiler lowers each 16-byte operation to whatever the target has.
template <class Scalar>
struct Vec16 {
  using T = Scalar;
  static constexpr int W = 16 / sizeof(T);
  typedef T V __attribute__((vector_size(16)));
  static V zero() { return V{}; }
  static V load(const T* p) { return *reinterpret_cast<const V*>(p); }
  static V loadu(const T* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void storeu(T* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
  static V set1(T x) { return V{} + x; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
};

constexpr GemmKernelSet kSet{GemmImpl<Vec16<float>, 4, 2>::table("generic"),
                             GemmImpl<Vec16<double>, 4, 2>::table("generic")};

}  // namespace

const GemmKernelSet* gemm_kernels_generic() { return &kSet; }

}  // namespace ember::cpu::gemm_detail
