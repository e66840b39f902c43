// The CUDA dynamic int8 Linear (see gemm_int8.h).
//
// GEMM algorithm. A block of 128 threads (4 warps) computes a 32 x 64 tile of the
// output: 32 activation rows by 64 output channels, each warp 32 x 16 as 2 x 2
// mma.sync.m16n8k32 tiles. The depth is walked 256 bytes at a time: the block copies
// the A rows (32 x 256 B) and weight rows (64 x 256 B) into shared memory with 16-byte
// loads, and loads the next step's bytes into registers while the tensor cores work
// on this one, so global latency overlaps the math. Shared rows are 272 bytes apart
// (256 + 16): the 8 rows a warp reads in one fragment load then start 4 banks apart
// and the 32 lanes hit 32 different banks.
//
// The weights are stored [n, k] row-major, which is exactly the "col" layout mma
// wants for B: a lane's B register holds 4 consecutive k bytes of one channel, one
// 32-bit shared load. A is [m, k] row-major, the "row" layout: likewise.
//
// When the tiles are too few to fill the GPU, the depth is split among blocks as well
// (split-K: int32 atomics, then the epilogue as a separate kernel); see k_split_for.
//
// Small batches (1 to 64 rows) make this memory-bound: the 4096 x 4096 weight is 16
// MiB in int8 against 32 MiB in float16, which is where the int8 layer's advantage over
// a float16 cuBLAS GEMM comes from at batch 64.
#include "kernels/cuda/gemm_int8.h"

#include <cfloat>
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch.cuh"

namespace ember::cuda {
namespace {

constexpr int kMinMaxBlocks = 256;
constexpr int kThreads = 128;
constexpr int BM = 32, BN = 64, BK = 256, kStride = BK + 16;
constexpr int kAChunks = BM * BK / 16 / kThreads;  // 16-byte chunks per thread and step: 4
constexpr int kBChunks = BN * BK / 16 / kThreads;  // 8

// ---- activation parameters, on the device ----

struct ActParams {
  float scale, inv_scale;
  int32_t zero_point, qmax;
};

// quant::choose_qparams(min, max, 0, 255, reduce_range), statement by statement, so
// the GPU picks the same scale and zero point as the CPU.
// An input with inf or NaN (min_max_partial marks it with an infinite range) has no
// quantization: the CPU raises, and since the GPU does not stop to ask, it makes
// every output NaN (scale NaN; codes from a zero inverse scale, all in range).
__device__ ActParams act_params(float mn, float mx, bool reduce_range) {
  int32_t qmin = 0, qmax = 255;
  if (reduce_range) {
    qmin /= 2;
    qmax /= 2;
  }
  if (isinf(mn) || isinf(mx)) return ActParams{NAN, 0.0f, 0, qmax};
  mn = fminf(mn, 0.0f);
  mx = fmaxf(mx, 0.0f);
  double scale = (double(mx) - mn) / double(qmax - qmin);
  if (float(scale) == 0.0f || isinf(1.0f / float(scale))) scale = 0.1;
  constexpr float kMinScale = 6.1e-5f;
  if (scale < kMinScale) {
    const float tiny = float(scale);
    scale = kMinScale;
    if (mn == 0.0f) {
      mx = kMinScale * float(qmax - qmin);
    } else if (mx == 0.0f) {
      mn = -kMinScale * float(qmax - qmin);
    } else {
      const float amp = kMinScale / tiny;
      mn *= amp;
      mx *= amp;
    }
  }
  const double zp_min = qmin - mn / scale, zp_max = qmax - mx / scale;
  const double err_min = fabs(double(qmin)) - fabs(mn / scale), err_max = fabs(double(qmax)) - fabs(mx / scale);
  const double zp = err_min < err_max ? zp_min : zp_max;
  const int32_t nudged = zp < qmin ? qmin : zp > qmax ? qmax : int32_t(rint(zp));
  ActParams p;
  p.scale = float(scale);
  p.inv_scale = __fdiv_rn(1.0f, p.scale);
  p.zero_point = nudged;
  p.qmax = qmax;
  return p;
}

// Block-wide min and max; every thread gets the result.
__device__ void block_min_max(float& mn, float& mx) {
  __shared__ float smin[32], smax[32];
  for (int o = 16; o > 0; o /= 2) {
    mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = (blockDim.x + 31) / 32;
  if (lane == 0) {
    smin[warp] = mn;
    smax[warp] = mx;
  }
  __syncthreads();
  mn = lane < warps ? smin[lane] : FLT_MAX;
  mx = lane < warps ? smax[lane] : -FLT_MAX;
  for (int o = 16; o > 0; o /= 2) {
    mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  }
  __syncthreads();  // smin/smax may be reused by the caller
}

// ---- kernels ----

// partial[2b], partial[2b+1] = min, max over block b's grid-stride share of x; an
// inf or NaN makes them -inf and +inf (fminf and fmaxf alone would skip a NaN).
__global__ void min_max_partial(const float* __restrict__ x, int64_t n, float* __restrict__ partial) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const bool finite = v - v == 0.0f;
    mn = fminf(mn, finite ? v : -INFINITY);
    mx = fmaxf(mx, finite ? v : INFINITY);
  }
  block_min_max(mn, mx);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = mn;
    partial[2 * blockIdx.x + 1] = mx;
  }
}

// Reduces the partials (every block, redundantly: a few hundred floats), keeps the
// result in minmax[2] for the GEMM, and writes x's codes into rows of kp bytes.
__global__ void quantize_rows(const float* __restrict__ x, int64_t m, int64_t k, int64_t kp,
                              const float* __restrict__ partial, int blocks, bool reduce_range,
                              uint8_t* __restrict__ a, float* __restrict__ minmax) {
  float mn = FLT_MAX, mx = -FLT_MAX;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) {
    mn = fminf(mn, partial[2 * i]);
    mx = fmaxf(mx, partial[2 * i + 1]);
  }
  block_min_max(mn, mx);
  if (m * k == 0) mn = mx = 0.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    minmax[0] = mn;
    minmax[1] = mx;
  }
  const ActParams p = act_params(mn, mx, reduce_range);
  const float lo = float(-p.zero_point) - 1.0f, hi = float(p.qmax - p.zero_point) + 1.0f;
  const int64_t total = m * kp;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / kp, col = i % kp;
    uint8_t q = 0;
    if (col < k) {
      float v = __fmul_rn(x[row * k + col], p.inv_scale);
      v = v >= lo ? v : lo;  // NaN lands low, as on the CPU
      v = v <= hi ? v : hi;
      int32_t c = int32_t(rintf(v)) + p.zero_point;  // rintf: round half to even
      c = c < 0 ? 0 : (c > p.qmax ? p.qmax : c);
      q = uint8_t(c);
    }
    a[i] = q;
  }
}

struct Epilogue {
  const float* minmax;  // null: raw int32 sums (stored, or added with atomics when `atomic`)
  bool reduce_range;
  const int32_t* row_sums;
  const float* w_scales;
  bool per_channel;
  const float* bias;
  bool atomic;  // split-K: each block adds its share of the sums into c (zeroed first)
};

// One output of the fused epilogue, in the CPU kernel's order of float operations.
__device__ __forceinline__ float dequantized(int32_t v, int64_t col, const ActParams& p, const Epilogue& ep) {
  // Wrapping int32 arithmetic, as on the CPU: the true corrected sum fits.
  const int32_t corrected = int32_t(uint32_t(v) - uint32_t(p.zero_point) * uint32_t(ep.row_sums[col]));
  const float ws = ep.per_channel ? ep.w_scales[col] : ep.w_scales[0];
  float y = __fmul_rn(float(corrected), __fmul_rn(p.scale, ws));
  if (ep.bias) y = __fadd_rn(y, ep.bias[col]);
  return y;
}

__device__ __forceinline__ void mma_u8s8(int32_t c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Block (x, y, z) computes channels [64x, 64x + 64) over the depth
// [z * k_split, (z + 1) * k_split) (k_split a multiple of BK; the last slice ends at
// kp) for the row tiles y, y + gridDim.y, ...: grid.y is capped at 65535, so past
// 65535 * 32 rows a block takes more than one tile of rows.
__global__ void __launch_bounds__(kThreads) gemm_u8s8(int64_t m, int64_t n, int64_t kp, int64_t k_split,
                                                      const uint8_t* __restrict__ a, const int8_t* __restrict__ b,
                                                      Epilogue ep, void* __restrict__ c) {
  __shared__ __align__(16) uint8_t sa[BM * kStride];
  __shared__ __align__(16) uint8_t sb[BN * kStride];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int64_t col0 = int64_t(blockIdx.x) * BN, m_tiles = (m + BM - 1) / BM;
  const int64_t k_begin = int64_t(blockIdx.z) * k_split, k_end = min(kp, k_begin + k_split);
  ActParams p{};
  if (ep.minmax) p = act_params(ep.minmax[0], ep.minmax[1], ep.reduce_range);
  // The loop is uniform across the block, so the __syncthreads inside are safe; the
  // last one of a tile's depth loop also orders its shared reads before the next
  // tile's first stores.
  for (int64_t tm = blockIdx.y; tm < m_tiles; tm += gridDim.y) {
    const int64_t row0 = tm * BM;

    uint4 ra[kAChunks], rb[kBChunks];
    // Step k0's bytes into registers: chunk q of the block is row q / 16, bytes 16 * (q % 16).
    auto load = [&](int64_t k0) {
#pragma unroll
      for (int i = 0; i < kAChunks; ++i) {
        const int q = tid + i * kThreads, r = q / (BK / 16), ch = q % (BK / 16);
        const int64_t gk = k0 + ch * 16;
        ra[i] = row0 + r < m && gk < k_end ? *reinterpret_cast<const uint4*>(a + (row0 + r) * kp + gk)
                                        : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < kBChunks; ++i) {
        const int q = tid + i * kThreads, r = q / (BK / 16), ch = q % (BK / 16);
        const int64_t gk = k0 + ch * 16;
        rb[i] = col0 + r < n && gk < k_end ? *reinterpret_cast<const uint4*>(b + (col0 + r) * kp + gk)
                                        : make_uint4(0, 0, 0, 0);
      }
    };
    auto store = [&] {
#pragma unroll
      for (int i = 0; i < kAChunks; ++i) {
        const int q = tid + i * kThreads;
        *reinterpret_cast<uint4*>(sa + (q / (BK / 16)) * kStride + (q % (BK / 16)) * 16) = ra[i];
      }
#pragma unroll
      for (int i = 0; i < kBChunks; ++i) {
        const int q = tid + i * kThreads;
        *reinterpret_cast<uint4*>(sb + (q / (BK / 16)) * kStride + (q % (BK / 16)) * 16) = rb[i];
      }
    };

    int32_t acc[2][2][4] = {};
    load(k_begin);
    for (int64_t k0 = k_begin; k0 < k_end; k0 += BK) {
      store();
      __syncthreads();
      if (k0 + BK < k_end) load(k0 + BK);  // in flight while the tensor cores run
#pragma unroll
      for (int ks = 0; ks < BK; ks += 32) {
        uint32_t af[2][4], bf[2][2];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          const uint8_t* p = sa + (mt * 16 + g) * kStride + ks + 4 * t;
          af[mt][0] = *reinterpret_cast<const uint32_t*>(p);
          af[mt][1] = *reinterpret_cast<const uint32_t*>(p + 8 * kStride);
          af[mt][2] = *reinterpret_cast<const uint32_t*>(p + 16);
          af[mt][3] = *reinterpret_cast<const uint32_t*>(p + 8 * kStride + 16);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const uint8_t* p = sb + (warp * 16 + nt * 8 + g) * kStride + ks + 4 * t;
          bf[nt][0] = *reinterpret_cast<const uint32_t*>(p);
          bf[nt][1] = *reinterpret_cast<const uint32_t*>(p + 16);
        }
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) mma_u8s8(acc[mt][nt], af[mt], bf[nt]);
      }
      __syncthreads();
    }

#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t row = row0 + mt * 16 + g + (e >= 2 ? 8 : 0);
          const int64_t col = col0 + warp * 16 + nt * 8 + 2 * t + (e & 1);
          if (row >= m || col >= n) continue;
          const int32_t v = acc[mt][nt][e];
          if (!ep.minmax) {
            int32_t* out = static_cast<int32_t*>(c) + row * n + col;
            if (ep.atomic) atomicAdd(out, v);
            else *out = v;
            continue;
          }
          static_cast<float*>(c)[row * n + col] = dequantized(v, col, p, ep);
        }
  }  // row tiles
}

// The epilogue alone, after a split-K product has summed into `sums`.
__global__ void dequantize_sums(int64_t m, int64_t n, const int32_t* __restrict__ sums, Epilogue ep,
                                float* __restrict__ y) {
  const ActParams p = act_params(ep.minmax[0], ep.minmax[1], ep.reduce_range);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m * n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = dequantized(sums[i], i % n, p, ep);
}

size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Depth per block. A batch of 64 rows x 4096 channels is only 128 tiles, about one
// block of 4 warps per SM of an H200: too few loads in flight to stream the weights
// at full bandwidth. Splitting the depth into slices gives ~4 blocks per SM; the
// slices then add their int32 sums with atomics and a separate kernel applies the
// epilogue.
int64_t k_split_for(int64_t m, int64_t n, int64_t kp) {
  const int64_t tiles = ((n + BN - 1) / BN) * ((m + BM - 1) / BM);
  const int64_t steps = std::max<int64_t>(1, (kp + BK - 1) / BK);
  const int64_t want = (4 * int64_t(properties().multiProcessorCount) + tiles - 1) / tiles;
  const int64_t splits = std::min(steps, std::max<int64_t>(1, want));
  return (steps + splits - 1) / splits * BK;
}

// The product, split or not; `sums` (m x n int32 scratch) is needed only when the
// depth is split and `ep` has an epilogue.
void launch_gemm(int64_t m, int64_t n, int64_t kp, const uint8_t* a, const int8_t* b, Epilogue ep, void* c,
                 int32_t* sums, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const int64_t k_split = k_split_for(m, n, kp);
  const int64_t splits = kp > 0 ? (kp + k_split - 1) / k_split : 1;
  // grid.y is limited to 65535 blocks; gemm_u8s8 loops over the row tiles past that.
  const dim3 grid(unsigned((n + BN - 1) / BN), unsigned(std::min<int64_t>((m + BM - 1) / BM, 65535)),
                  unsigned(splits));
  if (splits == 1) {
    ep.atomic = false;
    gemm_u8s8<<<grid, kThreads, 0, stream>>>(m, n, kp, std::max<int64_t>(kp, 1), a, b, ep, c);
    EMBER_CUDA_CHECK_LAUNCH();
    return;
  }
  int32_t* target = ep.minmax ? sums : static_cast<int32_t*>(c);
  EMBER_CUDA_CHECK(cudaMemsetAsync(target, 0, sizeof(int32_t) * size_t(m * n), stream));
  Epilogue raw = ep;
  raw.minmax = nullptr;
  raw.atomic = true;
  gemm_u8s8<<<grid, kThreads, 0, stream>>>(m, n, kp, k_split, a, b, raw, target);
  EMBER_CUDA_CHECK_LAUNCH();
  if (ep.minmax) {
    dequantize_sums<<<grid_for(m * n), kBlockThreads, 0, stream>>>(m, n, sums, ep, static_cast<float*>(c));
    EMBER_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

size_t linear_int8_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  return align256(sizeof(float) * 2 * kMinMaxBlocks) + align256(sizeof(float) * 2) +
         align256(size_t(m) * size_t(int8_padded_k16(k))) + align256(sizeof(int32_t) * size_t(m) * size_t(n));
}

void linear_int8_dynamic(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w, const int32_t* row_sums,
                         const float* w_scales, bool per_channel, const float* bias, bool reduce_range, float* y,
                         void* workspace, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const int64_t kp = int8_padded_k16(k);
  // Workspace: min/max partials | final min/max | uint8 activations | int32 split-K sums.
  char* ws = static_cast<char*>(workspace);
  float* partial = reinterpret_cast<float*>(ws);
  ws += align256(sizeof(float) * 2 * kMinMaxBlocks);
  float* minmax = reinterpret_cast<float*>(ws);
  ws += align256(sizeof(float) * 2);
  uint8_t* aq = reinterpret_cast<uint8_t*>(ws);
  ws += align256(size_t(m) * size_t(kp));
  int32_t* sums = reinterpret_cast<int32_t*>(ws);
  const int64_t count = m * k;
  const int blocks = int(std::max<int64_t>(1, std::min<int64_t>(kMinMaxBlocks, (count + 1023) / 1024)));
  min_max_partial<<<blocks, 256, 0, stream>>>(x, count, partial);
  EMBER_CUDA_CHECK_LAUNCH();
  quantize_rows<<<grid_for(m * kp), kBlockThreads, 0, stream>>>(x, m, k, kp, partial, blocks, reduce_range, aq,
                                                                 minmax);
  EMBER_CUDA_CHECK_LAUNCH();
  const Epilogue ep{minmax, reduce_range, row_sums, w_scales, per_channel, bias, false};
  launch_gemm(m, n, kp, aq, w, ep, y, sums, stream);
}

void gemm_int8_s32(int64_t m, int64_t n, int64_t kp, const uint8_t* a, const int8_t* b, int32_t* c,
                   cudaStream_t stream) {
  const Epilogue raw{nullptr, false, nullptr, nullptr, false, nullptr, false};
  launch_gemm(m, n, kp, a, b, raw, c, nullptr, stream);
}

}  // namespace ember::cuda
