// The GEMM ladder: C = A.B written several times, from the textbook triple loop to
// Ember's production kernel, one small function per rung, for learners to read side
// by side (docs/kernels-cpu.md, "The GEMM ladder"). The rung tables below are what the
// test (tests/kernels/test_gemm_ladder.cpp) checks and `ember-bench --suite
// gemm-ladder` times: a new rung is one function and one table row.
//
// The ladder is not part of libember: it is a static library linked only by the
// tests and the bench (kernels/ladder/meson.build). Nothing in Ember calls it.
#pragma once

#include <cstdint>

namespace ember::ladder {

// Every CPU rung computes C = A.B in float32 with row-major, contiguous operands:
// A is m x k, B is k x n, C is m x n and is overwritten. C must not overlap A or B.
// Sizes may be any positive values (no multiple-of-the-tile assumption).
using CpuGemm = void (*)(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         float* c);

// Rung 1: the definition, c[i][j] = sum_p a[i][p] * b[p][j]; B is walked down a column.
void gemm_naive(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
// Rung 2: the same sums in i, p, j order: the inner loop runs along rows of B and C,
// which the compiler turns into vector instructions.
void gemm_ikj(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
// Rung 3: rung 2 over blocks of A, B and C sized so that the block of B being reused
// stays in the L2 cache.
void gemm_blocked(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
// Rung 4: blocks of A and B copied ("packed") into the order the inner loop reads
// them, and an MR x NR tile of C kept in registers across the whole k loop.
void gemm_packed(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
// Rung 5: Ember's production GEMM, ember::cpu::gemm (kernels/cpu/gemm.h): rung 4's
// structure with an AVX-512 or AVX2 micro-kernel picked at run time, tuned blocking
// and OpenMP threads. Called, not copied.
void gemm_production(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                     float* c);

// Which clone of the rungs (gemm_ladder_cpu.cpp, target_clones) this CPU runs:
// "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2 + FMA), or "baseline".
const char* cpu_rungs_isa();

struct CpuRung {
  const char* name;         // case name in the bench and the test
  CpuGemm fn;
  int64_t largest_timed_n;  // the bench times this rung at square sizes up to this
                            // (the naive rung takes about a second a call at 512)
};

// In order, slowest first; the last is the production kernel. The bench runs every
// rung on one thread, then the last one again on --threads threads.
inline constexpr CpuRung kCpuRungs[] = {
    {"1 naive ijk", gemm_naive, 256},
    {"2 loop order ikj", gemm_ikj, 512},
    {"3 cache blocking", gemm_blocked, 512},
    {"4 packed + registers", gemm_packed, 512},
    {"5 production", gemm_production, 512},
};

}  // namespace ember::ladder
