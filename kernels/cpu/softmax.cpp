// Softmax with the max subtracted first so exp never overflows:
//   y_i = exp(x_i - m) / sum_j exp(x_j - m),   log y_i = x_i - m - log(sum_j exp(x_j - m)).
// (Any m gives the same softmax: the AVX-512 loop for blocks of short rows takes m = 0
// when every value lies in [-64, 64], where exp cannot overflow; softmax_row_avx512.cpp.)
// inner == 1 (the last dim, the common case) walks each row three times in cache
// (rows shorter than kShortRow a block of rows at a time); otherwise stripes of
// adjacent columns are processed together so memory is read in order. float32 runs
// the per-ISA loops of softmax_row.h; half types run its half-row loops where the
// instruction set has them and otherwise widen rows into float32 for the float32
// loops; float64 runs the plain loops here.
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
#include "kernels/cpu/scratch.h"
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

// The float32 loops of the active instruction set (softmax_row.h).
const softmax_detail::SoftmaxRowKernels& f32_kernels() {
  using namespace softmax_detail;
  static const PerIsa<SoftmaxRowKernels> tables(
      softmax_row_kernels_generic(), softmax_row_kernels_avx2(),
      softmax_row_kernels_avx512(), nullptr);
  return tables.pick();
}

// Rows shorter than this go to rows_f32, a block of rows at a time: row_f32 would
// run most of such a row in its scalar tail.
constexpr int64_t kShortRow = 32;
// Short rows per job: one rows_f32 call (2 to 256 KiB of float32).
constexpr int64_t kRowsPerJob = 512;

// Outputs at least this large are written with streaming stores (softmax_row.h):
// they do not fit in the caches, so a plain store would first read each line from
// memory. Smaller ones stay in cache for the op that reads them next.
constexpr int64_t kStreamBytes = int64_t(16) << 20;

template <class T>
void softmax_lastdim(int64_t rows, int64_t dim, const T* in, T* out, bool log) {
  const bool team = rows * dim >= kParallelGrain;
  if constexpr (std::is_same_v<T, float> || is_half_v<T>) {
    const auto& k = f32_kernels();
    if constexpr (is_half_v<T>) {
      // Half rows read and written as such (softmax_row.h's HalfRowFn), one run of
      // rows per thread, where this instruction set has them.
      const softmax_detail::HalfRowFn half_row = std::is_same_v<T, Half> ? k.row_f16 : k.row_bf16;
      if (half_row && dim >= kShortRow) {
        const int64_t threads = team ? get_num_threads() : 1;
        const int64_t per_job = std::max<int64_t>(1, (rows + threads - 1) / threads);
        parallel_rows((rows + per_job - 1) / per_job, team, [&](int64_t j) {
          const int64_t r0 = j * per_job, nr = std::min(per_job, rows - r0);
          thread_local Scratch stage;
          softmax_detail::HalfRowOptions opt;
          opt.stage = static_cast<float*>(stage.get(sizeof(float) * static_cast<size_t>(dim + 16)));
          opt.stream = rows * dim * int64_t(sizeof(T)) >= kStreamBytes;
          half_row(reinterpret_cast<const uint16_t*>(in + r0 * dim), reinterpret_cast<uint16_t*>(out + r0 * dim), nr,
                   dim, log, opt);
        });
        return;
      }
    }
    // Short rows: jobs of kRowsPerJob. Long float32 rows: one run of rows per thread,
    // so that row_f32's pipeline (each row's exp overlapping the next row's loads
    // and the last row's stores) runs unbroken. Long half rows: one row per job,
    // widened into float32 first; the next job's row is prefetched meanwhile.
    const int64_t threads = team ? get_num_threads() : 1;
    const int64_t per_job =
        dim < kShortRow ? kRowsPerJob : is_half_v<T> ? 1 : std::max<int64_t>(1, (rows + threads - 1) / threads);
    const int64_t jobs = (rows + per_job - 1) / per_job;
    const bool stream = std::is_same_v<T, float> && rows * dim * int64_t(sizeof(T)) >= kStreamBytes;
    parallel_rows(jobs, team, [&](int64_t j) {
      const int64_t r0 = j * per_job, nr = std::min(per_job, rows - r0);
      // The running thread's own buffers (OpenMP keeps its threads, so they are
      // allocated once per thread).
      thread_local Scratch stage, widened;
      const auto run = [&](const float* x, float* y) {
        if (dim < kShortRow) {
          k.rows_f32(x, y, nr, dim, log);
          return;
        }
        softmax_detail::RowOptions opt;
        opt.stage = static_cast<float*>(stage.get(2 * sizeof(float) * static_cast<size_t>(dim)));
        opt.stream = stream;
        if (j + 1 < jobs) {  // the next job's input, usually this thread's (schedule(static))
          opt.after = in + (r0 + nr) * dim;
          opt.after_size = int64_t(sizeof(T));
        }
        k.row_f32(x, y, nr, dim, log, opt);
      };
      if constexpr (std::is_same_v<T, float>) {
        run(in + r0 * dim, out + r0 * dim);
      } else {
        // Half rows: widened into a float buffer (vector conversions), the float32
        // loops in place, narrowed once on store; accumulation is float32.
        float* buf = static_cast<float*>(widened.get(sizeof(float) * static_cast<size_t>(nr * dim)));
        load_to_float(in + r0 * dim, buf, nr * dim);
        run(buf, buf);
        store_from_float(buf, out + r0 * dim, nr * dim);
      }
    });
  } else {
    parallel_rows(rows, team, [&](int64_t r) {  // float64: plain loops in double
      const T* x = in + r * dim;
      T* y = out + r * dim;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < dim; ++i) m = std::max(m, x[i]);
      if (std::isinf(m) && m < 0) m = 0;  // all -inf: keep exp(x - m) well defined (gives NaN/0 like PyTorch)
      T s = 0;
      if (log) {
        for (int64_t i = 0; i < dim; ++i) s += std::exp(x[i] - m);
        const T ls = std::log(s);
        for (int64_t i = 0; i < dim; ++i) y[i] = x[i] - m - ls;
      } else {
        for (int64_t i = 0; i < dim; ++i) {
          y[i] = std::exp(x[i] - m);
          s += y[i];
        }
        const T inv = T(1) / s;
        for (int64_t i = 0; i < dim; ++i) y[i] *= inv;
      }
    });
  }
}

// The largest stripe (in floats of scratch) cols_once keeps: 4 MiB, a few times the
// L2. Longer stripes run cols_f32, whose passes need no scratch.
constexpr int64_t kColsOnceFloats = int64_t(1) << 20;

template <class T>
void softmax_strided(int64_t outer, int64_t dim, int64_t inner, const T* in, T* out, bool log) {
  using A = sm_acc_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    const auto& k = f32_kernels();
    // Stripes as wide as cols_f32 takes: on [64, 1024, 256], 32-wide stripes sized
    // to stay in L2 ran at 0.25 of the copy floor, whole 256-wide rows (1 KiB runs;
    // the 1 MiB block stays in L3 between the passes) at 0.42.
    const int64_t w = std::min(inner, softmax_detail::kColsMax), stripes = (inner + w - 1) / w;
    const int64_t full = inner / w;  // stripes of w columns per outer index (one more may be narrower)
    const bool stream = outer * dim * inner * int64_t(sizeof(float)) >= kStreamBytes;
    const bool team = outer * dim * inner >= kParallelGrain;
    const int64_t jobs = outer * stripes;  // job j: stripe j % stripes of outer index j / stripes
    if (!k.cols_once || softmax_detail::cols_once_floats(dim, w) > kColsOnceFloats) {
      parallel_rows(jobs, team, [&](int64_t job) {
        const int64_t c0 = (job % stripes) * w, off = job / stripes * dim * inner + c0;
        k.cols_f32(in + off, out + off, dim, inner, std::min(w, inner - c0), log);
      });
      return;
    }
    // cols_once writes a stripe's outputs while it reads the next one's, so each
    // thread takes one run of jobs and passes them in as few calls as it can: all
    // of them when a stripe is a whole outer index (stripes == 1), else an outer
    // index's full-width stripes (w apart) in one call and its narrower last one in
    // another.
    const int64_t threads = team ? get_num_threads() : 1;
    const int64_t per_thread = std::max<int64_t>(1, (jobs + threads - 1) / threads);
    const size_t scratch_bytes = sizeof(float) * static_cast<size_t>(softmax_detail::cols_once_floats(dim, w));
    parallel_rows((jobs + per_thread - 1) / per_thread, team, [&](int64_t t) {
      thread_local Scratch scratch;
      float* buf = static_cast<float*>(scratch.get(scratch_bytes));
      const int64_t end = std::min(jobs, (t + 1) * per_thread);
      for (int64_t job = t * per_thread; job < end;) {
        const int64_t s = job % stripes, c0 = s * w, off = job / stripes * dim * inner + c0;
        int64_t n = 1, stride = 0;
        if (stripes == 1) {
          n = end - job;
          stride = dim * inner;
        } else if (s < full) {
          n = std::min(end - job, full - s);
          stride = w;
        }
        k.cols_once(in + off, out + off, dim, inner, std::min(w, inner - c0), n, stride, log, stream, buf);
        job += n;
      }
    });
    return;
  }
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
