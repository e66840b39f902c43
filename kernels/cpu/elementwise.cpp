// CPU elementwise kernels. Each body gets runs along the innermost dimension and
// picks a contiguous loop (which the compiler vectorizes) when every stride is the
// element size, a broadcast-scalar loop when one input has stride 0, and a plain
// strided loop otherwise. Half types load to float, compute, and round on store.
// float32 and half exp, erf, tanh, sigmoid and gelu, contiguous or strided, go to
// the per-instruction-set kernels of vmath.h instead of the functor loop.
#include "kernels/cpu/elementwise.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "kernels/base/dispatch.h"
#include "kernels/base/error.h"
#include "kernels/base/parallel.h"
#include "kernels/base/philox.h"
#include "kernels/base/functors.h"
#include "kernels/cpu/half_vec.h"
#include "kernels/cpu/loop.h"
#include "kernels/cpu/transpose.h"
#include "kernels/cpu/vmath.h"

namespace ember::cpu {
namespace {

// Contiguous half-precision runs: blocks are widened to float32 with the vector
// conversions, computed by the same functor as float32 (so the loop vectorizes),
// and narrowed on store. Scalar conversions would cost more than the op itself.
template <class T, class F>
void unary_half_run(T* out, const T* in, int64_t n, F f) {
  float x[kHalfBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i0);
    load_to_float(in + i0, x, len);
    for (int64_t i = 0; i < len; ++i) x[i] = f(x[i]);
    store_from_float(x, out + i0, len);
  }
}

// The same with a whole-block float32 kernel (vmath.h) in place of the functor.
template <class T>
void unary_half_run(T* out, const T* in, int64_t n, vmath_detail::UnaryF32 vec) {
  float x[kHalfBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i0);
    load_to_float(in + i0, x, len);
    vec(x, x, len);
    store_from_float(x, out + i0, len);
  }
}

// a_step / b_step are 1 for a run and 0 for a broadcast scalar.
template <class T, class Out, class F>
void binary_half_run(Out* out, const T* a, int64_t a_step, const T* b, int64_t b_step, int64_t n, F f) {
  float x[kHalfBlock], y[kHalfBlock];
  const float av = static_cast<float>(a[0]), bv = static_cast<float>(b[0]);
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i0);
    if (a_step) load_to_float(a + i0, x, len);
    else std::fill(x, x + len, av);
    if (b_step) load_to_float(b + i0, y, len);
    else std::fill(y, y + len, bv);
    if constexpr (std::is_same_v<Out, bool>) {
      for (int64_t i = 0; i < len; ++i) out[i0 + i] = f(x[i], y[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) x[i] = f(x[i], y[i]);
      store_from_float(x, out + i0, len);
    }
  }
}

// ReLU of a contiguous half run on its 16-bit patterns, 32 to a vector: a negative
// value that is not a NaN (-0 too) becomes +0, anything else is kept, as the relu
// functor does. Widening to float32 and back cost more than the op (the float16
// run went at 0.41-0.57 of the copy floor); this one is a compare and a select.
template <class T>
void relu_half_bits(T* out, const T* in, int64_t n) {
  constexpr uint16_t kInf = std::is_same_v<T, Half> ? 0x7c00 : 0x7f80;  // +inf's bits
  const auto* x = reinterpret_cast<const uint16_t*>(in);
  auto* y = reinterpret_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = x[i];
    y[i] = static_cast<uint16_t>(b - 0x8000u) <= kInf ? uint16_t{0} : b;  // sign set, |x| <= inf
  }
}

// The ops whose float32 math is a vmath.h kernel (vmath_for never returns nullptr
// for them). Their float32 and half runs, strided ones too, all go through that
// kernel, so an op gives the same value whatever the layout, and the functor's
// vectorized inline copy (5-20 KB per op and dtype) is not compiled for them.
template <class F>
constexpr bool kVmathOp = std::is_same_v<F, functors::exp> || std::is_same_v<F, functors::erf> ||
                          std::is_same_v<F, functors::tanh> || std::is_same_v<F, functors::sigmoid> ||
                          std::is_same_v<F, functors::gelu>;

// A strided run of a float32 or half type through a whole-block float32 kernel:
// gathered into a float block, computed in place, scattered back. out may be in
// (an in-place op): each block is read before it is written.
template <class T>
void unary_strided_run(char* out, int64_t so, const char* in, int64_t si, int64_t n, vmath_detail::UnaryF32 vec) {
  float x[kHalfBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t len = std::min(kHalfBlock, n - i0);
    for (int64_t i = 0; i < len; ++i) x[i] = static_cast<float>(*reinterpret_cast<const T*>(in + (i0 + i) * si));
    vec(x, x, len);
    for (int64_t i = 0; i < len; ++i) *reinterpret_cast<T*>(out + (i0 + i) * so) = static_cast<T>(x[i]);
  }
}

// `vec` is the op's float32 kernel (vmath.h) for the kVmathOp ops, else nullptr;
// `bits` its one-pass kernel for contiguous half runs where the table has one.
template <class T, class F>
void unary_loop(const StridedLoop& L, F f, vmath_detail::UnaryF32 vec = nullptr,
                vmath_detail::UnaryHalfBits bits = nullptr) {
  using A = acc_t<T>;
  strided_for<2>(L, [&](char* const* p, const int64_t* s, int64_t n) {
    T* out = reinterpret_cast<T*>(p[0]);
    const T* in = reinterpret_cast<const T*>(p[1]);
    const bool contiguous = s[0] == sizeof(T) && s[1] == sizeof(T);
    if constexpr (kVmathOp<F> && (is_half_v<T> || std::is_same_v<T, float>)) {
      if (!contiguous) return unary_strided_run<T>(p[0], s[0], p[1], s[1], n, vec);
      if constexpr (is_half_v<T>) {
        if (bits) return bits(reinterpret_cast<const uint16_t*>(in), reinterpret_cast<uint16_t*>(out), n);
        return unary_half_run(out, in, n, vec);
      } else {
        return vec(in, out, n);
      }
    } else {
      if constexpr (is_half_v<T>) {
        if (contiguous) {
          if constexpr (std::is_same_v<F, functors::relu>) return relu_half_bits(out, in, n);
          return unary_half_run(out, in, n, f);
        }
      }
      // (Contiguous half runs never get here: a loop of scalar half conversions,
      // vectorized, is a large piece of code per op for a case the blocks above cover.)
      if (!is_half_v<T> && contiguous) {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<A>(in[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T x = *reinterpret_cast<const T*>(p[1] + i * s[1]);
          *reinterpret_cast<T*>(p[0] + i * s[0]) = static_cast<T>(f(static_cast<A>(x)));
        }
      }
    }
  });
}

// The binary ops with a one-pass half loop (half_arith of half_vec.h).
template <class F>
constexpr std::optional<HalfArithOp> kHalfArith =
    std::is_same_v<F, functors::add>   ? std::optional(HalfArithOp::add)
    : std::is_same_v<F, functors::sub> ? std::optional(HalfArithOp::sub)
    : std::is_same_v<F, functors::mul> ? std::optional(HalfArithOp::mul)
    : std::is_same_v<F, functors::div> ? std::optional(HalfArithOp::div)
                                       : std::nullopt;

// Whether a op b == b op a for every a and b of T, bits included: integer and bool
// add, mul, max, min, == and != (for floating types NaN's payload may depend on the
// order).
template <class T, class F>
inline constexpr bool kCommutesExactly =
    std::is_integral_v<T> && (std::is_same_v<F, functors::add> || std::is_same_v<F, functors::mul> ||
                              std::is_same_v<F, functors::maximum> || std::is_same_v<F, functors::minimum> ||
                              std::is_same_v<F, functors::eq> || std::is_same_v<F, functors::ne>);

template <class T, class F>
void binary_loop(const StridedLoop& L, F f) {
  using A = acc_t<T>;
  using R = decltype(f(A{}, A{}));
  using Out = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  constexpr int64_t so = sizeof(Out), st = sizeof(T);
  strided_for<3>(L, [&](char* const* p, const int64_t* s, int64_t n) {
    Out* out = reinterpret_cast<Out*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    if constexpr (is_half_v<T>) {
      if (s[0] == so && (s[1] == st || s[1] == 0) && (s[2] == st || s[2] == 0) && (s[1] || s[2])) {
        if constexpr (kHalfArith<F>.has_value())
          if (half_arith(*kHalfArith<F>, a, s[1] ? 1 : 0, b, s[2] ? 1 : 0, out, n)) return;
        return binary_half_run(out, a, s[1] ? 1 : 0, b, s[2] ? 1 : 0, n, f);
      }
    }
    // The contiguous and broadcast-scalar loops are for the other dtypes only: half
    // runs took binary_half_run above (see unary_loop).
    constexpr bool kRuns = !is_half_v<T>;
    // Where op commutes exactly (integer and bool add, mul, max, min, == and !=), one
    // loop in a function of its own serves a run against b's scalar and a's scalar
    // against b's run, where each was inlined into every copy of this body: 27 KB of
    // library. Runs under 16 values take the general loop below rather than the call.
    const auto with_scalar = [f](Out* o, const T* x, A c, int64_t m) __attribute__((noinline)) {
      for (int64_t i = 0; i < m; ++i) o[i] = static_cast<Out>(f(static_cast<A>(x[i]), c));
    };
    constexpr bool kShared = kCommutesExactly<T, F>;
    const bool whole = kRuns && s[0] == so, scalar_run = whole && (!kShared || n >= 16);
    if (whole && s[1] == st && s[2] == st) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(static_cast<A>(a[i]), static_cast<A>(b[i])));
    } else if (scalar_run && s[1] == st && s[2] == 0) {
      if constexpr (kShared) {
        with_scalar(out, a, static_cast<A>(b[0]), n);
      } else {
        const A bv = static_cast<A>(b[0]);
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(static_cast<A>(a[i]), bv));
      }
    } else if (scalar_run && s[1] == 0 && s[2] == st) {
      if constexpr (kShared) {
        with_scalar(out, b, static_cast<A>(a[0]), n);
      } else {
        const A av = static_cast<A>(a[0]);
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f(av, static_cast<A>(b[i])));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const A x = static_cast<A>(*reinterpret_cast<const T*>(p[1] + i * s[1]));
        const A y = static_cast<A>(*reinterpret_cast<const T*>(p[2] + i * s[2]));
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = static_cast<Out>(f(x, y));
      }
    }
  });
}

// Conversion between any two dtypes. Going through the compute types keeps the half
// conversions in one place (half.h); bool is "nonzero" in both directions.
template <class D, class S>
inline D convert(S x) {
  if constexpr (std::is_same_v<D, bool>) {
    return static_cast<acc_t<S>>(x) != acc_t<S>(0);
  } else if constexpr (is_half_v<S> && std::is_integral_v<D>) {
    return convert<D>(static_cast<float>(x));  // saturating, like float -> int
  } else if constexpr (is_half_v<D> || is_half_v<S>) {
    return static_cast<D>(static_cast<float>(static_cast<acc_t<S>>(x)));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    // Out-of-range float -> int is undefined behaviour in C++; saturate NaN to 0 and
    // clamp, which gives a defined (and sanitizer-clean) result.
    if (std::isnan(x)) return 0;
    const double v = static_cast<double>(x);
    constexpr double lo = static_cast<double>(std::numeric_limits<D>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<D>::max());
    if (v <= lo) return std::numeric_limits<D>::lowest();
    if (v >= hi) return std::numeric_limits<D>::max();
    return static_cast<D>(x);
  } else {
    return static_cast<D>(x);
  }
}

// The offsets (in bytes) of the o-th matrix of a transposing copy: all dims but the
// last two of L, as a row-major index.
inline void matrix_offsets(const StridedLoop& L, int64_t o, int64_t& off_out, int64_t& off_in) {
  off_out = off_in = 0;
  for (int d = L.ndim - 3; d >= 0; --d) {
    const int64_t idx = o % L.sizes[d];
    o /= L.sizes[d];
    off_out += idx * L.strides[0][d];
    off_in += idx * L.strides[1][d];
  }
}

// A same-dtype transposing copy of 32-bit values (float32, int32) on the active
// instruction set's block kernel (transpose.h): its whole 16 x 16 blocks in jobs of
// 256 output columns, then the rows and columns past the last whole block in plain
// loops. false, having done nothing, when there is no kernel or fewer than 16 rows
// or columns.
template <class D, class S>
bool copy_transposed_blocks(const StridedLoop& L, int64_t outer, int64_t R, int64_t C) {
  if constexpr (!std::is_same_v<D, S> || sizeof(D) != 4) {
    return false;
  } else {
    const int nd = L.ndim;
    const int64_t os_i = L.strides[0][nd - 2], is_j = L.strides[1][nd - 1];
    const transpose_detail::Transpose32 t32 = transpose32();
    if (!t32 || R < 16 || C < 16 || os_i % 4 != 0 || is_j % 4 != 0) return false;
    const int64_t out_ld = os_i / 4, in_ld = is_j / 4, R16 = R / 16 * 16, C16 = C / 16 * 16;
    constexpr int64_t kBand = 256;
    const int64_t bands = (C16 + kBand - 1) / kBand;
    // Streaming stores (transpose.h) when the output is larger than the caches
    // (16 MiB, as for softmax) and its block rows are line-aligned.
    const bool big = L.numel * 4 >= (int64_t(16) << 20) && out_ld % 16 == 0;
    // parallel_rows over (matrix, band) pairs: below the grain no OpenMP region. The
    // body is kept out of line: inlined into both of parallel_rows' loops, for every
    // pair of dtypes, it added 58 KB to the library.
    parallel_rows(outer * bands, L.numel >= kParallelGrain, [&](int64_t ob) __attribute__((noinline)) {
      const int64_t o = ob / bands, b = ob % bands;
      int64_t off_out, off_in;
      matrix_offsets(L, o, off_out, off_in);
      const int64_t j0 = b * kBand;
      char* out = L.data[0] + off_out + j0 * 4;
      const char* in = L.data[1] + off_in + j0 * is_j;
      t32(in, in_ld, out, out_ld, R16, std::min(kBand, C16 - j0),
          big && reinterpret_cast<uintptr_t>(out) % 64 == 0);
    });
    for (int64_t o = 0; o < outer; ++o) {
      int64_t off_out, off_in;
      matrix_offsets(L, o, off_out, off_in);
      const auto at = [&](int64_t i, int64_t j) {
        *reinterpret_cast<D*>(L.data[0] + off_out + i * os_i + j * 4) =
            *reinterpret_cast<const S*>(L.data[1] + off_in + i * 4 + j * is_j);
      };
      for (int64_t i = 0; i < R16; ++i)
        for (int64_t j = C16; j < C; ++j) at(i, j);
      for (int64_t i = R16; i < R; ++i)
        for (int64_t j = 0; j < C; ++j) at(i, j);
    }
    return true;
  }
}

// A copy whose output runs along one dim while its input runs along another (a
// transpose made contiguous): walking either tensor in order reads or writes the
// other one element per cache line. 32-bit values of one dtype go to
// copy_transposed_blocks; otherwise each 32x32 tile is read row by row into a small
// buffer and written out row by row, so both sides are touched in whole cache lines.
// (Writing the tile directly, with rows 16 KiB apart, mapped all 32 output lines to
// one L1 set and ran 10x slower.)
template <class D, class S>
bool copy_transposed(const StridedLoop& L) {
  const int nd = L.ndim;
  if (nd < 2) return false;
  const int64_t os_i = L.strides[0][nd - 2], os_j = L.strides[0][nd - 1];
  const int64_t is_i = L.strides[1][nd - 2], is_j = L.strides[1][nd - 1];
  if (os_j != static_cast<int64_t>(sizeof(D)) || is_i != static_cast<int64_t>(sizeof(S)) ||
      is_j == static_cast<int64_t>(sizeof(S)))
    return false;
  constexpr int64_t T = 32;
  const int64_t R = L.sizes[nd - 2], C = L.sizes[nd - 1];
  const int64_t outer = L.numel / (R * C), tiles_r = (R + T - 1) / T, tiles_c = (C + T - 1) / T;
  if (copy_transposed_blocks<D, S>(L, outer, R, C)) return true;
  // One 32-row strip per item, out of line as in copy_transposed_blocks.
  parallel_rows(outer * tiles_r, L.numel >= kParallelGrain, [&](int64_t otr) __attribute__((noinline)) {
    const int64_t o = otr / tiles_r, tr = otr % tiles_r;
    int64_t off_out, off_in;
    matrix_offsets(L, o, off_out, off_in);
    const int64_t i0 = tr * T, i1 = std::min(R, i0 + T);
    alignas(64) D tile[T][T];  // tile[j - j0][i - i0]
    for (int64_t tc = 0; tc < tiles_c; ++tc) {
      const int64_t j0 = tc * T, j1 = std::min(C, j0 + T);
      for (int64_t j = j0; j < j1; ++j) {
        const S* in = reinterpret_cast<const S*>(L.data[1] + off_in + j * is_j) + i0;
        for (int64_t i = 0; i < i1 - i0; ++i) tile[j - j0][i] = convert<D>(in[i]);
      }
      for (int64_t i = i0; i < i1; ++i) {
        D* out = reinterpret_cast<D*>(L.data[0] + off_out + i * os_i) + j0;
        for (int64_t j = 0; j < j1 - j0; ++j) out[j] = tile[j][i - i0];
      }
    }
  });
  return true;
}

// A copy or dtype conversion moves a few bytes per element at tens of GB/s, so a
// team pays only from this many elements. Timed alone (medians on the 2-core
// machine, 1 / 2 threads, float32 -> bfloat16) a team loses up to about 256K:
// 131072 elements 6.9 / 8.2 us with the team awake (OMP_WAIT_POLICY=active), 6.8 /
// 27.0 asleep (passive); 262144: 17.1 / 13.9 and 17.0 / 34.9; 1M: 77 / 66 and 108 /
// 86. But a cast is usually read next by an op split over the same threads in the
// same halves (autocast's cast of a batch before a convolution split by images),
// and a half cast on its own core is then in that core's cache: with 64K the
// bfloat16 training step of the seed network (a 78,400-value input cast) went from
// 521-522 to 511-515 us (2 threads, libraries alternating), float32 unchanged.
constexpr int64_t kCopyGrain = 1 << 16;

// A run of a conversion to or from a half type, other than float32's own
// contiguous ones (load_to_float, store_from_float): through float32 in blocks, with
// the vector conversions of half_vec.h on the half side (a strided half side is
// gathered into, or scattered from, a small array of half values). The same values
// as convert(): every integer a half type holds finitely is exact in float32, and
// convert() passes through float32 itself. Written with convert() inline, each of
// these 26 pairs (and the strided runs of the 4 with float32) compiled into software
// conversions of its own, 72 KB of the library. in_step and out_step are in bytes.
template <class D, class S>
void convert_via_float(const char* in, int64_t in_step, char* out, int64_t out_step, int64_t n) {
  float buf[kHalfBlock];
  for (int64_t i = 0; i < n; i += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - i);
    const char* src = in + i * in_step;
    char* dst = out + i * out_step;
    if constexpr (is_half_v<S>) {
      if (in_step == sizeof(S)) {
        load_to_float(reinterpret_cast<const S*>(src), buf, m);
      } else {
        S gathered[kHalfBlock];
        for (int64_t j = 0; j < m; ++j) std::memcpy(&gathered[j], src + j * in_step, sizeof(S));
        load_to_float(gathered, buf, m);
      }
    } else {
      for (int64_t j = 0; j < m; ++j)
        buf[j] = static_cast<float>(static_cast<acc_t<S>>(*reinterpret_cast<const S*>(src + j * in_step)));
    }
    if constexpr (is_half_v<D>) {
      if (out_step == sizeof(D)) {
        store_from_float(buf, reinterpret_cast<D*>(dst), m);
      } else {
        D scattered[kHalfBlock];
        store_from_float(buf, scattered, m);
        for (int64_t j = 0; j < m; ++j) std::memcpy(dst + j * out_step, &scattered[j], sizeof(D));
      }
    } else {
      for (int64_t j = 0; j < m; ++j) *reinterpret_cast<D*>(dst + j * out_step) = convert<D>(buf[j]);
    }
  }
}

template <class D, class S>
void copy_loop(const StridedLoop& L) {
  if (copy_transposed<D, S>(L)) return;
  strided_for<2>(L, [&](char* const* p, const int64_t* s, int64_t n) {
    const bool contiguous = s[0] == sizeof(D) && s[1] == sizeof(S);
    constexpr bool kHalfPair = !std::is_same_v<D, S> && (is_half_v<D> || is_half_v<S>);
    constexpr bool kFloatPair = std::is_same_v<D, float> || std::is_same_v<S, float>;
    if constexpr (kHalfPair) {
      if (!kFloatPair || !contiguous) return convert_via_float<D, S>(p[1], s[1], p[0], s[0], n);
    }
    if (contiguous) {
      D* out = reinterpret_cast<D*>(p[0]);
      const S* in = reinterpret_cast<const S*>(p[1]);
      if constexpr (std::is_same_v<D, S>) {
        std::memcpy(out, in, n * sizeof(D));
      } else if constexpr (std::is_same_v<D, float> && is_half_v<S>) {
        load_to_float(in, out, n);
      } else if constexpr (is_half_v<D> && std::is_same_v<S, float>) {
        store_from_float(in, out, n);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = convert<D>(in[i]);
      }
    } else if constexpr (!kHalfPair) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<D*>(p[0] + i * s[0]) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
    }
  }, kCopyGrain);
}

template <class Body>
void parallel_range(int64_t n, Body&& body) {
  if (n < kParallelGrain || get_num_threads() <= 1) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(get_num_threads())
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) body(b, e);
  }
}

}  // namespace

// Each op is compiled for the dtypes its row's kind allows: `same` ops for every
// dtype but bool, `floating` ops for the floating dtypes (the front-end promotes
// other inputs to float32 first, so no kernel is needed for them).
void unary(UnaryOp op, DType dt, const StridedLoop& loop) {
  const vmath_detail::UnaryF32 vec = vmath_for(op), vec_half = vmath_half_for(op);
  dispatch(dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError(std::string("cpu::unary: ") + name_of(op) + " is not implemented for dtype bool");
    } else {
      const vmath_detail::UnaryF32 v = is_half_v<T> ? vec_half : is_floating_v<T> ? vec : nullptr;
      const vmath_detail::UnaryHalfBits bits =
          is_half_v<T> ? vmath_half_bits_for(op, std::is_same_v<T, BFloat16>) : nullptr;
      switch (op) {
#define EMBER_X(Name, name, kind, ...)                                    \
  case UnaryOp::name:                                                     \
    if constexpr (UnaryKind::kind == UnaryKind::same || is_floating_v<T>) \
      return unary_loop<T>(loop, functors::name{}, v, bits);              \
    break;
        EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
      }
      throw DTypeError(std::string("cpu::unary: ") + name_of(op) + " is not implemented for dtype " + dtype_name(dt));
    }
  });
}

// The entry points below take by-value operands (strided.h) as memory: a local copy
// of the loop points at its own values for the duration of the call.
void binary(BinaryOp op, DType dt, const StridedLoop& by_value_loop) {
  StridedLoop loop = by_value_loop;
  point_at_values(loop);
  dispatch(dt, [&]<class T>() {
    switch (op) {
#define EMBER_X(Name, name, ...) case BinaryOp::name: binary_loop<T>(loop, functors::name{}); return;
      EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
    }
  });
}

void where(DType dt, const StridedLoop& by_value_loop) {
  StridedLoop loop = by_value_loop;
  point_at_values(loop);
  dispatch(dt, [&]<class T>() {
    strided_for<4>(loop, [&](char* const* p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            *reinterpret_cast<const T*>((c ? p[2] + i * s[2] : p[3] + i * s[3]));
      }
    });
  });
}

void copy(DType dst, DType src, const StridedLoop& by_value_loop) {
  StridedLoop loop = by_value_loop;
  point_at_values(loop);
  dispatch(dst, [&]<class D>() { dispatch(src, [&]<class S>() { copy_loop<D, S>(loop); }); });
}

void fill(DType dt, void* data, int64_t numel, double fvalue, int64_t ivalue) {
  dispatch(dt, [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) v = fvalue != 0;  // any nonzero value is true
    else if constexpr (is_floating_v<T>) v = static_cast<T>(fvalue);
    else v = static_cast<T>(ivalue);
    T* p = static_cast<T*>(data);
    parallel_range(numel, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  });
}

// Random fills. Each Philox call yields four 32-bit words. float32 and the half
// types take one word per element (element i: word i % 4 of counter (offset+i)/4);
// float64 takes two, so neighbours never share bits (element i: words 2(i%2) and
// 2(i%2)+1 of counter (offset+2i)/4). `offset` counts words; the caller reserves
// random_words_per_element(dt) * numel of them.
int random_words_per_element(DType dt) { return dt == DType::Float64 ? 2 : 1; }

void fill_uniform(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset,
                  double low, double high) {
  dispatch_floating(dt, "fill_uniform", "cpu", [&]<class T>() {
    T* p = static_cast<T*>(data);
    parallel_range(numel, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double u;
        if constexpr (std::is_same_v<T, double>) {
          const Philox4x32 r = philox(seed, (offset + 2 * static_cast<uint64_t>(i)) / 4, 0);
          const int w = static_cast<int>(i % 2) * 2;
          u = uint_to_unit_double(r.v[w], r.v[w + 1]);
        } else {
          const Philox4x32 r = philox(seed, (offset + static_cast<uint64_t>(i)) / 4, 0);
          u = uint_to_unit_float(r.v[(offset + i) % 4]);
        }
        T out = static_cast<T>(low + (high - low) * u);
        // Rounding to a narrow type can land on `high`; [low, high) must hold.
        if (static_cast<double>(static_cast<acc_t<T>>(out)) >= high) out = static_cast<T>(low);
        p[i] = out;
      }
    });
  });
}

// Box-Muller: one counter's four words make two doubles u1, u2 and so two
// independent normals, radius*cos(angle) for even elements and radius*sin(angle)
// for odd ones. Two elements per counter: two words each.
void fill_normal(DType dt, void* data, int64_t numel, uint64_t seed, uint64_t offset,
                 double mean, double stddev) {
  dispatch_floating(dt, "fill_normal", "cpu", [&]<class T>() {
    T* p = static_cast<T*>(data);
    parallel_range(numel, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const uint64_t pair = offset / 2 + static_cast<uint64_t>(i);  // two words per element
        const Philox4x32 r = philox(seed, pair / 2, 1);
        const double u1 = 1.0 - uint_to_unit_double(r.v[0], r.v[1]);  // (0, 1]: log is finite
        const double u2 = uint_to_unit_double(r.v[2], r.v[3]);
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = 6.283185307179586476925 * u2;
        const double z = (pair % 2 == 0) ? radius * std::cos(angle) : radius * std::sin(angle);
        p[i] = static_cast<T>(mean + stddev * z);
      }
    });
  });
}

}  // namespace ember::cpu
