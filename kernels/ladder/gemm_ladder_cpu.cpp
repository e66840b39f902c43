// The CPU rungs of the GEMM ladder (gemm_ladder.h), each a complete GEMM in a few
// lines of plain C++. What changes from one rung to the next is the order in which
// the same 2*m*n*k flops touch memory; the arithmetic is always sums of products.
#include "kernels/ladder/gemm_ladder.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/gemm.h"

// Every rung is compiled three times, for AVX-512, AVX2+FMA and baseline x86-64, and
// the loader picks the clone this CPU can run (GCC's target_clones). The rungs then
// differ only in their loops, not in which vector instructions the compiler may use;
// without it they would all be SSE2 code, four lanes and no FMA. (GCC and Clang fuse
// `sum += x * y` into one FMA instruction by default in C++.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LADDER_ISA \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LADDER_ISA
#endif

namespace ember::ladder {

// Rung 1. Each c[i][j] is one dot product of a row of A and a column of B. The inner
// loop steps through B by a whole row (n floats) per iteration, so every multiply
// touches a new cache line, and the sum is one chain of dependent adds, so even a
// cached loop waits an FMA latency (4 cycles) per multiply-add.
LADDER_ISA void gemm_naive(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                           float* c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = sum;
    }
}

// Rung 2. Swap the two inner loops: for a fixed a[i][p], add a[i][p] * (row p of B)
// to row i of C. The inner loop now reads B and C along rows, with no dependence
// between iterations, so the compiler processes 16 (AVX-512) floats per instruction.
// Its limit is memory: each FMA needs a load of B and a load and store of C, and for
// every row of C the whole of B (k x n) is read again, from L2 or further away.
LADDER_ISA void gemm_ikj(int64_t m, int64_t n, int64_t k, const float* __restrict a,
                         const float* __restrict b, float* __restrict c) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * n;
    std::fill(ci, ci + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float aip = a[i * k + p];
      const float* bp = b + p * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
}

// Rung 3. Rung 2 on blocks: a KC x NC block of B (128 x 256 floats = 128 KiB) is used
// by every row of A before the next block is touched, so it is read from memory once
// and from L2 afterwards, and the NC floats of a row of C stay in L1 across the KC
// steps. The loads and stores of C per FMA remain: that is rung 4's job.
LADDER_ISA void gemm_blocked(int64_t m, int64_t n, int64_t k, const float* __restrict a,
                             const float* __restrict b, float* __restrict c) {
  constexpr int64_t KC = 128, NC = 256;
  std::fill(c, c + m * n, 0.0f);
  for (int64_t j0 = 0; j0 < n; j0 += NC) {
    const int64_t j1 = std::min(n, j0 + NC);
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t p1 = std::min(k, p0 + KC);
      for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * n;
        for (int64_t p = p0; p < p1; ++p) {
          const float aip = a[i * k + p];
          const float* bp = b + p * n;
          for (int64_t j = j0; j < j1; ++j) ci[j] += aip * bp[j];
        }
      }
    }
  }
}

namespace {

// Rung 4's tile: MR rows by NR columns of C live in registers while the k loop runs.
// With AVX-512 an 8 x 32 tile is 16 vector accumulators (of 32 registers), enough
// independent FMAs to keep both FMA units busy through their latency; each k step
// loads 2 vectors of B and broadcasts 8 values of A for 16 FMAs.
constexpr int64_t MR = 8, NR = 32;
// Cache blocks: a KC x NC block of packed B stays in L2, an MC x KC block of packed A
// in L1/L2, and one MR x KC sliver of A plus one KC x NR panel of B (48 KiB) in L1.
constexpr int64_t KC = 256, MC = 64, NC = 512;

// Copies rows [0, rows) x columns [0, kc) of A (row stride lda) into panels of MR
// rows stored column by column: panel r holds a[r*MR + i][p] at out[r*MR*kc + p*MR + i],
// so the micro-kernel reads A in exactly the order it uses it. Rows past the matrix
// are zeros, which lets every tile run the same full-size loop.
void pack_a(int64_t rows, int64_t kc, const float* a, int64_t lda, float* out) {
  for (int64_t r0 = 0; r0 < rows; r0 += MR, out += MR * kc)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t i = 0; i < MR; ++i)
        out[p * MR + i] = r0 + i < rows ? a[(r0 + i) * lda + p] : 0.0f;
}

// The same for B: panels of NR columns, each stored row by row (out[p*NR + j]).
void pack_b(int64_t kc, int64_t cols, const float* b, int64_t ldb, float* out) {
  for (int64_t c0 = 0; c0 < cols; c0 += NR, out += NR * kc)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = 0; j < NR; ++j)
        out[p * NR + j] = c0 + j < cols ? b[p * ldb + c0 + j] : 0.0f;
}

// The micro-kernel: acc = (MR x kc panel of A) . (kc x NR panel of B), then added to
// the rows x cols corner of C that lies inside the matrix. acc is a local array of
// constant size, which the compiler keeps in vector registers; the loops over i and j
// are unrolled completely.
LADDER_ISA void micro_kernel(int64_t kc, const float* __restrict pa, const float* __restrict pb,
                             float* __restrict c, int64_t ldc, int64_t rows, int64_t cols) {
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 8
    for (int64_t i = 0; i < MR; ++i)
#pragma GCC unroll 32
      for (int64_t j = 0; j < NR; ++j) acc[i][j] += pa[p * MR + i] * pb[p * NR + j];
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] += acc[i][j];
}

}  // namespace

// Rung 4. The structure of every fast CPU GEMM (GotoBLAS, BLIS): three loops of cache
// blocks around the micro-kernel. Packing costs one copy of each block but makes
// every read in the hot loop sequential and lets the tile's edges be handled once,
// here, instead of in the innermost loop.
void gemm_packed(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  std::vector<float> pa(size_t(MC * KC)), pb(size_t(KC * ((NC + NR - 1) / NR) * NR));
  std::fill(c, c + m * n, 0.0f);
  for (int64_t j0 = 0; j0 < n; j0 += NC) {
    const int64_t nc = std::min(NC, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t kc = std::min(KC, k - p0);
      pack_b(kc, nc, b + p0 * n + j0, n, pb.data());
      for (int64_t i0 = 0; i0 < m; i0 += MC) {
        const int64_t mc = std::min(MC, m - i0);
        pack_a(mc, kc, a + i0 * k + p0, k, pa.data());
        for (int64_t ir = 0; ir < mc; ir += MR)
          for (int64_t jr = 0; jr < nc; jr += NR)
            micro_kernel(kc, pa.data() + ir * kc, pb.data() + jr * kc,
                         c + (i0 + ir) * n + j0 + jr, n, std::min(MR, mc - ir),
                         std::min(NR, nc - jr));
      }
    }
  }
}

// Rung 5: the production kernel through its public entry point. Unit column strides
// and row strides k, n, n describe the row-major operands.
void gemm_production(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                     float* c) {
  cpu::gemm(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1);
}

// The same test the target_clones resolver makes, for the bench's log.
const char* cpu_rungs_isa() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
#endif
  return "baseline";
}

}  // namespace ember::ladder
