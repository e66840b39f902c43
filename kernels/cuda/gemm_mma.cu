// The tensor-core GEMM for float16 and bfloat16: C = alpha * A.B + beta * C with
// mma.sync.m16n8k16 (inputs in T, products summed in float32), any sizes and strides.
//
// Tiling. A block of 8 warps computes a 128 x 128 tile of C, walking k in steps of
// BK = 32. Warps sit 2 (m) x 4 (n), each owning 64 x 32 outputs: 4 x 4 mma tiles of
// 16 x 8, i.e. 64 float accumulators per thread. Per k16 step a warp loads 4 A
// fragments and 4 B fragments with ldmatrix.x4 and issues 16 mma.sync.
//
// Pipeline. A and B panels go global -> shared with cp.async (16 bytes per request,
// bypassing registers), STAGES = 4 panels deep: while the warps multiply panel t, the
// copies of panels t+1..t+3 are in flight. cp.async's src-size operand zero-fills
// whatever lies past the matrix edge, so tails in m, n and k need no other branch in
// the main loop: the zeros add nothing to the sums.
//
// Shared layouts. As in gemm_simt.cu an operand is read as (o, q): o = row of A or
// column of B, q = k. A k-contiguous operand is stored [o][32] (64-byte rows) and read
// by plain ldmatrix; an o-contiguous one is stored [32][o] (256-byte rows) and read by
// ldmatrix.trans, which transposes each 8 x 8 block on the way to registers. Both are
// XOR-swizzled in 16-byte chunks (chunk ^ ((o >> 1) & 3), resp. chunk ^ (q & 7)) so
// that the 8 rows one ldmatrix phase reads fall in 8 different bank groups.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16/.bf16; g = lane / 4, t = lane % 4):
//   A 16 x 16: a0 = (row g, k 2t..2t+1), a1 = (row g+8, k 2t..), a2 = (row g, k 2t+8..),
//              a3 = (row g+8, k 2t+8..), two 16-bit values per register;
//   B 16 x 8:  b0 = (k 2t..2t+1, col g), b1 = (k 2t+8.., col g);
//   C 16 x 8:  c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g+8, cols 2t, 2t+1).
// ldmatrix.x4 gives register j the 8 x 8 matrix whose row addresses lanes 8j..8j+7
// supply, each thread holding (row g, cols 2t, 2t+1) of it (of its transpose with
// .trans); the lane -> address maps below put A's four quarters and two B tiles'
// halves in exactly the registers above.
//
// Operands the cp.async path cannot read (no unit stride, or a pointer or stride not
// 16-byte aligned) are first copied into a packed k-contiguous scratch buffer.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/types.cuh"

namespace ember::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4, kThreads = 256;
constexpr int kTileElems = BM * BK;  // one operand's panel (BM == BN)
constexpr int kSmemBytes = STAGES * 2 * kTileElems * 2;  // 64 KiB: needs the opt-in
constexpr int kGroupM = 8;  // blocks walk the tiles in bands of 8 tile rows (L2 reuse)

enum class Smem { k_major, o_major };

template <class T>
struct Operand {
  const T* ptr;
  int64_t bs, so, sq;  // element (o, q) of matrix p: ptr + p*bs + o*so + q*sq
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

template <class T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (std::is_same_v<T, Half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled panel.
template <Smem L>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  if constexpr (L == Smem::k_major) return row * BK + ((chunk ^ ((row >> 1) & 3)) << 3);
  else return row * BM + ((chunk ^ (row & 7)) << 3);
}

// Where this lane's ldmatrix row address lies in a panel, per fragment, worked out
// once per thread. The swizzle makes the offsets non-linear in the fragment index,
// but only in a way that two or four per-lane values capture:
//   A k_major: row = wm*64 + mt*16 + r (r = lane&7 + 8*bit3), chunk = 2ks + bit4.
//     (row >> 1) & 3 depends on r only, so mt adds mt*16 rows; ks = 1 flips chunk
//     bit 1, i.e. moves by +16 or -16 elements (sign from the ks = 0 chunk).
//   A o_major: q = 16ks + lane&7 + 8*bit4 (q & 7 = lane & 7), chunk = 8wm + 2mt + bit3:
//     one offset per mt; ks adds 16 rows of 128.
//   B likewise with np in place of mt (B k_major: row = 32wn + 16np + lane&7 + 8*bit4,
//   chunk = 2ks + bit3; B o_major: q = 16ks + lane&7 + 8*bit3, chunk = 4wn + 2np + bit4).
struct LaneOffsets {
  int v[4];  // k_major: v[0] the ks = 0 offset, v[1] the ks = 1 delta; o_major: one per tile
};

template <Smem L>
__device__ __forceinline__ LaneOffsets a_lane_offsets(int lane, int wm) {
  LaneOffsets o{};
  if constexpr (L == Smem::k_major) {
    const int row = wm * 64 + (lane & 7) + ((lane >> 3) & 1) * 8;
    const int chunk = lane >> 4;
    const int sw = chunk ^ ((row >> 1) & 3);
    o.v[0] = row * BK + (sw << 3);
    o.v[1] = (sw & 2) ? -16 : 16;
  } else {
    const int q = (lane & 7) + (lane >> 4) * 8;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
      o.v[mt] = swizzled<L>(q, wm * 8 + mt * 2 + ((lane >> 3) & 1));
  }
  return o;
}

template <Smem L>
__device__ __forceinline__ int a_frag_offset(const LaneOffsets& o, int mt, int ks) {
  if constexpr (L == Smem::k_major) return o.v[0] + mt * 16 * BK + ks * o.v[1];
  else return o.v[mt] + ks * 16 * BM;
}

template <Smem L>
__device__ __forceinline__ LaneOffsets b_lane_offsets(int lane, int wn) {
  LaneOffsets o{};
  if constexpr (L == Smem::k_major) {
    const int row = wn * 32 + (lane & 7) + (lane >> 4) * 8;
    const int chunk = (lane >> 3) & 1;
    const int sw = chunk ^ ((row >> 1) & 3);
    o.v[0] = row * BK + (sw << 3);
    o.v[1] = (sw & 2) ? -16 : 16;
  } else {
    const int q = (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int np = 0; np < 2; ++np) o.v[np] = swizzled<L>(q, wn * 4 + np * 2 + (lane >> 4));
  }
  return o;
}

template <Smem L>
__device__ __forceinline__ int b_frag_offset(const LaneOffsets& o, int np, int ks) {
  if constexpr (L == Smem::k_major) return o.v[0] + np * 16 * BK + ks * o.v[1];
  else return o.v[np] + ks * 16 * BM;
}

// Queues the cp.async requests for this thread's two 16-byte chunks of the panel at
// (o0, k0): 512 chunks per panel, chunk ids threadIdx.x and threadIdx.x + 256.
template <class T, Smem L>
__device__ __forceinline__ void load_panel(T* sm, const T* base, const Operand<T>& op, int64_t o0,
                                           int64_t k0, int64_t O, int64_t K) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int id = threadIdx.x + h * kThreads;
    int row, chunk;
    int64_t o, q, valid;
    if constexpr (L == Smem::k_major) {  // [o][32]: 4 chunks per row
      row = id >> 2;
      chunk = id & 3;
      o = o0 + row;
      q = k0 + chunk * 8;
      valid = o < O ? min(int64_t(8), max(int64_t(0), K - q)) : 0;
    } else {  // [32][o]: 16 chunks per row
      row = id >> 4;
      chunk = id & 15;
      q = k0 + row;
      o = o0 + chunk * 8;
      valid = q < K ? min(int64_t(8), max(int64_t(0), O - o)) : 0;
    }
    const T* src = valid > 0 ? base + o * op.so + q * op.sq : base;
    cp_async16(smem_addr(sm + swizzled<L>(row, chunk)), src, static_cast<int>(valid) * 2);
  }
}

template <class T, Smem LA, Smem LB>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_mma_kernel(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, Operand<T> A,
                    Operand<T> B, float beta, T* __restrict__ c, int64_t c_bs, int64_t c_rs,
                    int64_t c_cs, bool c_pairs) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);  // [STAGES][A panel, B panel]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wm = warp >> 2, wn = warp & 3;  // warp's 64 x 32 sub-tile
  const int g = lane >> 2, t = lane & 3;

  // Grouped raster: consecutive blocks share A's rows for kGroupM tile rows.
  const int64_t m_tiles = (m + BM - 1) / BM, n_tiles = (n + BN - 1) / BN;
  const int64_t bid = blockIdx.x, per_group = kGroupM * n_tiles;
  const int64_t first_m = bid / per_group * kGroupM;
  const int64_t group_rows = min(m_tiles - first_m, int64_t(kGroupM));
  const int64_t m0 = (first_m + (bid % per_group) % group_rows) * BM;
  const int64_t n0 = (bid % per_group) / group_rows * BN;
  const int64_t k_tiles = (k + BK - 1) / BK;
  const uint32_t smem_base = smem_addr(smem);
  const LaneOffsets a_lane = a_lane_offsets<LA>(lane, wm), b_lane = b_lane_offsets<LB>(lane, wn);

  for (int64_t p = blockIdx.y; p < batch; p += gridDim.y) {
    const T* a = A.ptr + p * A.bs;
    const T* b = B.ptr + p * B.bs;
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

    // Prologue: panels 0..STAGES-2 in flight, one commit group each (empty groups past
    // the end keep the group count, and so wait_group's meaning, uniform).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < k_tiles) {
        load_panel<T, LA>(smem + s * 2 * kTileElems, a, A, m0, s * BK, m, k);
        load_panel<T, LB>(smem + s * 2 * kTileElems + kTileElems, b, B, n0, s * BK, n, k);
      }
      cp_async_commit();
    }

    for (int64_t kt = 0; kt < k_tiles; ++kt) {
      // Panel kt has landed once at most STAGES-2 groups are pending; the barrier
      // publishes it to all warps and guarantees everyone has finished panel kt-1,
      // whose stage the load below overwrites.
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      const int64_t next = kt + STAGES - 1;
      if (next < k_tiles) {
        T* st = smem + (next % STAGES) * 2 * kTileElems;
        load_panel<T, LA>(st, a, A, m0, next * BK, m, k);
        load_panel<T, LB>(st + kTileElems, b, B, n0, next * BK, n, k);
      }
      cp_async_commit();

      const uint32_t sa = smem_base + uint32_t((kt % STAGES) * 2 * kTileElems) * 2u;
      const uint32_t sb = sa + kTileElems * 2u;
#pragma unroll
      for (int ks = 0; ks < BK / 16; ++ks) {
        uint32_t af[4][4], bfr[4][2];
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
          ldmatrix_x4<LA == Smem::o_major>(af[mt], sa + 2u * uint32_t(a_frag_offset<LA>(a_lane, mt, ks)));
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t r[4];
          ldmatrix_x4<LB == Smem::o_major>(r, sb + 2u * uint32_t(b_frag_offset<LB>(b_lane, np, ks)));
          bfr[2 * np][0] = r[0];
          bfr[2 * np][1] = r[1];
          bfr[2 * np + 1][0] = r[2];
          bfr[2 * np + 1][1] = r[3];
        }
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) mma16816<T>(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
      }
    }
    // No copies may still target shared memory when the next batch entry's prologue
    // (or the block's exit) comes: drain them and line the warps up.
    cp_async_wait<0>();
    __syncthreads();

    T* cp = c + p * c_bs;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t row = m0 + wm * 64 + mt * 16 + g + half * 8;
        if (row >= m) continue;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int64_t col = n0 + wn * 32 + nt * 8 + 2 * t;
          const float v0 = alpha * acc[mt][nt][2 * half], v1 = alpha * acc[mt][nt][2 * half + 1];
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
            if (col < n) *dst = from_acc<T>(beta != 0.f ? v0 + beta * to_acc(*dst) : v0);
            if (col + 1 < n) {
              T* d1 = dst + c_cs;
              *d1 = from_acc<T>(beta != 0.f ? v1 + beta * to_acc(*d1) : v1);
            }
          }
        }
      }
  }
}

// Copies an operand into a packed k-contiguous buffer [batch][O][ld] (ld = K rounded
// up to 8, the padding zeroed) that the cp.async path can read.
template <class T>
__global__ void pack_kernel(int64_t total, int64_t O, int64_t K, int64_t ld, Operand<T> op,
                            T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = i % ld, o = (i / ld) % O, p = i / (ld * O);
    out[i] = q < K ? op.ptr[p * op.bs + o * op.so + q * op.sq] : T(0.f);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The shared layout an operand can be copied into directly, or false when it must be
// packed first: cp.async needs 16-byte aligned rows of 8 elements.
template <class T>
bool pick_layout(const Operand<T>& op, int64_t batch, Smem& layout) {
  if (!aligned16(op.ptr) || (batch > 1 && op.bs % 8 != 0)) return false;
  if (op.sq == 1 && op.so % 8 == 0) {
    layout = Smem::k_major;
    return true;
  }
  if (op.so == 1 && op.sq % 8 == 0) {
    layout = Smem::o_major;
    return true;
  }
  return false;
}

template <class T, Smem LA, Smem LB>
void launch_mma(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const Operand<T>& A,
                const Operand<T>& B, float beta, T* c, int64_t c_bs, int64_t c_rs, int64_t c_cs,
                cudaStream_t stream) {
  const int64_t tiles = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
  if (tiles > INT32_MAX) throw ValueError("gemm: matrix too large for the CUDA grid");
  auto kernel = gemm_mma_kernel<T, LA, LB>;
  // Above 48 KiB of dynamic shared memory a kernel must opt in (per device, so every
  // launch sets it: a cheap host-side call).
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  const bool c_pairs = c_cs == 1 && c_rs % 2 == 0 && (batch == 1 || c_bs % 2 == 0) &&
                       reinterpret_cast<uintptr_t>(c) % 4 == 0;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  kernel<<<grid, kThreads, kSmemBytes, stream>>>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs,
                                                 c_cs, c_pairs);
  EMBER_CUDA_CHECK_LAUNCH();
}

template <class T>
void gemm_mma_typed(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const T* a,
                    int64_t a_bs, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_bs,
                    int64_t b_rs, int64_t b_cs, float beta, T* c, int64_t c_bs, int64_t c_rs,
                    int64_t c_cs, cudaStream_t stream) {
  Operand<T> A{a, a_bs, a_rs, a_cs}, B{b, b_bs, b_cs, b_rs};  // B read as B^T: (n, k)
  Smem la = Smem::k_major, lb = Smem::k_major;
  const bool a_direct = pick_layout(A, batch, la), b_direct = pick_layout(B, batch, lb);
  // Packed copies of the operands that need them, alive until the kernel is queued
  // (the caching allocator hands a block back only to later work on the same stream).
  const int64_t ld = (k + 7) / 8 * 8;
  const int device = current_device_index();
  ScratchBuffer pa(a_direct ? 0 : size_t(batch * m * ld) * sizeof(T), device, stream);
  ScratchBuffer pb(b_direct ? 0 : size_t(batch * n * ld) * sizeof(T), device, stream);
  if (!a_direct) {
    launch_1d(batch * m * ld, stream, pack_kernel<T>, batch * m * ld, m, k, ld, A, pa.as<T>());
    A = {pa.as<T>(), m * ld, ld, 1};
  }
  if (!b_direct) {
    launch_1d(batch * n * ld, stream, pack_kernel<T>, batch * n * ld, n, k, ld, B, pb.as<T>());
    B = {pb.as<T>(), n * ld, ld, 1};
  }
  constexpr Smem K = Smem::k_major, O = Smem::o_major;
  if (la == K && lb == K) launch_mma<T, K, K>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else if (la == K) launch_mma<T, K, O>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else if (lb == K) launch_mma<T, O, K>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
  else launch_mma<T, O, O>(batch, m, n, k, alpha, A, B, beta, c, c_bs, c_rs, c_cs, stream);
}

// EMBER_CUDA_WGMMA (read once): "0" keeps Hopper on this file's mma.sync kernel,
// "tma" picks the bulk-copy wgmma kernel, anything else the cp.async one.
enum class Wgmma { off, cp_async, tma };
Wgmma wgmma_choice() {
  static const Wgmma w = [] {
    const char* v = std::getenv("EMBER_CUDA_WGMMA");
    const std::string s = v ? v : "";
    return s == "0" ? Wgmma::off : s == "tma" ? Wgmma::tma : Wgmma::cp_async;
  }();
  return w;
}

}  // namespace

void gemm_tensor_core(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                      const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                      const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                      void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  const Wgmma w = wgmma_choice();
  if (w != Wgmma::off && gemm_wgmma_supports(dt, batch, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs)) {
    (w == Wgmma::tma ? gemm_wgmma_tma : gemm_wgmma)(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs,
                                                    b_cs, beta, c, c_bs, c_rs, c_cs, stream);
    return;
  }
  gemm_mma_sync(dt, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, beta, c, c_bs, c_rs, c_cs, stream);
}

void gemm_mma_sync(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                   const void* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                   const void* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, double beta,
                   void* c, int64_t c_bs, int64_t c_rs, int64_t c_cs, cudaStream_t stream) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  switch (dt) {
    case DType::Float16:
      gemm_mma_typed<Half>(batch, m, n, k, float(alpha), static_cast<const Half*>(a), a_bs, a_rs,
                           a_cs, static_cast<const Half*>(b), b_bs, b_rs, b_cs, float(beta),
                           static_cast<Half*>(c), c_bs, c_rs, c_cs, stream);
      return;
    case DType::BFloat16:
      gemm_mma_typed<BFloat16>(batch, m, n, k, float(alpha), static_cast<const BFloat16*>(a), a_bs,
                               a_rs, a_cs, static_cast<const BFloat16*>(b), b_bs, b_rs, b_cs,
                               float(beta), static_cast<BFloat16*>(c), c_bs, c_rs, c_cs, stream);
      return;
    default:
      throw NotImplementedError(std::string("gemm_tensor_core: not implemented for dtype ") +
                                dtype_name(dt));
  }
}

}  // namespace ember::cuda
