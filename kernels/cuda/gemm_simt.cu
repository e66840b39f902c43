// The SIMT GEMM for float32 and float64: C = alpha * A.B + beta * C on the CUDA
// cores (FFMA / DFMA), for any sizes and strides.
//
// Each block of 256 threads computes a BO x BO tile of C (128 x 128 for float, 64 x 64
// for double), walking k in steps of BK = 8. Per step, A's BO x 8 panel and B's 8 x BO
// panel are staged in shared memory, both stored k-major ([q][o]: one row of BO per
// k), so that the inner loop reads a thread's slice of A and of B as 16-byte vectors.
// Each thread owns TM x TN = 2V x 2V outputs (8 x 8 float, 4 x 4 double, V = the
// elements in 16 bytes): rows ty*V.. and BO/2 + ty*V.., columns likewise from tx, so
// a warp reads B's row as 16 consecutive vectors (no bank conflict) and A's as two
// broadcast vectors. Every step does 2V*2V FMAs per 4V shared loads.
//
// Double buffering: while the block multiplies the panel in shared buffer `buf`, each
// thread already holds the next panel in registers (loaded from global memory before
// the multiply, so the loads are in flight during it) and stores it to buffer buf^1
// after; one barrier per step then separates both uses.
//
// Loading a panel treats A (m x k) and B^T (n x k) the same way: an "outer" index o
// (row of A, column of B) with stride so and the k index q with stride sq. Three
// loaders: k-contiguous (sq == 1, each thread reads V consecutive k of one row as one
// vector), o-contiguous (so == 1, V consecutive rows of one k), and general (any
// strides, element by element). The vector loaders need 16-byte alignment of the
// pointer, the other stride and the batch stride; edges of the matrix fall back to
// guarded scalar loads, and out-of-range elements read as zero.
#include <algorithm>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

enum class Load { k_contig, o_contig, general };

template <class T>
struct SimtTile {
  static constexpr int V = 16 / sizeof(T);  // elements per 16-byte vector
  static constexpr int BK = 8;
  static constexpr int BO = 32 * V;  // tile side: 128 (float) or 64 (double)
  static constexpr int HALF = BO / 2;
  static constexpr int LD = BO + V;  // one vector of padding per smem row: the k-contiguous
                                     // loader's scalar stores then hit 32 distinct banks
  static constexpr int kThreads = 256;
};

// One operand as the loader sees it: element (o, q) of matrix p is at
// ptr + p*bs + o*so + q*sq.
template <class T>
struct Operand {
  const T* ptr;
  int64_t bs, so, sq;
};

// One thread's walk along k through its part of an operand's panels: where its
// elements start, how far to step per panel, and how many of its rows (o) and k
// values (q) are inside the matrix. Set once per output tile, so the k loop does one
// pointer add per panel instead of 64-bit index arithmetic.
template <class T, Load L>
struct Cursor {
  const T* src;
  int64_t step, so;
  int64_t o_left, q_left;

  __device__ __forceinline__ Cursor(const T* base, const Operand<T>& op, int64_t o0, int64_t O,
                                    int64_t K) {
    using S = SimtTile<T>;
    constexpr int V = S::V;
    const int t = threadIdx.x;
    so = op.so;
    if constexpr (L == Load::k_contig) {
      const int64_t o = o0 + t / (S::BK / V), q = (t % (S::BK / V)) * V;
      src = base + o * op.so + q;
      step = S::BK;
      o_left = O - o;
      q_left = K - q;
    } else {
      const int64_t q = t / (S::BO / V), o = o0 + (t % (S::BO / V)) * V;
      src = base + o * op.so + q * op.sq;
      step = S::BK * op.sq;
      o_left = O - o;
      q_left = K - q;
    }
  }

  // Reads this thread's V elements of the current panel into r (zero outside the
  // matrix) and moves to the next panel.
  __device__ __forceinline__ void load(T (&r)[SimtTile<T>::V]) {
    constexpr int V = SimtTile<T>::V;
    if constexpr (L == Load::k_contig) {
      if (o_left > 0 && q_left >= V) {
        const Vec16<T> v = *reinterpret_cast<const Vec16<T>*>(src);
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = v.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = (o_left > 0 && e < q_left) ? src[e] : T(0);
      }
    } else if constexpr (L == Load::o_contig) {
      if (q_left > 0 && o_left >= V) {
        const Vec16<T> v = *reinterpret_cast<const Vec16<T>*>(src);
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = v.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) r[e] = (q_left > 0 && e < o_left) ? src[e] : T(0);
      }
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) r[e] = (q_left > 0 && e < o_left) ? src[e * so] : T(0);
    }
    src += step;
    q_left -= SimtTile<T>::BK;
  }
};

// Writes the registers of Cursor::load into the k-major shared panel sm[q][o].
template <class T, Load L>
__device__ __forceinline__ void store_panel(T* sm, const T (&r)[SimtTile<T>::V]) {
  using S = SimtTile<T>;
  constexpr int V = S::V;
  const int t = threadIdx.x;
  if constexpr (L == Load::k_contig) {
    const int o = t / (S::BK / V), q = (t % (S::BK / V)) * V;
#pragma unroll
    for (int e = 0; e < V; ++e) sm[(q + e) * S::LD + o] = r[e];
  } else {
    const int q = t / (S::BO / V), o = (t % (S::BO / V)) * V;
    Vec16<T> v;
#pragma unroll
    for (int e = 0; e < V; ++e) v.v[e] = r[e];
    *reinterpret_cast<Vec16<T>*>(sm + q * S::LD + o) = v;
  }
}

// float needs about 150 registers (64 accumulators, 32 operand and prefetch values,
// the two cursors), so one block of 8 warps per SM; double's 4 x 4 tile fits two.
template <class T, Load LA, Load LB>
__global__ void __launch_bounds__(256, sizeof(T) == 8 ? 2 : 1)
    gemm_simt_kernel(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, Operand<T> A,
                     Operand<T> B, T beta, T* __restrict__ c, int64_t c_bs, int64_t c_rs,
                     int64_t c_cs) {
  using S = SimtTile<T>;
  constexpr int V = S::V, BK = S::BK, BO = S::BO, LD = S::LD, TM = 2 * V;
  __shared__ alignas(16) T As[2][BK * LD];
  __shared__ alignas(16) T Bs[2][BK * LD];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t m_tiles = (m + BO - 1) / BO;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * BO;

  for (int64_t p = blockIdx.z; p < batch; p += gridDim.z) {
    const T* a = A.ptr + p * A.bs;
    const T* b = B.ptr + p * B.bs;
    for (int64_t tm = blockIdx.y; tm < m_tiles; tm += gridDim.y) {
      const int64_t m0 = tm * BO;
      T acc[TM][TM];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TM; ++j) acc[i][j] = T(0);

      Cursor<T, LA> ca(a, A, m0, m, k);
      Cursor<T, LB> cb(b, B, n0, n, k);
      T ra[V], rb[V];
      ca.load(ra);
      cb.load(rb);
      store_panel<T, LA>(As[0], ra);
      store_panel<T, LB>(Bs[0], rb);
      __syncthreads();
      int buf = 0;
      for (int64_t k0 = 0; k0 < k; k0 += BK) {
        const bool more = k0 + BK < k;
        if (more) {  // next panel into registers; the loads overlap the FMAs below
          ca.load(ra);
          cb.load(rb);
        }
        const T* as = As[buf];
        const T* bs = Bs[buf];
#pragma unroll
        for (int q = 0; q < BK; ++q) {
          const Vec16<T> a_lo = *reinterpret_cast<const Vec16<T>*>(as + q * LD + ty * V);
          const Vec16<T> a_hi = *reinterpret_cast<const Vec16<T>*>(as + q * LD + S::HALF + ty * V);
          const Vec16<T> b_lo = *reinterpret_cast<const Vec16<T>*>(bs + q * LD + tx * V);
          const Vec16<T> b_hi = *reinterpret_cast<const Vec16<T>*>(bs + q * LD + S::HALF + tx * V);
          T av[TM], bv[TM];
#pragma unroll
          for (int e = 0; e < V; ++e) {
            av[e] = a_lo.v[e];
            av[V + e] = a_hi.v[e];
            bv[e] = b_lo.v[e];
            bv[V + e] = b_hi.v[e];
          }
#pragma unroll
          for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TM; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        if (more) {
          store_panel<T, LA>(As[buf ^ 1], ra);
          store_panel<T, LB>(Bs[buf ^ 1], rb);
        }
        __syncthreads();
        buf ^= 1;
      }

      T* cp = c + p * c_bs;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int64_t row = m0 + (i < V ? ty * V + i : S::HALF + ty * V + (i - V));
        if (row >= m) continue;
#pragma unroll
        for (int j = 0; j < TM; ++j) {
          const int64_t col = n0 + (j < V ? tx * V + j : S::HALF + tx * V + (j - V));
          if (col >= n) continue;
          T* dst = cp + row * c_rs + col * c_cs;
          *dst = beta == T(0) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *dst;
        }
      }
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The loader an operand can use: a vector loader when its unit stride, the other
// stride, the batch stride and the pointer allow 16-byte loads, general otherwise.
template <class T>
Load pick_load(const Operand<T>& op, int64_t batch) {
  constexpr int V = SimtTile<T>::V;
  const bool base_ok = aligned16(op.ptr) && (batch == 1 || op.bs % V == 0);
  if (base_ok && op.sq == 1 && op.so % V == 0) return Load::k_contig;
  if (base_ok && op.so == 1 && op.sq % V == 0) return Load::o_contig;
  return Load::general;
}

template <class T, Load LA, Load LB>
void launch_simt(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, const Operand<T>& A,
                 const Operand<T>& B, T beta, T* c, int64_t c_bs, int64_t c_rs, int64_t c_cs,
                 cudaStream_t stream) {
  constexpr int BO = SimtTile<T>::BO;
  const int64_t n_tiles = (n + BO - 1) / BO, m_tiles = (m + BO - 1) / BO;
  if (n_tiles > INT32_MAX) throw ValueError("gemm: n is too large for the CUDA grid");
  // y and z are limited to 65535 blocks; the kernel loops over what does not fit.
  const dim3 grid(static_cast<unsigned>(n_tiles), static_cast<unsigned>(std::min<int64_t>(m_tiles, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  gemm_simt_kernel<T, LA, LB><<<grid, SimtTile<T>::kThreads, 0, stream>>>(
      batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs);
  EMBER_CUDA_CHECK_LAUNCH();
}

template <class T>
void gemm_simt_typed(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                     int64_t a_bs, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_bs,
                     int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_bs, int64_t c_rs,
                     int64_t c_cs, cudaStream_t stream) {
  // A is (o = row, q = k); B^T is (o = column of B, q = k).
  const Operand<T> A{a, a_bs, a_rs, a_cs}, B{b, b_bs, b_cs, b_rs};
  const Load la = pick_load(A, batch), lb = pick_load(B, batch);
  constexpr Load K = Load::k_contig, O = Load::o_contig, G = Load::general;
  // Four vector combinations; when either operand needs the general loader, both take it
  // (rare, and it keeps the number of compiled kernels down).
  if (la == G || lb == G)
    launch_simt<T, G, G>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else if (la == K && lb == K)
    launch_simt<T, K, K>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else if (la == K && lb == O)
    launch_simt<T, K, O>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else if (la == O && lb == K)
    launch_simt<T, O, K>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else
    launch_simt<T, O, O>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
}

// C = beta * C, element by element (beta == 0 writes zeros and never reads C).
template <class T>
__global__ void scale_c_kernel(int64_t total, int64_t m, int64_t n, acc_t<T> beta, T* c,
                               int64_t c_bs, int64_t c_rs, int64_t c_cs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t col = i % n, row = (i / n) % m, p = i / (n * m);
    T* dst = c + p * c_bs + row * c_rs + col * c_cs;
    *dst = beta == acc_t<T>(0) ? from_acc<T>(acc_t<T>(0)) : from_acc<T>(beta * to_acc(*dst));
  }
}

}  // namespace

void gemm_simt(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
               const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
               const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
               void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  switch (dt) {
    case DType::Float32:
      gemm_simt_typed<float>(batch, m, n, k, float(alpha), static_cast<const float*>(a), a_bs, a_rs,
                             a_cs, static_cast<const float*>(b), b_bs, b_rs, b_cs, float(beta),
                             static_cast<float*>(c), c_bs, c_rs, c_cs, stream);
      return;
    case DType::Float64:
      gemm_simt_typed<double>(batch, m, n, k, alpha, static_cast<const double*>(a), a_bs, a_rs,
                              a_cs, static_cast<const double*>(b), b_bs, b_rs, b_cs, beta,
                              static_cast<double*>(c), c_bs, c_rs, c_cs, stream);
      return;
    default:
      throw NotImplementedError(std::string("gemm_simt: not implemented for dtype ") + dtype_name(dt));
  }
}

void gemm_scale_c(DType dt, int64_t batch, int64_t m, int64_t n, double beta,
                  void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (!is_floating(dt))
    throw NotImplementedError(std::string("gemm: not implemented for dtype ") + dtype_name(dt) +
                              " on cuda");
  dispatch_floating(dt, "gemm_scale_c", "cuda", [&]<class T>() {
    launch_1d(batch * m * n, stream, scale_c_kernel<T>, batch * m * n, m, n,
              static_cast<acc_t<T>>(beta), static_cast<T*>(c), c_bs, c_rs, c_cs);
  });
}

}  // namespace ember::cuda
