// Softmax with the max subtracted first so exp never overflows:
//   y_i = exp(x_i - m) / sum_j exp(x_j - m),   log y_i = x_i - m - log(sum_j exp(x_j - m)).
// inner == 1 (the last dim, the common case) walks each row three times in cache;
// otherwise a row of `inner` columns is processed together so memory is read in order.
#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/base/dispatch.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/base/vec_math.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/softmax_row.h"

namespace ember::cpu {
namespace {

template <class T>
using sm_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class A>
inline A exp_of(A x) {
  if constexpr (std::is_same_v<A, float>) return exp_fast(x);
  else return std::exp(x);
}

// The float32 row kernel of the active instruction set (softmax_row.h).
void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  using namespace softmax_detail;
  static const PerIsa<SoftmaxRowKernels> tables(
      softmax_row_kernels_generic(), softmax_row_kernels_avx2(),
      softmax_row_kernels_avx512(), nullptr);
  tables.pick().row_f32(x, y, n, log);
}

template <class T>
void softmax_lastdim(int64_t rows, int64_t dim, const T* in, T* out, bool log) {
  using A = sm_acc_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    parallel_rows(rows, rows * dim >= kParallelGrain, [&](int64_t r) { softmax_row_f32(in + r * dim, out + r * dim, dim, log); });
    return;
  } else if constexpr (is_half_v<T>) {
    // Half rows: widened into a float row (vector conversions), the float32 row
    // kernel, narrowed once on store. Accumulation is float32 throughout.
#pragma omp parallel num_threads(get_num_threads()) if (rows * dim >= kParallelGrain)
    {
      std::vector<float> x(dim), y(dim);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        load_to_float(in + r * dim, x.data(), dim);
        softmax_row_f32(x.data(), y.data(), dim, log);
        store_from_float(y.data(), out + r * dim, dim);
      }
    }
    return;
  }
  parallel_rows(rows, rows * dim >= kParallelGrain, [&](int64_t r) {
    const T* x = in + r * dim;
    T* y = out + r * dim;
    A m = -std::numeric_limits<A>::infinity();
    for (int64_t i = 0; i < dim; ++i) m = std::max(m, static_cast<A>(x[i]));
    if (std::isinf(m) && m < 0) m = 0;  // all -inf: keep exp(x - m) well defined (gives NaN/0 like PyTorch)
    A s = 0;
    if (log) {
      for (int64_t i = 0; i < dim; ++i) s += exp_of(static_cast<A>(x[i]) - m);
      const A ls = std::log(s);
      for (int64_t i = 0; i < dim; ++i) y[i] = static_cast<T>(static_cast<A>(x[i]) - m - ls);
    } else {
      for (int64_t i = 0; i < dim; ++i) {
        const A e = exp_of(static_cast<A>(x[i]) - m);
        y[i] = static_cast<T>(e);
        s += e;
      }
      const A inv = A(1) / s;
      if constexpr (std::is_same_v<T, A>) {
        for (int64_t i = 0; i < dim; ++i) y[i] *= inv;
      } else {
        // Half outputs: recompute from the input rather than re-reading a rounded exp.
        for (int64_t i = 0; i < dim; ++i) y[i] = static_cast<T>(exp_of(static_cast<A>(x[i]) - m) * inv);
      }
    }
  });
}

template <class T>
void softmax_strided(int64_t outer, int64_t dim, int64_t inner, const T* in, T* out, bool log) {
  using A = sm_acc_t<T>;
  parallel_rows(outer, outer * dim * inner >= kParallelGrain, [&](int64_t o) {
    const T* x = in + o * dim * inner;
    T* y = out + o * dim * inner;
    std::vector<A> m(inner, -std::numeric_limits<A>::infinity()), s(inner, A(0));
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < inner; ++i) m[i] = std::max(m[i], static_cast<A>(x[d * inner + i]));
    for (int64_t i = 0; i < inner; ++i)
      if (std::isinf(m[i]) && m[i] < 0) m[i] = 0;
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < inner; ++i) s[i] += exp_of(static_cast<A>(x[d * inner + i]) - m[i]);
    for (int64_t d = 0; d < dim; ++d)
      for (int64_t i = 0; i < inner; ++i) {
        const A v = static_cast<A>(x[d * inner + i]) - m[i];
        y[d * inner + i] = static_cast<T>(log ? v - std::log(s[i]) : exp_of(v) / s[i]);
      }
  });
}

}  // namespace

void softmax(DType dt, int64_t outer, int64_t dim, int64_t inner, const void* in, void* out, bool log) {
  dispatch_floating(dt, "softmax", "cpu", [&]<class T>() {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (inner == 1) softmax_lastdim<T>(outer, dim, x, y, log);
    else softmax_strided<T>(outer, dim, inner, x, y, log);
  });
}

}  // namespace ember::cpu
