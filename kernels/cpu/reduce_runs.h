// The loops the CPU reductions run over one run of values (a stretch of the
// innermost reduced dim): a sum, the moments var needs (count, mean, sum of squared
// deviations) in one pass, and the first extreme with its position. reduce.cpp
// decides which runs each output visits; these decide how fast one run goes. The
// baseline loops work on blocks small enough to stay in L1, so a second look at a
// block is free and memory is read once; the AVX-512 extreme scan (extreme.h) reads
// 64K-value blocks once instead. Internal to reduce.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/base/scalar.h"
#include "kernels/cpu/extreme.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/cpu/moments.h"

namespace ember::cpu::reduce_detail {

template <class T>
using sum_acc_t = std::conditional_t<is_floating_v<T>, double, int64_t>;

// The type a block of T is computed in: float for float32 and the half types (so
// loops vectorize), double for float64 (and for integers, which only var's generic
// code instantiates).
template <class T>
using block_t = std::conditional_t<std::is_same_v<acc_t<T>, float>, float, double>;

// The lane loops below keep K independent 16-byte vectors of A (GCC/Clang vector
// extensions: 4 floats or 2 doubles each, what this baseline-compiled file's SSE2
// has), so each loop is K short dependency chains that vectorize for certain: the
// auto-vectorizer leaves selects over plain lane arrays scalar.
template <class A>
struct VecOf {
  typedef A type __attribute__((vector_size(16)));
};
template <class A>
using Vec = typename VecOf<A>::type;
template <class A>
inline constexpr int kLanes = static_cast<int>(16 / sizeof(A));
inline constexpr int K = 4;

template <class A>
inline Vec<A> load_vec(const A* p) {
  Vec<A> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Sum of n contiguous values: 16 independent lanes keep the loop vectorizable
// without reassociating one long chain; each 2048-element block is added in double.
template <class T>
sum_acc_t<T> sum_contiguous(const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    double total = 0;
    int64_t i = 0;
    for (; i + 2048 <= n; i += 2048) {
      float lane[16] = {};
      for (int64_t j = 0; j < 2048; j += 16)
        for (int l = 0; l < 16; ++l) lane[l] += p[i + j + l];
      float s = 0;
      for (int l = 0; l < 16; ++l) s += lane[l];
      total += s;
    }
    // The rest (a whole row under 2048 values, like a 14x14 plane's) in double
    // lanes: the instruction set's (moments.h; the mean of 64 planes of 14x14, one
    // thread, 3.4 -> 1.55 us), else 16 of the baseline's, so that the adds do not
    // each wait on the one before (one chain took about 0.1 us per 196 values).
    if (i < n)
      if (const moments_detail::MomentsKernels* k = moments_kernels(); k && k->sum_f32_wide)
        return total + k->sum_f32_wide(p + i, n - i);
    double lane[16] = {};
    for (; i + 16 <= n; i += 16)
      for (int l = 0; l < 16; ++l) lane[l] += p[i + l];
    for (int l = 0; i < n; ++i, ++l) lane[l] += p[i];
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    return total + lane[0];
  } else if constexpr (is_half_v<T>) {
    // Added into kHalfBlock float lanes, a block at a time (add_to_float: the
    // widening and the add in one vector pass), kFlush blocks before the lanes are
    // summed, 16 at a time, into the double total: each lane adds at most kFlush
    // values in float.
    constexpr int64_t kFlush = 16;
    double total = 0;
    float acc[kHalfBlock];
    for (int64_t i = 0; i < n;) {
      std::fill(acc, acc + kHalfBlock, 0.0f);
      const int64_t end = std::min(n, i + kFlush * kHalfBlock);
      for (; i < end; i += kHalfBlock) add_to_float(p + i, acc, std::min(kHalfBlock, end - i));
      float lane[16] = {};
      for (int64_t j = 0; j < kHalfBlock; j += 16)
        for (int l = 0; l < 16; ++l) lane[l] += acc[j + l];
      float s = 0;
      for (int l = 0; l < 16; ++l) s += lane[l];
      total += s;
    }
    return total;
  } else {
    sum_acc_t<T> total = 0;
    for (int64_t i = 0; i < n; ++i) total += static_cast<sum_acc_t<T>>(static_cast<acc_t<T>>(p[i]));
    return total;
  }
}

// Copies n values at p[j * stride] into buf in the compute type A (the half types
// with the vector conversions when contiguous).
template <class T, class A>
void gather_block(const T* p, int64_t stride, int64_t n, A* buf) {
  if constexpr (is_half_v<T> && std::is_same_v<A, float>) {
    if (stride == 1) return load_to_float(p, buf, n);
  }
  for (int64_t j = 0; j < n; ++j) buf[j] = static_cast<A>(static_cast<acc_t<T>>(p[j * stride]));
}

// ---- var: count, mean and M2 = sum (x - mean)^2 in one pass --------------------

struct Moments {
  int64_t n = 0;
  double mean = 0;
  double m2 = 0;

  // Chan et al.'s pairwise update: the moments of this set followed by `o`. NaN
  // (or an infinity, whose deviation is inf - inf) in either side makes both NaN.
  // Two finite means of opposite signs near the largest double (1e308 and -1e308)
  // differ by more than it: delta is inf, where mean + delta * (nb / nt) would make
  // the mean inf (and the next merge NaN). Then the mean is the weighted sum of the
  // two, which stays finite, and m2 is inf, as the variance is.
  void merge(const Moments& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const double na = static_cast<double>(n), nb = static_cast<double>(o.n), nt = na + nb;
    const double delta = o.mean - mean;
    if (std::isinf(delta) && std::isfinite(mean) && std::isfinite(o.mean)) {
      mean = mean * (na / nt) + o.mean * (nb / nt);
      m2 = std::numeric_limits<double>::infinity();
    } else {
      mean += delta * (nb / nt);
      m2 += o.m2 + delta * delta * (na * nb / nt);
    }
    n += o.n;
  }
};

// var's two looks at a block in the baseline's lanes (moments.h has them per
// instruction set for float32): the block's sum, and its sum of (x - c)^2 while the
// block after it is prefetched (prefetches never fault, so reading past the run's
// end is harmless). Lane sums are added in double.
template <class A>
double sum_lanes(const A* x, int64_t n) {
  constexpr int L = kLanes<A>, KL = K * L;
  Vec<A> acc[K] = {};
  int64_t j = 0;
  for (; j + KL <= n; j += KL)
    for (int k = 0; k < K; ++k) acc[k] += load_vec(x + j + k * L);
  double s = 0;
  for (; j < n; ++j) s += static_cast<double>(x[j]);
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < L; ++l) s += static_cast<double>(acc[k][l]);
  return s;
}

template <class A>
double sq_dev_lanes(const A* x, int64_t n, A c) {
  constexpr int L = kLanes<A>, KL = K * L;
  Vec<A> sq[K] = {};
  int64_t j = 0;
  for (; j + KL <= n; j += KL) {
    __builtin_prefetch(x + n + j);
    for (int k = 0; k < K; ++k) {
      const Vec<A> d = load_vec(x + j + k * L) - c;
      sq[k] += d * d;
    }
  }
  double s2 = 0;
  for (; j < n; ++j) {
    const double d = static_cast<double>(x[j] - c);
    s2 += d * d;
  }
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < L; ++l) s2 += static_cast<double>(sq[k][l]);
  return s2;
}

// The moments of one block in cache: a first look sums it (from memory), a second
// (from L1) sums d^2 with d = x - c, c the block's mean rounded to A. Shifting by
// the block's own mean keeps d small, so nothing cancels (the textbook one-pass
// sum x^2 - (sum x)^2 / n would lose every digit for data far from zero); the
// n (mean - c)^2 term corrects for c's rounding. The second look prefetches the
// next block, so memory keeps streaming. A is float or double; float32 blocks take
// the instruction set's looks (moments.h) where it has them.
template <class A>
Moments block_moments(const A* x, int64_t n) {
  double (*sum)(const A*, int64_t) = sum_lanes<A>;
  double (*sq_dev)(const A*, int64_t, A) = sq_dev_lanes<A>;
  if constexpr (std::is_same_v<A, float>) {
    if (const moments_detail::MomentsKernels* k = moments_kernels()) sum = k->sum_f32, sq_dev = k->sq_dev_f32;
  }
  const double nd = static_cast<double>(n), mean = sum(x, n) / nd;
  const A c = static_cast<A>(mean);
  const double s2 = sq_dev(x, n, c);
  const double shift = mean - static_cast<double>(c);
  const double m2 = s2 - nd * shift * shift;
  // m2 is >= 0 up to rounding; keep NaN (a comparison with NaN is false).
  return Moments{n, mean, m2 < 0 ? 0.0 : m2};
}

// The moments of n values at p[j * stride], block by block: contiguous float32 and
// float64 in place, anything else copied a block at a time into the compute type.
template <class T>
Moments run_moments(const T* p, int64_t stride, int64_t n) {
  using A = block_t<T>;
  constexpr int64_t kBlock = 2048;  // 8 KiB of float32: stays in L1 for the second look
  Moments m;
  if constexpr (std::is_same_v<T, A>) {
    if (stride == 1) {
      for (int64_t i = 0; i < n; i += kBlock) m.merge(block_moments(p + i, std::min(kBlock, n - i)));
      return m;
    }
  }
  A buf[kHalfBlock];
  for (int64_t i = 0; i < n; i += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i);
    gather_block(p + i * stride, stride, len, buf);
    m.merge(block_moments(buf, len));
  }
  return m;
}

// ---- max/min with the position of the first extreme ---------------------------

template <class A>
struct Extreme {
  A value;
  int64_t pos;  // -1: nothing seen yet
};

// Whether v replaces `best` (seen earlier) as the running max (kMax) or min: NaN
// beats every number and the first NaN stays; on ties the earlier position stays.
template <bool kMax, class A>
inline bool beats(A v, A best) {
  if (best != best) return false;
  return v != v || (kMax ? v > best : v < best);
}

// The first extreme of one block x[0, n) in cache, folded into `e` (positions from
// pos0). For floating A the block's extreme is found in vector lanes of plain
// compare-and-select (a NaN never wins a select, so a mask remembers any NaN seen).
// Lane i only ever holds values from positions i, i + KL, i + 2 KL, ... (it starts
// from the first KL values), so when the block beats `e`, its first extreme is found
// by walking only the positions of the lanes that hold it: n / KL reads, not n.
template <bool kMax, class A>
void block_extreme(const A* x, int64_t n, int64_t pos0, Extreme<A>& e) {
  if constexpr (!std::is_floating_point_v<A>) {  // integers and bool: one compare each
    for (int64_t j = 0; j < n; ++j)
      if (e.pos < 0 || beats<kMax>(x[j], e.value)) e = {x[j], pos0 + j};
    return;
  } else {
    if constexpr (std::is_same_v<A, float>) {
      // The active instruction set's 16-lane scan (extreme.h), where it has one: the
      // block's first extreme and its position in one read, from memory.
      if (const extreme_detail::ExtremeKernels* k = extreme_kernels()) {
        A b;
        int64_t first;
        k->extreme_pos_f32(x, n, kMax, &b, &first);
        if (e.pos >= 0 && !beats<kMax>(b, e.value)) return;
        e = {b, pos0 + first};
        return;
      }
    }
    constexpr int L = kLanes<A>, KL = K * L;
    const int64_t vec_end = n - n % KL;  // [0, vec_end) in lanes, the rest one by one
    A b = x[0];
    bool any_nan = x[0] != x[0];
    Vec<A> lane[K];
    decltype(lane[0] != lane[0]) nan[K] = {};
    if (vec_end > 0) {
      for (int k = 0; k < K; ++k) lane[k] = load_vec(x + k * L);
      for (int64_t j = 0; j < vec_end; j += KL)
        for (int k = 0; k < K; ++k) {
          const Vec<A> v = load_vec(x + j + k * L);
          if constexpr (kMax) lane[k] = v > lane[k] ? v : lane[k];
          else lane[k] = v < lane[k] ? v : lane[k];
          nan[k] |= v != v;
        }
      for (int k = 0; k < K; ++k)
        for (int l = 0; l < L; ++l) {
          b = (kMax ? lane[k][l] > b : lane[k][l] < b) ? lane[k][l] : b;
          any_nan = any_nan || nan[k][l] != 0;
        }
    }
    for (int64_t j = vec_end; j < n; ++j) {
      b = (kMax ? x[j] > b : x[j] < b) ? x[j] : b;
      any_nan = any_nan || x[j] != x[j];
    }
    if (!any_nan && e.pos >= 0 && !beats<kMax>(b, e.value)) return;
    int64_t first = 0;
    if (any_nan) {  // rare: the first NaN, one by one
      while (x[first] == x[first]) ++first;
    } else {
      first = n;
      if (vec_end > 0)
        for (int k = 0; k < K; ++k)
          for (int l = 0; l < L; ++l) {
            if (lane[k][l] != b) continue;
            for (int64_t j = k * L + l; j < std::min(first, vec_end); j += KL)
              if (x[j] == b) {
                first = j;
                break;
              }
          }
      for (int64_t j = vec_end; first == n; ++j)
        if (x[j] == b) first = j;
    }
    e.value = x[first];
    e.pos = pos0 + first;
  }
}

// The first extreme of n values at p[j * stride] (n >= 1), folded into `e` with
// positions from pos0.
template <bool kMax, class T>
void run_extreme(const T* p, int64_t stride, int64_t n, int64_t pos0, Extreme<acc_t<T>>& e) {
  using A = acc_t<T>;
  if constexpr (std::is_same_v<T, A>) {
    if (stride == 1) {
      // Blocks of 1024 stay in L1 for the baseline's second look at a block that
      // beats `e`; extreme.h's scan reads a block once, so it takes 64K values a call
      // (a call and a branch on the data per block, and a NaN found by the block).
      constexpr int64_t kScanBlock = int64_t(1) << 16;
      static_assert(kScanBlock <= extreme_detail::kMaxScan);
      int64_t block = 1024;
      if constexpr (std::is_same_v<A, float>)
        if (extreme_kernels()) block = kScanBlock;
      for (int64_t i = 0; i < n && !(e.pos >= 0 && e.value != e.value); i += block)
        block_extreme<kMax>(p + i, std::min(block, n - i), pos0 + i, e);
      return;
    }
  }
  A buf[kHalfBlock];
  for (int64_t i = 0; i < n && !(e.pos >= 0 && e.value != e.value); i += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i);
    gather_block(p + i * stride, stride, len, buf);
    block_extreme<kMax>(buf, len, pos0 + i, e);
  }
}

}  // namespace ember::cpu::reduce_detail
