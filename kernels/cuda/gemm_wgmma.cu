// The Hopper GEMM for float16 and bfloat16: C = alpha * A.B + beta * C with wgmma,
// the warpgroup-wide asynchronous matrix instruction of sm_90a (H100, H200). On
// Hopper the older mma.sync of gemm_mma.cu reaches about half the tensor cores'
// rate; wgmma reads both operands straight from shared memory, 128 threads at once,
// and runs while the threads go on issuing copies.
//
// Tiling. A block of 2 warpgroups (256 threads) computes a 128 x 256 tile of C,
// walking k in steps of BK = 64. Warpgroup w owns rows 64w..64w+63: per k16 step
// one wgmma.m64n256k16 with 128 float accumulators per thread.
//
// Pipeline. As in gemm_mma.cu every thread copies global -> shared with cp.async
// (16 bytes a request, zero-filled past the matrix edge), STAGES = 4 panels deep.
// A panel is copied over a stage only after both warpgroups' wgmma on it completed
// (wgmma.wait_group 1, then a barrier). cp.async writes through the generic proxy
// and wgmma reads through the async proxy, so each thread fences
// (fence.proxy.async) between its copies landing and the barrier.
//
// Shared layouts: wgmma's 128-byte swizzle (PTX ISA, "matrix descriptor"). Memory
// is cut in 1024-byte atoms of 8 rows of 128 bytes; the 16-byte chunk c of row r
// sits at chunk position c ^ (r & 7). A k-contiguous operand (A always; B when it is
// stored n x k) keeps 64 k values per row: rows one after the other, so 8-row groups
// are 1024 bytes apart (the descriptor's stride byte offset, SBO) and the k16 step j
// starts 32j bytes into the row. An n-contiguous B (row-major k x n) keeps 64 n
// values per row and one row per k: a 64-wide column block of the panel holds its
// 64 k rows contiguously (8 KiB), so 8-k groups are SBO = 1024 bytes apart, column
// blocks LBO = 8192 bytes apart, the k16 step j starts 2048j bytes in, and wgmma
// is told B is MN-major (its transpose flag).
//
// Accumulator layout (m64nNk16, f32): thread l of warp q in the warpgroup holds
// d[4i + 2h + e] = C(16q + l/4 + 8h, 8i + 2(l%4) + e) for i < N/8, h, e in {0, 1}.
//
// This file is compiled twice (the project's sm_90 pass and this file's sm_90a
// pass); only the sm_90a code has a kernel body. wgmma_available() runs a probe once
// per device that says which of the two the driver loaded.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include <cuda.h>  // CUtensorMap and its enums (the encoder is reached through the runtime)
#include <cudaTypedefs.h>

#include "kernels/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/types.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define EMBER_WGMMA_DEVICE 1
#endif

namespace ember::cuda {
namespace {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, kThreads = 256;
constexpr int kABytes = BM * BK * 2, kBBytes = BN * BK * 2, kStageBytes = kABytes + kBBytes;
constexpr int kSmemBytes = STAGES * kStageBytes + 1024;  // + room to align the base to an atom
[[maybe_unused]] constexpr int kGroupM = 8;  // blocks walk the tiles in bands of 8 tile rows (L2 reuse)

template <class T>
struct Operand {
  const T* ptr;
  int64_t bs, so, sq;  // element (o, q) of matrix p: ptr + p*bs + o*so + q*sq
};

__global__ void wgmma_probe_kernel(int* out) {
#ifdef EMBER_WGMMA_DEVICE
  *out = 1;
#else
  *out = 0;
#endif
}

#ifdef EMBER_WGMMA_DEVICE
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A shared-memory matrix descriptor: start address, leading and stride byte offsets
// (each in 16-byte units, 14 bits), swizzle mode 1 = 128 bytes in bits 62-63.
__device__ __forceinline__ uint64_t descriptor(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((addr >> 4) & 0x3FFF) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
}

// d += A.B for one m64n256k16 step; kTransB: B is MN-major (n-contiguous). The 128
// accumulators are operands %0..%127, the descriptors %128 and %129; the scale-d
// predicate is set from %130 (always 1: the accumulators start at zero).
#define EMBER_WGMMA_D                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                     \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                            \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                            \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                            \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                            \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                            \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define EMBER_ACC8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define EMBER_ACC32(i) EMBER_ACC8(i), EMBER_ACC8(i + 8), EMBER_ACC8(i + 16), EMBER_ACC8(i + 24)
#define EMBER_WGMMA(type, trans)                                                                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                          \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." type "." type " " EMBER_WGMMA_D           \
               ", %128, %129, p, 1, 1, 0, " #trans ";\n}\n"                                            \
               : EMBER_ACC32(0), EMBER_ACC32(32), EMBER_ACC32(64), EMBER_ACC32(96)                    \
               : "l"(da), "l"(db), "r"(1)                                                             \
               : "memory")
template <class T, int kTransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
  if constexpr (std::is_same_v<T, Half>) {
    if constexpr (kTransB) EMBER_WGMMA("f16", 1);
    else EMBER_WGMMA("f16", 0);
  } else {
    if constexpr (kTransB) EMBER_WGMMA("bf16", 1);
    else EMBER_WGMMA("bf16", 0);
  }
}
#undef EMBER_WGMMA
#undef EMBER_ACC32
#undef EMBER_ACC8
#undef EMBER_WGMMA_D

// Byte offset of 16-byte chunk `chunk` of 128-byte row `row` in a swizzled panel.
__device__ __forceinline__ uint32_t swz(uint32_t row, uint32_t chunk) {
  return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// Queues this thread's copies of one stage: A (BM x BK, k-contiguous) and B, either
// n x k k-contiguous (kTransB = 0) or k x n n-contiguous (kTransB = 1).
template <class T, int kTransB>
__device__ __forceinline__ void load_stage(uint32_t sa, const T* a, const Operand<T>& A, const T* b,
                                           const Operand<T>& B, int64_t m0, int64_t n0, int64_t k0,
                                           int64_t m, int64_t n, int64_t k) {
#pragma unroll
  for (int h = 0; h < BM * BK / 8 / kThreads; ++h) {  // 4 chunks of A per thread
    const int id = threadIdx.x + h * kThreads, row = id >> 3, chunk = id & 7;
    const int64_t o = m0 + row, q = k0 + chunk * 8;
    const int64_t valid = o < m ? min(int64_t(8), max(int64_t(0), k - q)) : 0;
    const T* src = valid > 0 ? a + o * A.so + q * A.sq : a;
    cp_async16(sa + swz(row, chunk), src, int(valid) * 2);
  }
  const uint32_t sb = sa + kABytes;
#pragma unroll
  for (int h = 0; h < BN * BK / 8 / kThreads; ++h) {  // 8 chunks of B per thread
    const int id = threadIdx.x + h * kThreads;
    int64_t o, q, valid;
    uint32_t dst;
    if constexpr (kTransB == 0) {  // [n][64 k]
      const int row = id >> 3, chunk = id & 7;
      o = n0 + row;
      q = k0 + chunk * 8;
      valid = o < n ? min(int64_t(8), max(int64_t(0), k - q)) : 0;
      dst = sb + swz(row, chunk);
    } else {  // 4 column blocks of [64 k][64 n]
      const int kk = id >> 5, nc = id & 31;
      q = k0 + kk;
      o = n0 + nc * 8;
      valid = q < k ? min(int64_t(8), max(int64_t(0), n - o)) : 0;
      dst = sb + uint32_t(nc >> 3) * 8192u + swz(kk, nc & 7);
    }
    const T* src = valid > 0 ? b + o * B.so + q * B.sq : b;
    cp_async16(dst, src, int(valid) * 2);
  }
}
// The tile a block computes: blocks walk the tiles in bands of kGroupM tile rows, so
// consecutive blocks share A's rows in L2.
__device__ __forceinline__ void tile_origin(int64_t m, int64_t n, int64_t& m0, int64_t& n0) {
  const int64_t m_tiles = (m + BM - 1) / BM, n_tiles = (n + BN - 1) / BN;
  const int64_t bid = blockIdx.x, per_group = kGroupM * n_tiles;
  const int64_t first_m = bid / per_group * kGroupM;
  const int64_t group_rows = min(m_tiles - first_m, int64_t(kGroupM));
  m0 = (first_m + (bid % per_group) % group_rows) * BM;
  n0 = (bid % per_group) / group_rows * BN;
}

// One k panel's products for warpgroup wg: BK / 16 wgmma steps on the stage at `stage`.
template <class T, int kTransB>
__device__ __forceinline__ void multiply_stage(float (&d)[128], uint32_t stage, int wg) {
  const uint32_t sa = stage + uint32_t(wg) * (64 * 128), sb = stage + kABytes;
#pragma unroll
  for (int j = 0; j < BK / 16; ++j) {
    const uint64_t da = descriptor(sa + 32u * j, 16, 1024);
    const uint64_t db = kTransB ? descriptor(sb + 2048u * j, 8192, 1024) : descriptor(sb + 32u * j, 16, 1024);
    wgmma_m64n256k16<T, kTransB>(d, da, db);
  }
}

// mbarrier operations (PTX ISA, "Parallel synchronization: mbarrier"): a barrier's
// phase completes once its expected arrivals and transaction bytes are all in.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Returns once the phase of parity `parity` has completed. A phase that never
// completes (a copy that never lands, an arrival count that is off) would hang the
// GPU and every process waiting on it; after 10 s of the global timer the kernel
// traps instead, which the host sees as a launch failure.
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  uint64_t start = 0;
  for (uint32_t spins = 0;; ++spins) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (spins == 64) start = global_ns();  // the clock is read only by waits that are already long
    if (spins > 64 && (spins & 1023) == 0 && global_ns() - start > 10'000'000'000ull) __trap();
  }
}
// A 3-d box of `map` at (c0, c1, c2) into shared memory at dst; its bytes count
// towards `bar`'s transaction. Parts of the box past the tensor's edge are zeros.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
#endif  // EMBER_WGMMA_DEVICE

template <class T, int kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, Operand<T> A,
                      Operand<T> B, float beta, T* __restrict__ c, int64_t c_bs, int64_t c_rs,
                      int64_t c_cs, bool c_pairs) {
#ifdef EMBER_WGMMA_DEVICE
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;  // atoms are 1024-byte aligned
  const int wg = threadIdx.x >> 7;
  int64_t m0, n0;
  tile_origin(m, n, m0, n0);
  const int64_t k_tiles = (k + BK - 1) / BK;

  for (int64_t p = blockIdx.y; p < batch; p += gridDim.y) {
    const T* a = A.ptr + p * A.bs;
    const T* b = B.ptr + p * B.bs;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < k_tiles) load_stage<T, kTransB>(base + s * kStageBytes, a, A, b, B, m0, n0, s * BK, m, n, k);
      cp_async_commit();
    }
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<STAGES - 2>();
      fence_proxy_async();
      __syncthreads();  // panel kt is in shared memory, for every thread and the async proxy
      wgmma_fence();
      multiply_stage<T, kTransB>(d, base + uint32_t(kt % STAGES) * kStageBytes, wg);
      wgmma_commit();
      wgmma_wait<1>();  // this warpgroup's products on panel kt-1 are done
      __syncthreads();  // ... and the other warpgroup's: its stage may be refilled
      const int64_t next = kt + STAGES - 1;
      if (next < k_tiles)
        load_stage<T, kTransB>(base + uint32_t(next % STAGES) * kStageBytes, a, A, b, B, m0, n0, next * BK, m, n, k);
      cp_async_commit();
    }
    wgmma_wait<0>();
    cp_async_wait<0>();
    __syncthreads();  // no copy or product still reads shared memory when the next entry starts

    // C = alpha * d + beta * C (accumulator layout in the file comment); beta == 0
    // never reads C. Written out here rather than in a helper: as a function, even
    // force-inlined, ptxas moved the accumulators to the stack.
    {
      T* cp = c + p * c_bs;
      const int warp_in_wg = (threadIdx.x >> 5) & 3, lane_ = threadIdx.x & 31;
      const int64_t row0 = m0 + wg * 64 + warp_in_wg * 16 + (lane_ >> 2);
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
        const int64_t col = n0 + i * 8 + 2 * (lane_ & 3);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = row0 + 8 * h;
          if (row >= m || col >= n) continue;
          const float v0 = alpha * d[4 * i + 2 * h], v1 = alpha * d[4 * i + 2 * h + 1];
          T* dst = cp + row * c_rs + col * c_cs;
          if (c_pairs && col + 1 < n) {  // two neighbours in one 4-byte store
            float w0 = v0, w1 = v1;
            if (beta != 0.f) {
              w0 += beta * to_acc(dst[0]);
              w1 += beta * to_acc(dst[1]);
            }
            *reinterpret_cast<uint32_t*>(dst) =
                uint32_t(from_acc<T>(w0).bits) | (uint32_t(from_acc<T>(w1).bits) << 16);
          } else {
            *dst = from_acc<T>(beta != 0.f ? v0 + beta * to_acc(*dst) : v0);
            if (col + 1 < n) {
              T* d1 = dst + c_cs;
              *d1 = from_acc<T>(beta != 0.f ? v1 + beta * to_acc(*d1) : v1);
            }
          }
        }
      }
    }
  }
#endif  // EMBER_WGMMA_DEVICE
}

// The same tile with the copies moved off the multiplying threads: warpgroup 2 (one
// thread of it) is the producer, issuing the tensor memory accelerator's bulk tensor
// copies (cp.async.bulk.tensor) of each panel, which write the 128-byte swizzled
// layout themselves and report their bytes to the stage's `full` mbarrier; the two
// warpgroups (warps 0-7) only wait for `full`, multiply, and arrive on the stage's
// `empty` mbarrier (one arrival per warp) once wgmma.wait_group says their products
// on it are done. No block-wide barrier in the main loop: the copies of the next
// panels overlap the products without any thread waiting on the other role.
// Stage i's barriers pass phase r on its r-th use; both roles count uses across batch
// entries, so a block's phases carry on from one matrix to the next. 384 threads
// leave 168 registers each at launch; setmaxnreg then moves them from the producer
// (down to 40) to the two multiplying warpgroups (up to 232: 128 accumulators and
// the epilogue's addressing).
constexpr int kTmaThreads = kThreads + 128;

template <class T, int kTransB>
__global__ void __launch_bounds__(kTmaThreads, 1)
    gemm_wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                          T* __restrict__ c, int64_t c_bs, int64_t c_rs, int64_t c_cs, bool c_pairs) {
#ifdef EMBER_WGMMA_DEVICE
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) uint64_t full[STAGES], empty[STAGES];
  const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(smem_addr(&full[s]), 1);   // the producer's arrive.expect_tx
      mbar_init(smem_addr(&empty[s]), 8);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  int64_t m0, n0;
  tile_origin(m, n, m0, n0);
  const int64_t k_tiles = (k + BK - 1) / BK;

  if (warp >= kThreads / 32) {  // the producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x != kThreads) return;
    // An n-contiguous B comes in 64-column boxes; those wholly past n are not
    // issued (whether the copy engine counts the bytes of a box entirely outside the
    // tensor is not documented): their columns of shared memory keep older data, which
    // only reaches output columns past n, never stored.
    const int b_boxes = kTransB ? int(min(int64_t(BN / 64), (n - n0 + 63) / 64)) : 1;
    const uint32_t stage_bytes = kTransB ? kABytes + b_boxes * 8192 : kStageBytes;
    uint32_t use = 0;  // panels issued so far, over every batch entry
    for (int64_t p = blockIdx.y; p < batch; p += gridDim.y)
      for (int64_t kt = 0; kt < k_tiles; ++kt, ++use) {
        const uint32_t s = use % STAGES, round = use / STAGES;
        if (round > 0) mbar_wait(smem_addr(&empty[s]), (round - 1) & 1);  // its last products are done
        const uint32_t bar = smem_addr(&full[s]), stage = base + s * kStageBytes;
        mbar_arrive_expect_tx(bar, stage_bytes);  // a box partly past an edge counts whole
        const int k0 = int(kt * BK), pp = int(p);
        tma_load(stage, &map_a, k0, int(m0), pp, bar);
        if constexpr (kTransB) {
          for (int j = 0; j < b_boxes; ++j) tma_load(stage + kABytes + j * 8192, &map_b, int(n0) + 64 * j, k0, pp, bar);
        } else {
          tma_load(stage + kABytes, &map_b, k0, int(n0), pp, bar);
        }
      }
  } else {  // the two multiplying warpgroups
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int wg = warp >> 2;
    uint32_t use = 0;
    for (int64_t p = blockIdx.y; p < batch; p += gridDim.y) {
      float d[128];
  #pragma unroll
      for (int i = 0; i < 128; ++i) d[i] = 0.f;
      for (int64_t kt = 0; kt < k_tiles; ++kt, ++use) {
        const uint32_t s = use % STAGES;
        mbar_wait(smem_addr(&full[s]), (use / STAGES) & 1);
        wgmma_fence();
        multiply_stage<T, kTransB>(d, base + s * kStageBytes, wg);
        wgmma_commit();
        wgmma_wait<1>();  // the products on the previous panel are done: its stage is free
        if (kt > 0 && lane == 0) mbar_arrive(smem_addr(&empty[(use + STAGES - 1) % STAGES]));
      }
      wgmma_wait<0>();
      if (k_tiles > 0 && lane == 0) mbar_arrive(smem_addr(&empty[(use + STAGES - 1) % STAGES]));
      // C = alpha * d + beta * C (accumulator layout in the file comment); beta == 0
      // never reads C. Written out here rather than in a helper: as a function, even
      // force-inlined, ptxas moved the accumulators to the stack.
      {
        T* cp = c + p * c_bs;
        const int warp_in_wg = (threadIdx.x >> 5) & 3, lane_ = threadIdx.x & 31;
        const int64_t row0 = m0 + wg * 64 + warp_in_wg * 16 + (lane_ >> 2);
  #pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
          const int64_t col = n0 + i * 8 + 2 * (lane_ & 3);
  #pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int64_t row = row0 + 8 * h;
            if (row >= m || col >= n) continue;
            const float v0 = alpha * d[4 * i + 2 * h], v1 = alpha * d[4 * i + 2 * h + 1];
            T* dst = cp + row * c_rs + col * c_cs;
            if (c_pairs && col + 1 < n) {  // two neighbours in one 4-byte store
              float w0 = v0, w1 = v1;
              if (beta != 0.f) {
                w0 += beta * to_acc(dst[0]);
                w1 += beta * to_acc(dst[1]);
              }
              *reinterpret_cast<uint32_t*>(dst) =
                  uint32_t(from_acc<T>(w0).bits) | (uint32_t(from_acc<T>(w1).bits) << 16);
            } else {
              *dst = from_acc<T>(beta != 0.f ? v0 + beta * to_acc(*dst) : v0);
              if (col + 1 < n) {
                T* d1 = dst + c_cs;
                *d1 = from_acc<T>(beta != 0.f ? v1 + beta * to_acc(*d1) : v1);
              }
            }
          }
        }
      }
    }
  }
#endif  // EMBER_WGMMA_DEVICE
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Which operand layouts the kernel reads: A k-contiguous; B k-contiguous (trans 0)
// or n-contiguous (trans 1); rows of whole 16-byte chunks. -1 when neither.
int b_layout(const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_bs,
             int64_t b_rs, int64_t b_cs, int64_t batch) {
  const bool batched = batch > 1;
  if (!aligned16(a) || !aligned16(b) || a_cs != 1 || a_rs % 8 != 0 || (batched && (a_bs % 8 || b_bs % 8)))
    return -1;
  if (b_rs == 1 && b_cs % 8 == 0) return 0;
  if (b_cs == 1 && b_rs % 8 == 0) return 1;
  return -1;
}

template <class T, int kTransB>
void launch(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const T* a, int64_t a_bs,
            int64_t a_rs, const T* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, float beta, T* c,
            int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  const int64_t tiles = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
  if (tiles > INT32_MAX) throw ValueError("gemm: matrix too large for the CUDA grid");
  // B read as (o = n, q = k).
  const Operand<T> A{a, a_bs, a_rs, 1}, B{b, b_bs, b_cs, b_rs};
  auto kernel = gemm_wgmma_kernel<T, kTransB>;
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const bool c_pairs = c_cs == 1 && c_rs % 2 == 0 && (batch == 1 || c_bs % 2 == 0) &&
                       reinterpret_cast<uintptr_t>(c) % 4 == 0;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  kernel<<<grid, kThreads, kSmemBytes, stream>>>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, c_pairs);
  EMBER_CUDA_CHECK_LAUNCH();
}

// cuTensorMapEncodeTiled, a driver function, reached through the runtime so that
// Ember links no libcuda; null when the driver lacks it.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      f = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A tensor map of `batch` matrices of 16-bit elements, each `outer` rows of `inner`
// contiguous elements, read in boxes of box_inner x box_outer into the 128-byte
// swizzle. False (the cp.async kernel then runs) when the bulk copy cannot describe
// the operand: a broadcast or overlapping batch, a size past its 32-bit coordinates,
// or a driver without the encoder.
bool encode_map(CUtensorMap& map, DType dt, const void* ptr, int64_t inner, int64_t outer, int64_t batch,
                int64_t outer_stride, int64_t batch_stride, uint32_t box_inner, uint32_t box_outer) {
  const auto encode = tensor_map_encoder();
  if (!encode || inner >= INT32_MAX || outer >= INT32_MAX || batch >= INT32_MAX) return false;
  if (batch == 1) batch_stride = outer_stride * outer;  // never stepped over; any valid value
  if (batch_stride < outer_stride * outer || batch_stride * 2 >= (int64_t(1) << 40)) return false;
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), cuuint64_t(batch)};
  const cuuint64_t strides[2] = {cuuint64_t(outer_stride * 2), cuuint64_t(std::max<int64_t>(batch_stride, 1) * 2)};
  const cuuint32_t box[3] = {box_inner, box_outer, 1}, steps[3] = {1, 1, 1};
  const CUresult r = encode(&map, dt == DType::Float16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                            3, const_cast<void*>(ptr), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

std::atomic<int64_t> tma_launches{0};  // for tests: did the bulk-copy kernel run

// The bulk-copy kernel when both operands have tensor maps; false otherwise.
template <class T, int kTransB>
bool launch_tma(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const T* a, int64_t a_bs,
                int64_t a_rs, const T* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, float beta, T* c, int64_t c_bs,
                int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  CUtensorMap map_a, map_b;
  if (!encode_map(map_a, dt, a, k, m, batch, a_rs, a_bs, BK, BM)) return false;
  const bool b_ok = kTransB ? encode_map(map_b, dt, b, n, k, batch, b_rs, b_bs, 64, BK)   // [k][n]: 64 x 64 boxes
                            : encode_map(map_b, dt, b, k, n, batch, b_cs, b_bs, BK, BN);  // [n][k]
  if (!b_ok) return false;
  const int64_t tiles = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
  if (tiles > INT32_MAX) throw ValueError("gemm: matrix too large for the CUDA grid");
  auto kernel = gemm_wgmma_tma_kernel<T, kTransB>;
  // setmaxnreg.inc waits until the block's pool has the registers it asks for: with
  // fewer than 168 per thread at launch (a future edit, another compiler) the
  // multipliers would wait forever. Such a build takes the cp.async kernel instead.
  cudaFuncAttributes attr{};
  EMBER_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  if (attr.numRegs * kTmaThreads < 128 * 40 + 256 * 232) return false;
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const bool c_pairs = c_cs == 1 && c_rs % 2 == 0 && (batch == 1 || c_bs % 2 == 0) &&
                       reinterpret_cast<uintptr_t>(c) % 4 == 0;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  kernel<<<grid, kTmaThreads, kSmemBytes, stream>>>(map_a, map_b, batch, m, n, k, alpha, beta, c, c_bs, c_rs, c_cs,
                                                    c_pairs);
  EMBER_CUDA_CHECK_LAUNCH();
  tma_launches.fetch_add(1, std::memory_order_relaxed);
  return true;
}

template <class T>
void gemm_wgmma_typed(DType dt, bool tma, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const T* a,
                      int64_t a_bs, int64_t a_rs, const T* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, int trans_b,
                      float beta, T* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (trans_b) {
    if (!(tma && launch_tma<T, 1>(dt, batch, m, n, k, alpha, a, a_bs, a_rs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs,
                                  c_cs, stream)))
      launch<T, 1>(batch, m, n, k, alpha, a, a_bs, a_rs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs, stream);
  } else {
    if (!(tma && launch_tma<T, 0>(dt, batch, m, n, k, alpha, a, a_bs, a_rs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs,
                                  c_cs, stream)))
      launch<T, 0>(batch, m, n, k, alpha, a, a_bs, a_rs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs, stream);
  }
}

}  // namespace

bool wgmma_available(int device) {
  if (device < 0) device = current_device_index();
  static std::mutex mu;
  static std::array<int8_t, 64> known{};  // 0 unknown, 1 yes, -1 no
  if (device >= int(known.size())) return false;
  std::lock_guard<std::mutex> lock(mu);
  if (known[device] == 0) {
    const cudaDeviceProp& p = properties(device);
    int ok = 0;
    if (p.major == 9 && p.minor == 0) {  // sm_90a code runs on compute capability 9.0 only
      // Plain cudaMalloc, once per device: the caching allocator's statistics stay
      // those of the user's tensors.
      DeviceScope scope(device);
      int* flag = nullptr;
      EMBER_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
      wgmma_probe_kernel<<<1, 1>>>(flag);
      cudaError_t st = cudaGetLastError();
      if (st == cudaSuccess) st = cudaMemcpy(&ok, flag, sizeof(int), cudaMemcpyDeviceToHost);
      cudaFree(flag);
      EMBER_CUDA_CHECK(st);
    }
    known[device] = ok == 1 ? 1 : -1;
  }
  return known[device] == 1;
}

bool gemm_wgmma_supports(DType dt, int64_t batch, const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                         const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs) {
  return (dt == DType::Float16 || dt == DType::BFloat16) &&
         b_layout(a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, batch) >= 0 && wgmma_available(-1);
}

namespace {

void gemm_wgmma_impl(bool tma, DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                     const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_bs,
                     int64_t b_rs, int64_t b_cs, double beta, void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs,
                     cudaStream_t stream) {
  if (!gemm_wgmma_supports(dt, batch, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs))
    throw ValueError("gemm_wgmma: needs float16 or bfloat16, a compute capability 9.0 device, a k-contiguous A "
                     "and a k- or n-contiguous B in 16-byte aligned rows");
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  const int trans_b = b_layout(a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, batch);
  if (dt == DType::Float16)
    gemm_wgmma_typed<Half>(dt, tma, batch, m, n, k, float(alpha), static_cast<const Half*>(a), a_bs, a_rs,
                           static_cast<const Half*>(b), b_bs, b_rs, b_cs, trans_b, float(beta),
                           static_cast<Half*>(c), c_bs, c_rs, c_cs, stream);
  else
    gemm_wgmma_typed<BFloat16>(dt, tma, batch, m, n, k, float(alpha), static_cast<const BFloat16*>(a), a_bs, a_rs,
                               static_cast<const BFloat16*>(b), b_bs, b_rs, b_cs, trans_b, float(beta),
                               static_cast<BFloat16*>(c), c_bs, c_rs, c_cs, stream);
}

}  // namespace

void gemm_wgmma(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  gemm_wgmma_impl(false, dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs,
                  stream);
}

int64_t gemm_wgmma_tma_launches() { return tma_launches.load(std::memory_order_relaxed); }

void gemm_wgmma_tma(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                    const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                    const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                    void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  gemm_wgmma_impl(true, dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs,
                  c_cs, stream);
}

}  // namespace ember::cuda
