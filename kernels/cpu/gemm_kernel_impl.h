// The GEMM micro-kernel, macro-kernel and packing, written once over a small
// vector-operations policy (Ops) and included by each gemm_kernel_<isa>.cpp after
// that file switches the compiler to its instruction set.
//
// Everything here sits in an anonymous namespace and uses no standard-library
// function templates: a template instantiated under an AVX-512 target pragma with
// external linkage could be picked by the linker for code that runs on any CPU.
#pragma once

#include <cstdint>

#include "kernels/cpu/gemm_kernel.h"

namespace ember::cpu::gemm_detail {
namespace {

inline int64_t imin(int64_t x, int64_t y) { return x < y ? x : y; }

// Ops provides: T, V, W (lanes), zero(), load(aligned p), loadu(p), storeu(p, v),
// set1(x), fma(a, b, c) = a*b + c, mul(a, b), add(a, b). It may also provide
//   transpose(src, ld, rows, dst, dst_ld): rows (<= W) rows of W values read at src
//   with stride ld, written as W rows of `rows` values at dst with stride dst_ld,
// which packing uses where it would otherwise gather one value at a time, and
//   loadn(p, n), storen(p, v, n): the first n (0..W) lanes only, without touching
//   memory past them, which lets right-edge tiles update C in place, and
//   hsum(v): the sum of v's lanes in the pairwise order of GemmImpl::hsum.
template <class Ops>
concept HasPartial = requires(const typename Ops::T* s, typename Ops::T* d, typename Ops::V v) {
  Ops::loadn(s, 0);
  Ops::storen(d, v, 0);
};
template <class Ops>
concept HasTranspose = requires(const typename Ops::T* s, typename Ops::T* d) {
  Ops::transpose(s, int64_t{}, 0, d, int64_t{});
};

template <class Ops>
concept HasHsum = requires(typename Ops::V v) { Ops::hsum(v); };

// MR rows by NV vectors of W lanes per micro-tile; MR*NV accumulators plus NV
// vectors of B must fit the register file.
template <class Ops, int MR, int NV>
struct GemmImpl {
  using T = typename Ops::T;
  using V = typename Ops::V;
  static constexpr int W = Ops::W;
  static constexpr int NR = NV * W;
  using TileFn = void (*)(int64_t, const T*, const T*, T, T, T*, int64_t, int64_t, int64_t);

  // One ROWS x NR tile of C from an MR-strided A panel and an NR-wide B panel.
  // The accumulators are ROWS*NV vectors kept in registers for the whole k loop;
  // a tile with fewer than MR valid rows is instantiated with a smaller ROWS so
  // that edge rows cost nothing.
  template <int ROWS>
  static void tile(int64_t kc, const T* __restrict a, const T* __restrict b, T alpha, T beta,
                   T* __restrict c, int64_t c_rs, int64_t c_cs, int64_t nr) {
    V acc[ROWS][NV];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = Ops::zero();
    }
    // The tile's C rows are touched only after the k loop; asking for them now
    // hides that miss behind thousands of FMAs.
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      __builtin_prefetch(c + i * c_rs, 1);
      __builtin_prefetch(c + i * c_rs + (NR - 1) * c_cs, 1);
    }
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; ++p) {
      V bv[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) bv[j] = Ops::load(b + j * W);
#pragma GCC unroll 16
      for (int i = 0; i < ROWS; ++i) {
        const V ai = Ops::set1(a[i]);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = Ops::fma(ai, bv[j], acc[i][j]);
      }
      a += MR;
      b += NR;
    }

    const V va = Ops::set1(alpha);
    if (nr == NR && c_cs == 1) {
      if (beta == T(0)) {
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) Ops::storeu(c + i * c_rs + j * W, Ops::mul(va, acc[i][j]));
        }
      } else {
        const V vb = Ops::set1(beta);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) {
            T* cij = c + i * c_rs + j * W;
            Ops::storeu(cij, Ops::fma(vb, Ops::loadu(cij), Ops::mul(va, acc[i][j])));
          }
        }
      }
      return;
    }
    if constexpr (HasPartial<Ops>) {
      if (c_cs == 1) {
        int n_j[NV];
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
          const int64_t left = nr - int64_t(j) * W;
          n_j[j] = left <= 0 ? 0 : (left >= W ? W : int(left));
        }
        const V vb = Ops::set1(beta);
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) {
            T* cij = c + i * c_rs + j * W;
            V r = Ops::mul(va, acc[i][j]);
            if (beta != T(0)) r = Ops::fma(vb, Ops::loadn(cij, n_j[j]), r);
            Ops::storen(cij, r, n_j[j]);
          }
        }
        return;
      }
    }
    // Right-edge tiles and C without unit column stride go through a buffer.
    alignas(64) T buf[ROWS][NR];
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) Ops::storeu(&buf[i][j * W], Ops::mul(va, acc[i][j]));
    }
    for (int i = 0; i < ROWS; ++i) {
      T* ci = c + i * c_rs;
      if (beta == T(0)) {
        for (int64_t j = 0; j < nr; ++j) ci[j * c_cs] = buf[i][j];
      } else {
        for (int64_t j = 0; j < nr; ++j) ci[j * c_cs] = buf[i][j] + beta * ci[j * c_cs];
      }
    }
  }

  template <int R>
  static constexpr void fill_tiles(TileFn* t) {
    t[R] = &tile<R>;
    if constexpr (R > 1) fill_tiles<R - 1>(t);
  }

  // float32 edge tiles (fewer than MR rows) run instantiations of their own, so edge
  // rows cost nothing. float64, which no hot path of Ember runs (gradient checks,
  // references), computes a full tile into a buffer and keeps its valid rows: one
  // instantiation instead of MR keeps the library's size down (about 60 KB in the
  // AVX-512 kernel set alone).
  static constexpr bool kEdgeInstances = sizeof(T) == 4;

  static void edge_tile(int64_t kc, const T* a, const T* b, T alpha, T beta, T* c, int64_t c_rs,
                        int64_t c_cs, int64_t nr, int64_t rows) {
    alignas(64) T buf[MR * NR];
    tile<MR>(kc, a, b, T(1), T(0), buf, NR, 1, NR);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < nr; ++j) finish(c + i * c_rs + j * c_cs, buf[i * NR + j], alpha, beta);
  }

  struct TileTable {
    TileFn fn[MR + 1] = {};
    constexpr TileTable() {
      if constexpr (kEdgeInstances) fill_tiles<MR>(fn);
      else fn[MR] = &tile<MR>;
    }
  };
  static constexpr TileTable kTiles{};

  // Loop order: each A micro-panel (MR x kc) stays in L1 while the B panels of the
  // block stream past it, and C is walked along its rows. The other order (a B
  // micro-panel held in L1, C walked down a column strip) measured 10% slower at
  // n = 2048, where a column strip touches a new page of C every row.
  static void macro(int64_t mc, int64_t nc, int64_t kc, const T* pa, const T* pb, T alpha, T beta,
                    T* c, int64_t c_rs, int64_t c_cs) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
      const int64_t rows = imin(MR, mc - i0);
      const TileFn fn = kTiles.fn[rows];
      for (int64_t j0 = 0; j0 < nc; j0 += NR) {
        if (!kEdgeInstances && rows < MR) {
          edge_tile(kc, pa + i0 * kc, pb + j0 * kc, alpha, beta, c + i0 * c_rs + j0 * c_cs, c_rs,
                    c_cs, imin(NR, nc - j0), rows);
          continue;
        }
        fn(kc, pa + i0 * kc, pb + j0 * kc, alpha, beta, c + i0 * c_rs + j0 * c_cs, c_rs, c_cs,
           imin(NR, nc - j0));
      }
    }
  }

  static void pack_a(int64_t mc, int64_t kc, const T* a, int64_t a_rs, int64_t a_cs, T* out) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR, out += MR * kc) {
      const int64_t rows = imin(MR, mc - i0);
      const T* src = a + i0 * a_rs;
      if (rows == MR && a_rs == 1) {
        // A is column-major here: each k step is MR contiguous values.
        for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) out[p * MR + i] = src[p * a_cs + i];
        }
      } else if (HasTranspose<Ops> && MR <= W && rows == MR && a_cs == 1) {
        // A is row-major: each panel is a transpose of MR rows, W columns at a time.
        int64_t p = 0;
        if constexpr (HasTranspose<Ops>) {
          for (; p + W <= kc; p += W) Ops::transpose(src + p, a_rs, MR, out + p * MR, MR);
        }
        for (; p < kc; ++p) {
          for (int i = 0; i < MR; ++i) out[p * MR + i] = src[i * a_rs + p];
        }
      } else {
        for (int64_t i = 0; i < rows; ++i) {
          const T* row = src + i * a_rs;
          for (int64_t p = 0; p < kc; ++p) out[p * MR + i] = row[p * a_cs];
        }
        for (int64_t i = rows; i < MR; ++i) {
          for (int64_t p = 0; p < kc; ++p) out[p * MR + i] = T(0);
        }
      }
    }
  }

  static void pack_b(int64_t kc, int64_t nc, const T* b, int64_t b_rs, int64_t b_cs, T* out) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR, out += NR * kc) {
      const int64_t cols = imin(NR, nc - j0);
      const T* src = b + j0 * b_cs;
      if (cols == NR && b_cs == 1) {
        for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j)
            Ops::storeu(out + p * NR + j * W, Ops::loadu(src + p * b_rs + j * W));
        }
      } else if (HasTranspose<Ops> && cols == NR && b_rs == 1) {
        // B is column-major (a transposed weight, typically): W x W transposes.
        int64_t p = 0;
        if constexpr (HasTranspose<Ops>) {
          for (; p + W <= kc; p += W) {
#pragma GCC unroll 8
            for (int j = 0; j < NV; ++j)
              Ops::transpose(src + j * W * b_cs + p, b_cs, W, out + p * NR + j * W, NR);
          }
        }
        for (; p < kc; ++p) {
          for (int j = 0; j < NR; ++j) out[p * NR + j] = src[j * b_cs + p];
        }
      } else {
        for (int64_t j = 0; j < cols; ++j) {
          const T* col = src + j * b_cs;
          for (int64_t p = 0; p < kc; ++p) out[p * NR + j] = col[p * b_rs];
        }
        for (int64_t j = cols; j < NR; ++j) {
          for (int64_t p = 0; p < kc; ++p) out[p * NR + j] = T(0);
        }
      }
    }
  }

  // The lanes of v summed pairwise: lane l + lane l + W/2 for l < W/2, and so on
  // down to one (Ops::hsum, where an instruction set has one, adds in this order).
  static inline T hsum(V v, T* lanes) {
    if constexpr (HasHsum<Ops>) {
      return Ops::hsum(v);
    } else {
      Ops::storeu(lanes, v);
      for (int w = W / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
      return lanes[0];
    }
  }

  // c = alpha * acc + beta * c for one value (beta == 0 never reads c).
  static inline void finish(T* c, T acc, T alpha, T beta) {
    *c = beta == T(0) ? alpha * acc : alpha * acc + beta * *c;
  }

  // How many rows of A one pass over B serves in `rows`: R x C accumulators and C
  // vectors of B must fit the register file (32 zmm; 16 ymm or xmm).
  // (float64 takes one row per pass: it has no hot path, and every pass size is
  // code in every kernel set.)
  static constexpr int kPassRows = sizeof(T) == 8 ? 1 : W >= 16 ? 4 : 2;

  // R rows of A times B in one pass over B, read in its own layout (GemmKernel::rows).
  // Rows of B contiguous: 4 vectors of columns accumulate a[i][p] * B[p, j..] over p
  // for each row i. Columns contiguous: dot products of one or two columns of B at a
  // time with each row of A (dot_columns).
  template <int R>
  static void rows_pass(int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                        const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs) {
    T lanes[W];
    if (b_cs == 1) {
      // Blocks of 4 vectors of columns (8 for one row measured no faster), then
      // single vectors (axpy_vector), then single columns.
      constexpr int NVB = 4;
      int64_t j = 0;
      for (; j + NVB * W <= n; j += NVB * W) axpy_columns<R, NVB>(j, k, alpha, a, a_rs, a_cs, b, b_rs, beta, c, c_rs, lanes);
      for (; j + W <= n; j += W) axpy_vector<R>(j, k, alpha, a, a_rs, a_cs, b, b_rs, beta, c, c_rs, lanes);
      for (; j < n; ++j)
        for (int i = 0; i < R; ++i) {
          T acc = T(0);
          for (int64_t p = 0; p < k; ++p) acc += a[i * a_rs + p * a_cs] * b[p * b_rs + j];
          finish(c + i * c_rs + j, acc, alpha, beta);
        }
      return;
    }
    // b_rs == 1 and a_cs == 1: column j of B is b + j * b_cs, contiguous (a Linear's
    // weight row), read front to back: one sequential stream per column, which the
    // prefetchers follow (8 columns side by side measured 1.6x slower than one on a
    // 784 KB weight). One row takes one column at a time; more rows take two, so
    // each vector of A loaded feeds two FMAs.
    // A weight that fits in L2 (a small Linear at batch 1) is not streamed from
    // memory, so four of its rows side by side share each load of A and overlap
    // their sums: the seed network's 192 x 120 layer went from 982 to 857 ns (one
    // thread, AVX-512). Each column is summed in the
    // same order as alone when every row starts on a vector boundary (then the
    // one-column path has no alignment head), so which path runs, which may depend
    // on how threads split the columns, never changes the bits.
    // Rows shorter than kAlignedHeadMinK have no alignment head in either path
    // (dot_columns), so the four-column pass takes them at any alignment: the seed
    // network's 120 x 60 layer (480-byte rows, every other one half a line off) went
    // from 641 to 521 ns with it (the whole linear op, one thread; 472 with the
    // masked tail in dot_columns).
    constexpr int C = R == 1 ? 1 : 2;
    if constexpr (R == 1 && W * sizeof(T) == 64) {
      const bool aligned = reinterpret_cast<uintptr_t>(b) % 64 == 0 && (b_cs * int64_t(sizeof(T))) % 64 == 0;
      if ((aligned || k < kAlignedHeadMinK) && n * k * int64_t(sizeof(T)) <= kCachedWeightBytes) {
        for (int64_t j = 0; j < n; j += 4)
          dot_columns<1, 4>(j, int(imin(4, n - j)), k, alpha, a, a_rs, b, b_cs, beta, c, c_rs, lanes);
        return;
      }
    }
    for (int64_t j = 0; j < n; j += C)
      dot_columns<R, C>(j, n - j < C ? 1 : C, k, alpha, a, a_rs, b, b_cs, beta, c, c_rs, lanes);
  }
  static constexpr int64_t kCachedWeightBytes = 256 << 10;
  static constexpr int64_t kAlignedHeadMinK = 256;

  // Every accumulator of an R x N block set to zero (unrolled: they live in registers).
  template <int R, int N>
  static inline void zero_all(V (&acc)[R][N]) {
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
      for (int v = 0; v < N; ++v) acc[i][v] = Ops::zero();
    }
  }

  // C[0..R, j..j+NVB*W] from R rows of A and B's rows (contiguous): each row i
  // accumulates a[i][p] * B[p, j..] over p, one FMA chain per vector of C.
  template <int R, int NVB>
  static void axpy_columns(int64_t j, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                           const T* b, int64_t b_rs, T beta, T* c, int64_t c_rs, T* lanes) {
    V acc[R][NVB];
    zero_all(acc);
    const T* br = b + j;
    for (int64_t p = 0; p < k; ++p, br += b_rs) {
      V bv[NVB];
#pragma GCC unroll 8
      for (int v = 0; v < NVB; ++v) bv[v] = Ops::loadu(br + v * W);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const V ai = Ops::set1(a[i * a_rs + p * a_cs]);
#pragma GCC unroll 8
        for (int v = 0; v < NVB; ++v) acc[i][v] = Ops::fma(ai, bv[v], acc[i][v]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < NVB; ++v) {
        Ops::storeu(lanes, acc[i][v]);
        for (int l = 0; l < W; ++l) finish(c + i * c_rs + j + v * W + l, lanes[l], alpha, beta);
      }
  }

  // One vector of C's columns as axpy_columns computes it, but with 4 accumulators
  // per row taking every 4th row of B, so that 4 FMA chains hide the latency.
  template <int R>
  static void axpy_vector(int64_t j, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                          const T* b, int64_t b_rs, T beta, T* c, int64_t c_rs, T* lanes) {
    constexpr int U = 4;
    V acc[R][U];
    zero_all(acc);
    const T* br = b + j;
    int64_t p = 0;
    for (; p + U <= k; p += U) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const V bv = Ops::loadu(br + (p + u) * b_rs);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) acc[i][u] = Ops::fma(Ops::set1(a[i * a_rs + (p + u) * a_cs]), bv, acc[i][u]);
      }
    }
    for (; p < k; ++p) {
      const V bv = Ops::loadu(br + p * b_rs);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) acc[i][0] = Ops::fma(Ops::set1(a[i * a_rs + p * a_cs]), bv, acc[i][0]);
    }
    for (int i = 0; i < R; ++i) {
      Ops::storeu(lanes, Ops::add(Ops::add(acc[i][0], acc[i][1]), Ops::add(acc[i][2], acc[i][3])));
      for (int l = 0; l < W; ++l) finish(c + i * c_rs + j + l, lanes[l], alpha, beta);
    }
  }

  // C[0..R, j..j+cols] (cols <= C) from R rows of A and contiguous columns of B. Each
  // of the R*C dot products keeps U = 8 / C accumulators (vector u of every group of
  // U takes k slice u; 4 chains for one column hide the FMA latency), added in a
  // fixed tree: accumulators pairwise, plus the k tail's products as one vector
  // where Ops has masked loads, lanes pairwise (else the k tail after, in order). A
  // last odd column is computed twice and stored once (no second instantiation:
  // library size).
  template <int R, int C>
  static void dot_columns(int64_t j, int cols, int64_t k, T alpha, const T* a, int64_t a_rs, const T* b,
                          int64_t b_cs, T beta, T* c, int64_t c_rs, T* lanes) {
    constexpr int U = R * C >= 8 ? 2 : 4;
    const T* col[C];
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) col[v] = b + (j + (v < cols ? v : 0)) * b_cs;
    // One column: its first values up to a vector boundary are summed apart, so the
    // streamed loads are aligned (a weight row with k % W != 0, or a buffer that is
    // not vector-aligned, ran 1.6x slower with every load split across two lines).
    // Not for short rows: there the head's scalar chain cost more than split loads.
    T head = T(0);
    if constexpr (R == 1 && C == 1) {
      const uintptr_t addr = reinterpret_cast<uintptr_t>(col[0]);
      if (addr % sizeof(T) == 0 && k >= kAlignedHeadMinK) {
        const int64_t h = imin(k, int64_t((0 - addr) % (W * sizeof(T)) / sizeof(T)));
        for (int64_t q = 0; q < h; ++q) head += a[q] * col[0][q];
        a += h;
        col[0] += h;
        k -= h;
      }
    }
    const int64_t kv = k - k % W;
    const int64_t kg = k - k % (U * W);
    V acc[R][C][U];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) {
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) acc[i][v][u] = Ops::zero();
      }
    }
    // Pointers that step through the groups: measured 1.3x faster than base +
    // scaled index addressing on Zen 5.
    const T* ap[R];
    const T* bp[C];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) ap[i] = a + i * a_rs;
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) bp[v] = col[v];
    const T* const bend = col[0] + kg;
    for (; bp[0] < bend;) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        V bv[C];
#pragma GCC unroll 4
        for (int v = 0; v < C; ++v) bv[v] = Ops::loadu(bp[v] + u * W);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          const V av = Ops::loadu(ap[i] + u * W);
#pragma GCC unroll 4
          for (int v = 0; v < C; ++v) acc[i][v][u] = Ops::fma(av, bv[v], acc[i][v][u]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) ap[i] += U * W;
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) bp[v] += U * W;
    }
    int64_t p = kg;
    for (; p < kv; p += W) {
      V bv[C];
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) bv[v] = Ops::loadu(col[v] + p);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const V av = Ops::loadu(a + i * a_rs + p);
#pragma GCC unroll 4
        for (int v = 0; v < C; ++v) acc[i][v][0] = Ops::fma(av, bv[v], acc[i][v][0]);
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < cols; ++v) {
        V sum = acc[i][v][0];
        if constexpr (U == 4)
          sum = Ops::add(Ops::add(acc[i][v][0], acc[i][v][1]), Ops::add(acc[i][v][2], acc[i][v][3]));
        else
          sum = Ops::add(acc[i][v][0], acc[i][v][1]);
        // The last k % W values: one vector of products of masked loads where the
        // instruction set has them (zeros past the row, 0 * 0 = 0), else in order.
        // (A chain of up to 15 scalar multiply-adds was most of a short row's time.)
        if constexpr (HasPartial<Ops>) {
          if (k > kv) {
            const int t = int(k - kv);
            sum = Ops::add(sum, Ops::mul(Ops::loadn(a + i * a_rs + kv, t), Ops::loadn(col[v] + kv, t)));
          }
        }
        T s = hsum(sum, lanes);
        if constexpr (!HasPartial<Ops>)
          for (int64_t q = kv; q < k; ++q) s += a[i * a_rs + q] * col[v][q];
        finish(c + i * c_rs + j + v, s + head, alpha, beta);
      }
    }
  }

  // A few rows of A (GemmKernel::rows): kPassRows at a time, then the rest.
  static void rows(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t a_rs, int64_t a_cs,
                   const T* b, int64_t b_rs, int64_t b_cs, T beta, T* c, int64_t c_rs) {
    int64_t i = 0;
    for (; i + kPassRows <= m; i += kPassRows)
      rows_pass<kPassRows>(n, k, alpha, a + i * a_rs, a_rs, a_cs, b, b_rs, b_cs, beta, c + i * c_rs, c_rs);
    const int64_t left = m - i;
    a += i * a_rs;
    c += i * c_rs;
    // The rest as a pass of 2 and one of 1 (a 3-row instantiation measured slower
    // than the 4-row one, and each costs library size in every kernel set).
    if constexpr (kPassRows > 2) {
      if (left >= 2) {
        rows_pass<2>(n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs);
        a += 2 * a_rs;
        c += 2 * c_rs;
      }
    }
    if (left % 2 == 1) rows_pass<1>(n, k, alpha, a, a_rs, a_cs, b, b_rs, b_cs, beta, c, c_rs);
  }

  static constexpr GemmKernel<T> table(const char* name) {
    return GemmKernel<T>{name, MR, NR, 1, &pack_a, &pack_b, &macro, &rows};
  }
};

}  // namespace
}  // namespace ember::cpu::gemm_detail
