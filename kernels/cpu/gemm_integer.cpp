// Integer matmul: i-k-j loop order so the innermost loop runs along rows of B and C.
// Sums wrap modulo the type's width, like NumPy's and PyTorch's integer matmuls.
#include "kernels/cpu/gemm_integer.h"

#include <type_traits>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"

namespace ember::cpu {

void gemm_integer(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  dispatch(dt, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* A = static_cast<const T*>(a);
      const T* B = static_cast<const T*>(b);
      T* C = static_cast<T*>(c);
      // One row of C per item (parallel_rows: no OpenMP region below the grain).
      parallel_rows(batch * m, batch * m * n * k >= kParallelGrain, [&](int64_t row) {
        const int64_t p = row / m, i = row % m;
        T* crow = C + p * c_bs + i * c_rs;
        for (int64_t j = 0; j < n; ++j) crow[j * c_cs] = 0;
        for (int64_t q = 0; q < k; ++q) {
          const T av = A[p * a_bs + i * a_rs + q * a_cs];
          const T* brow = B + p * b_bs + q * b_rs;
          // In the unsigned type of T's width: wraps as T's arithmetic would, where
          // signed overflow (int32 and int64 products) would be undefined.
          using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;
          for (int64_t j = 0; j < n; ++j)
            crow[j * c_cs] = static_cast<T>(U(crow[j * c_cs]) + U(av) * U(brow[j * b_cs]));
        }
      });
    }
  });
}

}  // namespace ember::cpu
