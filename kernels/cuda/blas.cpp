// The cuBLAS side of the CUDA GEMM, and the dispatcher that picks between cuBLAS and
// the native kernels (gemm.h).
//
// cuBLAS is column-major; Ember's matrices are strided. A matrix M (rows x cols,
// strides rs, cs) is op(X) for a column-major X with leading dimension ld when one
// stride is 1: rs == 1 gives X = M, ld = cs; cs == 1 gives X = M^T, ld = rs. The output
// cannot be transposed, so a row-major C (c_cs == 1) is computed as its transpose:
// C^T = B^T . A^T, an n x m column-major product with ldc = c_rs; a column-major C
// (c_rs == 1) directly as C = A . B.
//
// The default rule (gemm): cuBLAS whenever it can express the three operands, i.e.
// each has a unit stride on one side, a leading dimension at least as large as the
// other side, non-negative batch strides, and every size within int range. cuBLAS is
// the default because on Hopper its float16/bfloat16 and float64 kernels use wgmma /
// DMMA, which the native kernels do not, and its float32 kernel is tuned further than
// the SIMT one (expected, not yet measured: `ember-bench --device cuda --suite gemm`
// times both on the first GPU run). The native kernels take everything else, and all
// of it under EMBER_KERNELS=native.
#include <cublas_v2.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"

namespace ember::cuda {
namespace {

// One cuBLAS handle per device, created on first use. A handle has one current
// stream, so the call that sets it and the GEMM that uses it run under the device's
// lock (the GEMM only queues work, so the lock is held for microseconds). Handles are
// never destroyed: destroying them from a static destructor races the CUDA runtime's
// own teardown at exit.
struct BlasHandle {
  std::mutex lock;
  cublasHandle_t handle = nullptr;
};

BlasHandle& blas_handle(int device) {
  static std::mutex table_lock;
  static std::vector<std::unique_ptr<BlasHandle>> table;
  std::lock_guard<std::mutex> guard(table_lock);
  if (device < 0) throw ValueError("cuBLAS: invalid device index " + std::to_string(device));
  if (table.size() <= size_t(device)) table.resize(size_t(device) + 1);
  auto& slot = table[size_t(device)];
  if (!slot) {
    auto h = std::make_unique<BlasHandle>();
    DeviceScope on(device);
    EMBER_CUDA_CHECK(cublasCreate(&h->handle));
    // Half-type products accumulate in float32 to the end: without this, cuBLAS may
    // add split-K partial sums in the half type (a second rounding the native kernel
    // and the CPU do not make).
    const cublasStatus_t st = cublasSetMathMode(
        h->handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (st != CUBLAS_STATUS_SUCCESS) cublasDestroy(h->handle);
    EMBER_CUDA_CHECK(st);
    slot = std::move(h);
  }
  return *slot;
}

// M (rows x cols, strides rs, cs) as op(X), X column-major with leading dimension ld.
struct ColMajor {
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 1;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// M itself column-major (no transpose): needs a unit row stride (or a single row).
bool as_plain(int64_t rows, int64_t cols, int64_t rs, int64_t cs, ColMajor& out) {
  if (rs != 1 && rows != 1) return false;
  const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
  if (ld < std::max<int64_t>(rows, 1) || !fits_int(ld)) return false;
  out = {CUBLAS_OP_N, ld};
  return true;
}

// M as plain or as the transpose of a column-major matrix.
bool as_col_major(int64_t rows, int64_t cols, int64_t rs, int64_t cs, ColMajor& out) {
  if (as_plain(rows, cols, rs, cs, out)) return true;
  if (as_plain(cols, rows, cs, rs, out)) {
    out.op = CUBLAS_OP_T;
    return true;
  }
  return false;
}

// The whole product in cuBLAS terms: C' = op(X1) . op(X2), C' (mm x nn) column-major.
struct BlasCall {
  int64_t mm, nn;
  ColMajor x1, x2, c;
  bool swapped;  // true: C' = C^T, X1 from B, X2 from A
};

bool plan(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_bs, int64_t a_rs, int64_t a_cs,
          int64_t b_bs, int64_t b_rs, int64_t b_cs, int64_t c_bs, int64_t c_rs, int64_t c_cs,
          BlasCall& call) {
  if (!fits_int(batch) || !fits_int(m) || !fits_int(n) || !fits_int(k)) return false;
  if (batch > 1 && (a_bs < 0 || b_bs < 0 || c_bs < 0)) return false;
  // Row-major C first (the common case): C^T = B^T . A^T.
  if (as_plain(n, m, c_cs, c_rs, call.c) && as_col_major(n, k, b_cs, b_rs, call.x1) &&
      as_col_major(k, m, a_cs, a_rs, call.x2)) {
    call.mm = n;
    call.nn = m;
    call.swapped = true;
    return true;
  }
  if (as_plain(m, n, c_rs, c_cs, call.c) && as_col_major(m, k, a_rs, a_cs, call.x1) &&
      as_col_major(k, n, b_rs, b_cs, call.x2)) {
    call.mm = m;
    call.nn = n;
    call.swapped = false;
    return true;
  }
  return false;
}

[[noreturn]] void not_floating(DType dt) {
  throw NotImplementedError(std::string("gemm: not implemented for dtype ") + dtype_name(dt) +
                            " on cuda");
}

}  // namespace

KernelChoice kernel_choice() {
  static const KernelChoice choice = [] {
    const char* v = std::getenv("EMBER_KERNELS");
    return v && std::strcmp(v, "native") == 0 ? KernelChoice::native : KernelChoice::fastest;
  }();
  return choice;
}

bool gemm_cublas_supports(int64_t batch, int64_t m, int64_t n, int64_t k,
                          int64_t a_bs, int64_t a_rs, int64_t a_cs,
                          int64_t b_bs, int64_t b_rs, int64_t b_cs,
                          int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  BlasCall call;
  return plan(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs, call);
}

void gemm_native(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                 const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                 void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (!is_floating(dt)) not_floating(dt);
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) return gemm_scale_c(dt, batch, m, n, beta, c, c_bs, c_rs, c_cs, stream);
  if (is_half(dt))
    gemm_tensor_core(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta,
                     c, c_bs, c_rs, c_cs, stream);
  else
    gemm_simt(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs,
              c_rs, c_cs, stream);
}

void gemm_cublas(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                 const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                 void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (!is_floating(dt)) not_floating(dt);
  if (batch <= 0 || m <= 0 || n <= 0) return;
  // k == 0 is C = beta * C; done by our own kernel so that beta == 0 surely never
  // reads C, whatever cuBLAS version runs.
  if (k <= 0) return gemm_scale_c(dt, batch, m, n, beta, c, c_bs, c_rs, c_cs, stream);
  BlasCall call;
  if (!plan(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs, call))
    return gemm_native(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta,
                       c, c_bs, c_rs, c_cs, stream);

  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // plain FP32, never TF32
  switch (dt) {
    case DType::Float32: break;
    case DType::Float64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
    case DType::Float16: type = CUDA_R_16F; break;
    case DType::BFloat16: type = CUDA_R_16BF; break;
    default: not_floating(dt);
  }
  // Scaling factors have the compute type: double for float64, float otherwise.
  const float alpha_f = float(alpha), beta_f = float(beta);
  const void* alpha_p = dt == DType::Float64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = dt == DType::Float64 ? static_cast<const void*>(&beta) : &beta_f;

  const void* x1 = call.swapped ? b : a;
  const void* x2 = call.swapped ? a : b;
  const int64_t x1_bs = batch > 1 ? (call.swapped ? b_bs : a_bs) : 0;
  const int64_t x2_bs = batch > 1 ? (call.swapped ? a_bs : b_bs) : 0;
  const int64_t cc_bs = batch > 1 ? c_bs : 0;

  BlasHandle& h = blas_handle(current_device_index());
  std::lock_guard<std::mutex> guard(h.lock);
  EMBER_CUDA_CHECK(cublasSetStream(h.handle, stream));
  EMBER_CUDA_CHECK(cublasSetPointerMode(h.handle, CUBLAS_POINTER_MODE_HOST));
  EMBER_CUDA_CHECK(cublasGemmStridedBatchedEx(
      h.handle, call.x1.op, call.x2.op, int(call.mm), int(call.nn), int(k), alpha_p, x1, type,
      int(call.x1.ld), x1_bs, x2, type, int(call.x2.ld), x2_bs, beta_p, c, type, int(call.c.ld),
      cc_bs, int(batch), compute, CUBLAS_GEMM_DEFAULT));
}

void gemm(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
          const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
          void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (kernel_choice() == KernelChoice::native ||
      !gemm_cublas_supports(batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs))
    gemm_native(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c,
                c_bs, c_rs, c_cs, stream);
  else
    gemm_cublas(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c,
                c_bs, c_rs, c_cs, stream);
}

}  // namespace ember::cuda
