// The float32 softmax loops (softmax_row_impl.h) compiled for AVX-512.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/base/half.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/softmax_row.h"
#include "kernels/base/vec_math.h"

#if defined(__x86_64__)

EMBER_ISA_BEGIN(EMBER_TARGET_AVX512)
#include "kernels/cpu/bf16_round_avx512.h"
#include "kernels/cpu/exp_avx512.h"
#include "kernels/cpu/half16_avx512.h"
#include "kernels/cpu/log_avx512.h"
#include "kernels/cpu/softmax_row_impl.h"
namespace ember::cpu::softmax_detail {
namespace {

// The softmax loops' exp policy (ExpLoop in softmax_row_impl.h) on exp16_table
// (exp_avx512.h), whose arguments x - max are never positive: against exp16, rows of
// 4096 in L1 on one thread 0.162 against 0.188 ns per value (softmax), 0.167 against
// 0.192 (log_softmax).
struct ExpTable {
  // e[i] = exp(x[i] - m) for i in [0, n); e may be x. The last n % 16 lanes masked.
  static void shifted(const float* x, float m, float* e, int64_t n) {
    const __m512 mv = _mm512_set1_ps(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(e + i, exp16_table(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv)));
    if (i < n) {
      const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
      _mm512_mask_storeu_ps(e + i, k, exp16_table(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv)));
    }
  }
  // e[i] = exp(x[i] - m[i]) for i in [0, n).
  static void shifted_each(const float* x, const float* m, float* e, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(e + i, exp16_table(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(m + i))));
    if (i < n) {
      const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
      const __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, m + i));
      _mm512_mask_storeu_ps(e + i, k, exp16_table(t));
    }
  }
};

// The largest (kMax) or the sum of v's 16 lanes, in every lane: halves, quarters,
// pairs and neighbours swapped and combined.
template <bool kMax>
inline __m512 all_lanes(__m512 v) {
  const auto op = [](__m512 a, __m512 b) { return kMax ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b); };
  v = op(v, _mm512_shuffle_f32x4(v, v, 0x4e));
  v = op(v, _mm512_shuffle_f32x4(v, v, 0xb1));
  v = op(v, _mm512_permute_ps(v, 0x4e));
  return op(v, _mm512_permute_ps(v, 0xb1));
}

// Reduces each of 16 vectors to one lane: lane pos[r] of the result is the max (or
// sum) of v[r]'s 16 lanes. A tree of 15 steps, each combining two vectors' halves,
// quarters, pairs and neighbours (two shuffles and one op), instead of a 4-step
// reduction within each vector (8 instructions a vector, 16 for a block's max and
// sum, twice the tree's). The lanes come out in a fixed order, found once by
// running the tree on v[r] = r (TreePositions).
template <bool kMax>
inline __m512 tree16(const __m512 (&v)[16]) {
  const auto op = [](__m512 a, __m512 b) { return kMax ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b); };
  __m512 w[8], x[4], y[2];
  for (int i = 0; i < 8; ++i)
    w[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  for (int i = 0; i < 4; ++i)
    x[i] = op(_mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0x88), _mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0xdd));
  for (int i = 0; i < 2; ++i)
    y[i] = op(_mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0x44), _mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0xee));
  return op(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xdd));
}

// pos[r]: the lane of tree16's result that holds vector r's reduction.
struct TreePositions {
  int32_t pos[16];
  TreePositions() {
    __m512 v[16];
    for (int r = 0; r < 16; ++r) v[r] = _mm512_set1_ps(static_cast<float>(r));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, tree16<true>(v));
    for (int j = 0; j < 16; ++j) pos[static_cast<int>(lanes[j])] = j;
  }
};

// The lane table of softmax_rows16_avx512 for one row length n (1..16):
// owner[v]: for each lane of vector v, the lane of a tree16 result holding its row.
// Each thread keeps the table of the last n it saw: building it takes 16n integer
// divisions (at most 256).
struct RowTables {
  int n = 0;
  alignas(64) int32_t owner[16][16];
  void build(int len) {
    static const TreePositions tree;
    n = len;
    for (int v = 0; v < n; ++v)
      for (int i = 0; i < 16; ++i) owner[v][i] = tree.pos[(16 * v + i) / n];
  }
};

// Sixteen rows of n <= 16 values at a time, for every whole block of 16 rows; returns
// how many rows it did. The block's 16n values are n full vectors, so exp runs on
// whole vectors (one masked vector per row wastes 16 - n lanes, 6 of 16 for a batch
// of 10 logits). Each row's max and sum come from tree16 over the block's 16 row
// vectors; vpermps spreads them back over the lanes each row's values occupy
// (lane i of vector v holds row (16v + i) / n's value).
//
// A block is a chain: max tree, exp, sum tree, a division, the scaled stores. Run
// one block after another, each waited on its own tree and division. So the blocks
// are software-pipelined: while block b's exp runs, block b - 2 is stored (its
// 1/sum ready), block b + 1's max is taken and block b - 1's sum comes last (see
// the loop for why b - 1, not b). The exp loop goes 4 vectors at a time, the stores
// 2 (n is known only at run time, so the compiler cannot unroll them). When the
// pipelining came in (rows read back with vpermt2ps then, see below; two stages),
// rows of 10 on one thread took 2.8 against 3.4-3.6 ns a row in L1, level with a
// copy compiled for n = 10 alone; 65536 rows from L3, with the prefetch below,
// 195-199 against 217-220 us.
// kLog: log_softmax; a template, so each of the two block loops is compiled on its own
// (with log a run-time flag, softmax's blocks ran 2-3% slower once log_softmax's
// took the zero route too).
template <bool kLog>
int64_t rows16(const float* x, float* y, int64_t rows, int n) {
  thread_local RowTables tables;
  if (tables.n != n) tables.build(n);
  // Local copies: the loop's stores (may-alias vectors) could otherwise reach the
  // thread's tables, and every table load would wait for them.
  alignas(64) int32_t owner[16][16];
  std::memcpy(owner, tables.owner, sizeof owner);
  const __mmask16 k = static_cast<__mmask16>((1u << n) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  // Block b's exp values go to ebuf[b % 3] while blocks b - 1 and b - 2's wait in the
  // others (n vectors each).
  alignas(64) float ebuf[3][16 * 16];
  const int64_t blocks = rows / 16;
  if (blocks == 0) return 0;
  // Block b's shift: 0 for every row when all its 16n values lie in [-64, 64] (no
  // NaN), else each row's max, spread as tree16 leaves them (an all -inf row: 0).
  // Softmax is the same for any shift; the max only keeps exp from overflowing.
  // Within [-64, 64] exp cannot overflow (e^64 = 6e27, sixteen of them 1e29) nor
  // leave the normal range (e^-64 = 1.6e-28), so its relative error, and each
  // probability's, is that of the shifted route; the range check (n compares on
  // whole vectors) costs half of the max tree it replaces, and the exp loop skips a
  // permute and a subtraction per vector. log_softmax on this route forms
  // (x - hi) - lo from the log sum's two parts (log16_parts): hi, a multiple of ln 2's
  // high part, is exact, and x - hi is exact near the max (Sterbenz), so only lo's
  // rounding (|lo| < 0.5) reaches the output, where one float log sum (up to 67)
  // would carry 4e-6; outputs are then clamped to 0 from above, as the max route's
  // (x - max) - log sum never exceeds it.
  const __m512 range = _mm512_set1_ps(64.0f);
  const auto block_shift = [&](int64_t b, bool* zero) {
    const float* xb = x + b * 16 * n;
    // (Rows of 1 keep the max for log_softmax, whose outputs are then exactly 0.)
    __mmask16 inside = kLog && n == 1 ? 0 : 0xffff;
    for (int v = 0; v < n; ++v)
      inside &= _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb + 16 * v)), range, _CMP_LE_OQ);
    *zero = inside == 0xffff;
    if (*zero) return _mm512_setzero_ps();
    __m512 rv[16];
    for (int r = 0; r < 16; ++r) rv[r] = _mm512_mask_loadu_ps(neg_inf, k, xb + r * n);
    const __m512 m = tree16<true>(rv);
    return _mm512_mask_mov_ps(m, _mm512_cmpeq_ps_mask(m, neg_inf), _mm512_setzero_ps());
  };
  // Block b's outputs: e * (1 / sum), or (x - sh) - f for log_softmax, sh the shift
  // and f the log sum, or hi and lo of the log sum on the zero route (x - sh is
  // exact near the max; see scale_shift in softmax_row_impl.h); f holds the per-row
  // factor or log sum, and sh the shift, in tree16's lane order.
  const auto store = [&](int64_t b, const float* e, __m512 f, __m512 sh) {
    [[maybe_unused]] const float* xb = x + b * 16 * n;
    float* yb = y + b * 16 * n;
    const auto one = [&](int v) {
      const __m512i lanes = _mm512_load_si512(owner[v]);
      const __m512 fv = _mm512_permutexvar_ps(lanes, f);
      __m512 o;
      if constexpr (!kLog) o = _mm512_mul_ps(_mm512_load_ps(e + 16 * v), fv);
      else  // min(0, o): o where o <= 0 or NaN (vminps returns its second operand then)
        o = _mm512_min_ps(_mm512_setzero_ps(),
                          _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xb + 16 * v), _mm512_permutexvar_ps(lanes, sh)), fv));
      _mm512_storeu_ps(yb + 16 * v, o);
    };
    int v = 0;
    for (; v + 2 <= n; v += 2) {
      one(v);
      one(v + 1);
    }
    if (v < n) one(v);
  };
  // Block b's sum: each row's values read back from its exp values with one masked
  // load (lanes past n read as 0), a load port each, where picking them out of the
  // two vectors a row spans (vpermt2ps) took a shuffle each from the pipes the exp
  // and the trees use (one thread, rows of 10 in cache, 2.45 against 2.63 ns a row,
  // the same bits); then the factor (softmax) or log sum (log_softmax) into
  // pending, and the shift into pending_shift, for the stores of the next round.
  __m512 pending = neg_inf, pending_shift = neg_inf;
  const auto finish = [&](const float* e, __m512 m, bool zero) {
    __m512 rv[16];
    for (int r = 0; r < 16; ++r) rv[r] = _mm512_maskz_loadu_ps(k, e + r * n);
    const __m512 s = tree16<false>(rv);
    if (kLog && zero) {
      // The block's 16 logs in one vector, where 16 library calls took over half of a
      // log_softmax of rows of 10; on the zero route in two parts (see block_shift).
      const Log16Parts ls = log16_parts(s);
      pending = ls.lo;
      pending_shift = ls.hi;
    } else if (kLog) {
      pending = log16(s);  // within 2 ulp of log sum, which lies in [0, log 16]
      pending_shift = m;
    } else {
      pending = _mm512_div_ps(_mm512_set1_ps(1.0f), s);
    }
  };
  bool zero_next = false, zero_prev = false;
  __m512 m_next = block_shift(0, &zero_next);
  __m512 m_prev = neg_inf;  // block b - 1's shift
  // Three stages: in round b, block b's exp, block b - 1's sum (finish) and block b
  // - 2's stores. The rows' masked loads in finish straddle the exp's 64-byte
  // stores, which a load cannot take its data from while they wait in the store
  // queue; read in the same round (two stages), they waited for those stores to
  // reach the cache, and the round for them: removing the exp altogether then saved
  // only 9% (rows of 10 in L2, one thread, log_softmax 0.249 -> 0.227 ns per value).
  // Three stages against two there: 0.255 -> 0.234 (log_softmax), 0.212 -> 0.195
  // (softmax); ember-bench [65536, 10], five runs of each build in turn: 53-61
  // against 43-58 GB/s (log_softmax), 70-74 against 54-71 (softmax). Four stages
  // (the stores a round later still, their sums two rounds old) read 0.248 and 0.182.
  // Rounds blocks and blocks + 1 only drain the pipeline (each stage's code appears
  // once: a copy of the last rounds after the loop took 5 KB for each of softmax and
  // log_softmax).
  for (int64_t b = 0; b < blocks + 2; ++b) {
    const float* xb = x + std::min(b, blocks - 1) * 16 * n;
    float* e = ebuf[b % 3];
    const __m512 m = m_next;
    const bool zero = zero_next;
    // exp over the block's n whole vectors, kept in e (log_softmax reads x after it,
    // and y may be x); each row's values then read back from it. exp16_table has
    // no upper clamp: with a zero shift its arguments reach 64, where exp16's clamp
    // (89) would not apply either. (Against exp16's ln 2 route without that clamp,
    // rows of 10 in L2 on one thread: 0.212 against 0.223 ns per value for softmax,
    // 0.270 against 0.272 for log_softmax.)
    const auto exp_block = [&]<bool kZero>() {
      const auto shifted = [&](int v) {
        const __m512 xv = _mm512_loadu_ps(xb + 16 * v);
        if constexpr (kZero) return xv;
        else return _mm512_sub_ps(xv, _mm512_permutexvar_ps(_mm512_load_si512(owner[v]), m));
      };
      int v = 0;
      for (; v + 4 <= n; v += 4) {
        const __m512 t0 = shifted(v), t1 = shifted(v + 1), t2 = shifted(v + 2), t3 = shifted(v + 3);
        _mm512_store_ps(e + 16 * v, exp16_table(t0));
        _mm512_store_ps(e + 16 * v + 16, exp16_table(t1));
        _mm512_store_ps(e + 16 * v + 32, exp16_table(t2));
        _mm512_store_ps(e + 16 * v + 48, exp16_table(t3));
      }
      for (; v < n; ++v) _mm512_store_ps(e + 16 * v, exp16_table(shifted(v)));
    };
    if (b < blocks) {
      if (zero) exp_block.template operator()<true>();
      else exp_block.template operator()<false>();
    }
    if (b >= 2) store(b - 2, ebuf[(b - 2) % 3], pending, pending_shift);
    if (b + 1 < blocks) m_next = block_shift(b + 1, &zero_next);
    // The lines of block b + 2 (x to read, y to write) are requested while this
    // block computes: without it, each block's first loads and stores wait on L2 or L3
    // (65536 rows of 10 on one thread: 207 against 195 us).
    constexpr int64_t kAhead = 2;
    if (b + kAhead < blocks) {
      const char* xp = reinterpret_cast<const char*>(x + (b + kAhead) * 16 * n);
      char* yp = reinterpret_cast<char*>(y + (b + kAhead) * 16 * n);
      for (int l = 0; l < n; ++l) {
        __builtin_prefetch(xp + 64 * l);
        __builtin_prefetch(yp + 64 * l, 1);
      }
    }
    if (b >= 1 && b <= blocks) finish(ebuf[(b - 1) % 3], m_prev, zero_prev);
    m_prev = m;
    zero_prev = zero;
  }
  return blocks * 16;
}

int64_t softmax_rows16_avx512(const float* x, float* y, int64_t rows, int n, bool log) {
  return log ? rows16<true>(x, y, rows, n) : rows16<false>(x, y, rows, n);
}

// Rows of n <= 16 values (a batch of logits): blocks of 16 rows above, the rest one
// masked vector per row, its max and sum in registers, where the portable block loop
// (softmax_rows_f32) runs them as scalar chains. Each such row is a chain of about
// 40 dependent instructions, so kRows rows go side by side (8 measured faster than 4
// and than 1). Longer short rows go to the block loop.
void softmax_rows_avx512(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  if (n > 16) return softmax_rows_f32<ExpTable>(x, y, rows, n, log);
  const int64_t done = softmax_rows16_avx512(x, y, rows, static_cast<int>(n), log);
  x += done * n;
  y += done * n;
  rows -= done;
  constexpr int kRows = 8;
  const __mmask16 k = static_cast<__mmask16>((1u << n) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
    // Fewer than kRows rows left: the missing ones repeat the first and are not stored.
    const int nr = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
    __m512 v[kRows], m[kRows], e[kRows], s[kRows];
    for (int i = 0; i < kRows; ++i) v[i] = _mm512_mask_loadu_ps(neg_inf, k, x + (r0 + (i < nr ? i : 0)) * n);
    for (int i = 0; i < kRows; ++i) m[i] = all_lanes<true>(v[i]);
    for (int i = 0; i < kRows; ++i) {  // all -inf: m = 0; the -inf lanes past n give 0
      m[i] = _mm512_mask_mov_ps(m[i], _mm512_cmpeq_ps_mask(m[i], neg_inf), _mm512_setzero_ps());
      e[i] = exp16(_mm512_sub_ps(v[i], m[i]));
    }
    for (int i = 0; i < kRows; ++i) s[i] = all_lanes<false>(e[i]);
    if (log) {
      // The library log, all calls in one loop (each call clobbers the vector registers).
      float ls[kRows];
      for (int i = 0; i < nr; ++i) ls[i] = std::log(_mm512_cvtss_f32(s[i]));
      for (int i = 0; i < nr; ++i)
        _mm512_mask_storeu_ps(y + (r0 + i) * n, k, _mm512_sub_ps(_mm512_sub_ps(v[i], m[i]), _mm512_set1_ps(ls[i])));
    } else {
      for (int i = 0; i < kRows; ++i)
        if (i < nr) _mm512_mask_storeu_ps(y + (r0 + i) * n, k, _mm512_div_ps(e[i], s[i]));
    }
  }
}

// Rows of float16 or bfloat16 (HalfRowFn in softmax_row.h) in three passes over
// each row, converting as they read and write (the codecs of half16_avx512.h): the
// max (the widened values kept in `stage`), exp(x - max) from `stage` back into it
// with its sum, then the scaled values (or x - max - log sum) narrowed into y. The
// other tables widen a row into a float buffer, run row_f32 on it and narrow it
// again: two more passes, which held the float16 softmax to 0.40 of the copy floor.
template <class Codec>
void softmax_row_half(const uint16_t* x, uint16_t* y, int64_t rows, int64_t n, bool log, const HalfRowOptions& opt) {
  float* stage = opt.stage;
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t whole = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - whole)) - 1);
  constexpr __mmask16 all = 0xffff;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * n;
    uint16_t* yr = y + r * n;
    __m512 mv[2] = {neg_inf, neg_inf};
    int64_t i = 0;
    // The whole vectors go to `stage` widened, so the exp pass reads float32 from the
    // cache instead of converting again: float16's vcvtph2ps shares a port with the
    // exp's vreduceps and vscalefps. (bfloat16 widens with a zero-extension and a
    // shift; staged, its rows in cache went from 0.21 to 0.16 ns per value too.)
    for (; i + 32 <= whole; i += 32) {
      const __m512 a = Codec::widen(xr + i, all), b = Codec::widen(xr + i + 16, all);
      _mm512_storeu_ps(stage + i, a);
      _mm512_storeu_ps(stage + i + 16, b);
      mv[0] = _mm512_max_ps(mv[0], a);
      mv[1] = _mm512_max_ps(mv[1], b);
    }
    if (i < whole) {
      const __m512 a = Codec::widen(xr + i, all);
      _mm512_storeu_ps(stage + i, a);
      mv[0] = _mm512_max_ps(mv[0], a);
    }
    if (tail) mv[1] = _mm512_max_ps(mv[1], _mm512_mask_mov_ps(neg_inf, tail, Codec::widen(xr + whole, tail)));
    float m = _mm512_cvtss_f32(all_lanes<true>(_mm512_max_ps(mv[0], mv[1])));
    if (m == -std::numeric_limits<float>::infinity()) m = 0;
    // exp(x - m) = 2^(x log2 e + b), b = -m log2 e rounded: the shift rides in the FMA
    // that forms the exponent, where a subtraction took a slot of the two pipes that
    // vreduceps, vscalefps and the conversions share (the exp pass in L1, one thread:
    // 0.83 against 0.92 ns per 16 values). Every exponent is then off by the same
    // d = m log2 e + b (exact, from one FMA; |d| <= 2^-4 for |m| <= 2^20), a factor
    // 2^d common to the row that cancels in softmax; log_softmax takes d ln 2 out of
    // its log sum. Larger |m| (bfloat16 holds up to 3.4e38, where 2^d would overflow),
    // inf and NaN subtract m first, as x - m.
    constexpr float kLog2e = 1.44269504088896341f;
    const bool fold = std::fabs(m) <= 1048576.0f;
    const float bs = -m * kLog2e;
    const __m512 l2e = _mm512_set1_ps(kLog2e), mb = _mm512_set1_ps(m), b = _mm512_set1_ps(bs);
    const float d = fold ? std::fma(m, kLog2e, bs) : 0.0f;
    // The next row's lines are prefetched while exp runs (its max pass then reads
    // from cache): one 64-byte line per 32 values.
    const char* next = reinterpret_cast<const char*>(r + 1 < rows ? xr + n : nullptr);
    // Two accumulators, named rather than indexed (an indexed pair went through the
    // stack: a store-to-load chain per vector).
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    const auto exp_pass = [&]<bool kFold>() {
      const auto exp_at = [&](int64_t at, __mmask16 k) {
        const __m512 v = k == all ? _mm512_loadu_ps(stage + at) : Codec::widen(xr + at, k);
        const __m512 t = kFold ? _mm512_fmadd_ps(v, l2e, b) : _mm512_mul_ps(_mm512_sub_ps(v, mb), l2e);
        const __m512 e = _mm512_maskz_mov_ps(k, exp2_16(t));
        _mm512_storeu_ps(stage + at, e);
        return e;
      };
      for (i = 0; i + 32 <= whole; i += 32) {
        if (next) __builtin_prefetch(next + 2 * i);
        s0 = _mm512_add_ps(s0, exp_at(i, all));
        s1 = _mm512_add_ps(s1, exp_at(i + 16, all));
      }
      if (i < whole) s0 = _mm512_add_ps(s0, exp_at(i, all));
      if (tail) s1 = _mm512_add_ps(s1, exp_at(whole, tail));
    };
    if (fold) exp_pass.template operator()<true>();
    else exp_pass.template operator()<false>();
    const float s = _mm512_cvtss_f32(all_lanes<false>(_mm512_add_ps(s0, s1)));
    // Streaming stores (whole vectors of a 32-byte aligned row) for outputs larger
    // than the caches, as row_f32 does.
    const bool stream = opt.stream && reinterpret_cast<uintptr_t>(yr) % 32 == 0;
    const auto put = [&](int64_t at, __mmask16 k, __m512 v) {
      if (stream && k == all) _mm256_stream_si256(reinterpret_cast<__m256i*>(yr + at), Codec::narrow(v));
      else _mm256_mask_storeu_epi16(yr + at, k, Codec::narrow(v));
    };
    if (log) {
      // (x - m) - log sum, x - m exact near the max (see scale_shift in
      // softmax_row_impl.h).
      const __m512 ls = _mm512_set1_ps(std::log(s) - d * 0.693147180559945309f);
      const auto out = [&](__m512 v) { return _mm512_sub_ps(_mm512_sub_ps(v, mb), ls); };
      for (i = 0; i < whole; i += 16) put(i, all, out(Codec::widen(xr + i, all)));
      if (tail) put(whole, tail, out(Codec::widen(xr + whole, tail)));
    } else {
      const __m512 inv = _mm512_set1_ps(1.0f / s);
      for (i = 0; i < whole; i += 16) put(i, all, _mm512_mul_ps(_mm512_loadu_ps(stage + i), inv));
      if (tail) put(whole, tail, _mm512_mul_ps(_mm512_loadu_ps(stage + whole), inv));
    }
  }
  if (opt.stream) _mm_sfence();  // the streamed stores are visible before the caller goes on
}

// The shift a column's exp uses: its max, or 0 while the max is -inf.
inline __m512 cols_shift_of(__m512 m) {
  return _mm512_mask_mov_ps(m, _mm512_cmpeq_ps_mask(m, _mm512_set1_ps(-std::numeric_limits<float>::infinity())),
                            _mm512_setzero_ps());
}

// One stripe's geometry and output mode, the same for every block of a
// softmax_cols_once call.
struct ColsGeometry {
  int64_t dim, inner, chunk;
  int nv;            // vectors per row of the stripe
  __mmask16 last;    // the lanes of its last vector
  bool log, stream;  // stream: y's vectors are 64-byte aligned and outputs large
};

// The block before the current one, whose outputs the current block's first pass
// writes (see softmax_cols_once): its x (read by log_softmax) and y, and per vector
// of the stripe the factor for the current chunk (softmax) or the log sum
// (log_softmax) in k, the shift in sh.
struct ColsPrev {
  const float* x = nullptr;
  float* y = nullptr;
  const __m512* k = nullptr;
  const __m512* sh = nullptr;
};

// How the first pass writes the previous block's outputs: whole vectors of a
// softmax streamed (the common case, without per-vector tests), or any case
// (log_softmax, masked last vectors, plain stores; none for the first block, whose
// ColsPrev has no y).
enum class PrevOut { kStreamed, kAny };

// One value vector of an output: e * k (softmax) or (x - sh) - k (log_softmax; x -
// sh is exact near the max, see scale_shift in softmax_row_impl.h), streamed where
// `stream` and the vector is whole.
inline void cols_put(float* y, const float* x, const float* e, __mmask16 mk, __m512 k, __m512 sh, bool log,
                     bool stream) {
  const __m512 o = log ? _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x), sh), k)
                       : _mm512_mul_ps(_mm512_load_ps(e), k);
  if (stream && mk == 0xffff) _mm512_stream_ps(y, o);
  else _mm512_mask_storeu_ps(y, mk, o);
}

// The first pass of softmax_cols_once over one chunk of rows [d0, d1) and G of the
// stripe's vectors from v0: their max over the chunk, then exp(x - shift) stored in
// e with the running sums. The running max and sum of each vector live in m and s
// (16 floats per vector) between groups; within a group they stay in registers,
// where a loop over all of a 256-wide stripe's 16 vectors kept them on the stack
// (three arrays of 16 vectors): one thread repeating a [1, 1024, 256] softmax took
// 15.6-17.2 cycles per 16 values that way, 14.1-15.8 this way. Where there is a
// previous block (prev.y), each value's exp is preceded by its output at the same
// place, from the exp value it left there in e (softmax) or from its x
// (log_softmax). `next` is the x of the block after this one (or nullptr), for the
// prefetches of its first chunk.
template <int G, PrevOut kOut>
void cols_once_group(const float* x, const float* next, const ColsGeometry& g, int64_t d0, int64_t d1, int v0,
                     float* m, float* s, float* shift, float* e, const ColsPrev& prev) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t inner = g.inner, dim = g.dim, chunk = g.chunk;
  const int nv = g.nv;
  __m512 cm[G], old[G], sum[G], pk[G], psh[G];
  __mmask16 k[G];
  for (int i = 0; i < G; ++i) {
    k[i] = v0 + i + 1 == nv ? g.last : __mmask16(0xffff);
    old[i] = cm[i] = _mm512_load_ps(m + 16 * (v0 + i));
    sum[i] = _mm512_load_ps(s + 16 * (v0 + i));
    pk[i] = psh[i] = _mm512_setzero_ps();
    if (prev.y) {
      pk[i] = prev.k[v0 + i];
      psh[i] = g.log ? prev.sh[v0 + i] : pk[i];
    }
  }
  for (int64_t d = d0; d < d1; ++d)
    for (int i = 0; i < G; ++i)
      cm[i] = _mm512_max_ps(cm[i], _mm512_mask_loadu_ps(neg_inf, k[i], x + d * inner + 16 * (v0 + i)));
  for (int i = 0; i < G; ++i) {
    // NaN in the new max makes the factor NaN, and the sum with it.
    sum[i] = _mm512_mul_ps(sum[i], exp16(_mm512_sub_ps(cols_shift_of(old[i]), cols_shift_of(cm[i]))));
    _mm512_store_ps(m + 16 * (v0 + i), cm[i]);
    cm[i] = cols_shift_of(cm[i]);
    _mm512_store_ps(shift + 16 * (v0 + i), cm[i]);
  }
  // While exp runs (compute-bound), the next chunk's lines (the next block's first
  // chunk after the last) are prefetched, one per vector, so its max pass reads
  // from cache instead of waiting on memory.
  for (int64_t d = d0; d < d1; ++d)
    for (int i = 0; i < G; ++i) {
      const int64_t at = d * inner + 16 * (v0 + i);
      if (d + chunk < dim) __builtin_prefetch(x + at + chunk * inner);
      else if (next) __builtin_prefetch(next + at + (chunk - dim) * inner);
      float* ev_at = e + (d * nv + v0 + i) * 16;
      if constexpr (kOut == PrevOut::kStreamed)
        _mm512_stream_ps(prev.y + at, _mm512_mul_ps(_mm512_load_ps(ev_at), pk[i]));
      else if (prev.y)
        cols_put(prev.y + at, prev.x + at, ev_at, k[i], pk[i], psh[i], g.log, g.stream);
      const __m512 ev = _mm512_maskz_mov_ps(k[i], exp16_table(_mm512_sub_ps(_mm512_maskz_loadu_ps(k[i], x + at), cm[i])));
      if (!g.log) _mm512_store_ps(ev_at, ev);
      sum[i] = _mm512_add_ps(sum[i], ev);
    }
  for (int i = 0; i < G; ++i) _mm512_store_ps(s + 16 * (v0 + i), sum[i]);
}

// Calls body.template operator()<G>(v0) for the stripe's nv vectors in groups of G
// = 4 from v0 = 0, then the last 0 to 3 vectors one at a time (G = 1): each pass of
// softmax_cols_once keeps a group's state in registers. (Groups of 3 and 2 took
// their own copies of each pass, about 5 KB, for stripes narrower than 64 columns
// or not a multiple of 64 wide.)
template <class Body>
void for_groups(int nv, Body&& body) {
  int v0 = 0;
  for (; v0 + 4 <= nv; v0 += 4) body.template operator()<4>(v0);
  for (; v0 < nv; ++v0) body.template operator()<1>(v0);
}

// The last block's outputs over one chunk of rows [d0, d1) and G of the stripe's
// vectors from v0 (see cols_put; k and sh as in ColsPrev). Going down the chunk G
// vectors at a time, as the first pass does, instead of writing whole rows one
// after another (a loop over all nv vectors of each row), raised the rate of the
// output pass by a fifth when it ran for every block: [64, 1024, 256] through the
// library, 2 threads, 43.5-44.7 GB/s against 36.6-38.0 in turn. In a harness, a
// whole-row loop unrolled for 16 vectors got about half of that gain, and 1, 2 or 8
// vectors at a time the same as 4.
template <int G>
void cols_once_out(const float* x, float* y, const float* e, const ColsGeometry& g, int64_t d0, int64_t d1, int v0,
                   const __m512* k, const __m512* sh) {
  for (int64_t d = d0; d < d1; ++d)
    for (int i = 0; i < G; ++i) {
      const int v = v0 + i;
      const int64_t at = d * g.inner + 16 * v;
      cols_put(y + at, x + at, e + (d * g.nv + v) * 16, v + 1 == g.nv ? g.last : __mmask16(0xffff), k[v],
               g.log ? sh[v] : k[v], g.log, g.stream);
    }
}

// Softmax down the columns of `blocks` stripes, `stride` floats apart (ColsOnceFn
// in softmax_row.h). The portable cols_f32 makes three passes over each: the max
// (x from memory), exp into y with the sum (x again, and y's lines read from
// memory before they are written), y scaled in place. Here a block's first pass
// reads x once, a chunk of rows at a time: the chunk's max (from memory), then its
// exp from L1 into the scratch stripe, shifted by the running max, which the
// running sum follows (rescaled by e^(old - new) when the max grows); it goes
// through the stripe four vectors at a time (cols_once_group). Its output pass
// scales each chunk's stored exp values by e^(its shift - final max) / sum and
// writes y once, with streaming stores for large outputs; log_softmax writes (x -
// max) - log sum instead and stores no exp values. One exp per value; memory sees x
// read once and y written once.
//
// The output pass of block b runs inside block b + 1's first pass: each value's exp
// is preceded by the previous block's output at the same place, read from the exp
// value stored there just before it is overwritten (one scratch stripe serves both
// blocks). Run one after the other, the first pass only read memory and the output
// pass only wrote it, and the output pass waited on its stores: [64, 1024, 256], 2
// threads, 46-55 GB/s, of which the output passes took 40% of the time. A column
// with a NaN gives NaN; an all -inf column 0/0 = NaN, as elsewhere.
void softmax_cols_once(const float* x, float* y, int64_t dim, int64_t inner, int64_t w, int64_t blocks,
                       int64_t stride, bool log, bool stream, float* scratch) {
  ColsGeometry g;
  g.dim = dim;
  g.inner = inner;
  g.nv = static_cast<int>((w + 15) / 16);
  g.last = static_cast<__mmask16>(w % 16 ? (1u << (w % 16)) - 1 : 0xffff);
  g.chunk = cols_once_chunk(w);
  g.log = log;
  g.stream = stream && reinterpret_cast<uintptr_t>(y) % 64 == 0 && inner % 16 == 0 && stride % 16 == 0;
  const int nv = g.nv;
  // e: dim rows of nv vectors, placed so that its rows start 8 lines (512 bytes)
  // past x's in the L1's cycle of 64 sets. A group's x lines (4 a row, rows 1 KiB
  // apart for a 256-wide stripe) use 16 of the 64 sets; e's, where they started at
  // the same offset, used the same 16, and with the next chunk's prefetched lines
  // overflowed their 12 ways. [64, 1024, 256], 2 threads, medians of 6 runs in
  // turn: 67.0 GB/s against 61.1 with e where the scratch began. (Placed for the
  // first block's x: blocks a stride apart that is not a multiple of 1 KiB fall
  // elsewhere in the cycle.)
  const uintptr_t x_line = reinterpret_cast<uintptr_t>(x) / 64 % 16, s_line = reinterpret_cast<uintptr_t>(scratch) / 64 % 16;
  float* e = scratch + (x_line + 8 + 16 - s_line) % 16 * 16;
  float* chunk_shift = e + dim * 16 * nv;  // one row of nv vectors per chunk
  alignas(64) float mrow[16 * 16], srow[16 * 16];  // running max and sum, nv vectors
  // The finished block's shift and 1/sum (softmax) or log sum (log_softmax), and
  // for softmax its factors for the chunk being written.
  __m512 pm[16], ps[16], f[16];
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * stride;
    const float* next = b + 1 < blocks ? xb + stride : nullptr;
    std::fill(mrow, mrow + 16 * nv, -std::numeric_limits<float>::infinity());
    std::fill(srow, srow + 16 * nv, 0.0f);
    for (int64_t d0 = 0, c = 0; d0 < dim; d0 += g.chunk, ++c) {
      const int64_t d1 = std::min(dim, d0 + g.chunk);
      float* shift = chunk_shift + c * nv * 16;
      ColsPrev prev;
      if (b > 0) {
        if (!log)  // read before this block's pass overwrites the chunk's shift
          for (int v = 0; v < nv; ++v) f[v] = _mm512_mul_ps(exp16(_mm512_sub_ps(_mm512_load_ps(shift + 16 * v), pm[v])), ps[v]);
        prev.x = xb - stride;
        prev.y = y + (b - 1) * stride;
        prev.k = log ? ps : f;
        prev.sh = pm;
      }
      for_groups(nv, [&]<int G>(int v0) {
        const bool whole = v0 + G < nv || g.last == 0xffff;
        if (b > 0 && !log && g.stream && whole)
          cols_once_group<G, PrevOut::kStreamed>(xb, next, g, d0, d1, v0, mrow, srow, shift, e, prev);
        else cols_once_group<G, PrevOut::kAny>(xb, next, g, d0, d1, v0, mrow, srow, shift, e, prev);
      });
    }
    // pm: the final shift; ps: 1/sum (softmax) or log sum (log_softmax).
    for (int v = 0; v < nv; ++v) {
      pm[v] = cols_shift_of(_mm512_load_ps(mrow + 16 * v));
      if (log) {
        alignas(64) float ls[16];
        _mm512_store_ps(ls, _mm512_load_ps(srow + 16 * v));
        for (float& l : ls) l = std::log(l);
        ps[v] = _mm512_load_ps(ls);
      } else {
        ps[v] = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_load_ps(srow + 16 * v));
      }
    }
  }
  // The last block's outputs, on their own.
  if (blocks > 0) {
    const float* xl = x + (blocks - 1) * stride;
    float* yl = y + (blocks - 1) * stride;
    for (int64_t d0 = 0, c = 0; d0 < dim; d0 += g.chunk, ++c) {
      const int64_t d1 = std::min(dim, d0 + g.chunk);
      if (!log)
        for (int v = 0; v < nv; ++v) {
          const __m512 back = _mm512_sub_ps(_mm512_load_ps(chunk_shift + (c * nv + v) * 16), pm[v]);
          f[v] = _mm512_mul_ps(exp16(back), ps[v]);  // back <= 0, or NaN
        }
      for_groups(nv, [&]<int G>(int v0) { cols_once_out<G>(xl, yl, e, g, d0, d1, v0, log ? ps : f, pm); });
    }
  }
  if (g.stream) _mm_sfence();
}

constexpr SoftmaxRowKernels kSet = {"avx512",
                                    softmax_row_f32<ExpTable, 64>,
                                    softmax_rows_avx512,
                                    softmax_cols_f32<ExpTable>,
                                    softmax_row_half<F16Codec>,
                                    softmax_row_half<BF16Codec>,
                                    softmax_cols_once};
}  // namespace
}  // namespace ember::cpu::softmax_detail
EMBER_ISA_END

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx512() { return &kSet; }
}  // namespace ember::cpu::softmax_detail

#else

namespace ember::cpu::softmax_detail {
const SoftmaxRowKernels* softmax_row_kernels_avx512() { return nullptr; }
}  // namespace ember::cpu::softmax_detail

#endif
