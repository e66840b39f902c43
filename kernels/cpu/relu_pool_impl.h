// ReLU and 2x2 max pooling applied to a convolution's output as it leaves the
// kernel (conv2d_relu_pool_forward), and the matching backward: the gradient of
// the convolution's output from the pooled gradient. Written once over the vector
// types of conv2d_direct_impl.h and included after it by each
// conv2d_direct_<isa>.cpp inside its instruction-set region.
//
// Why fuse: the seed network's max_pool2d(relu(conv2d(x))) wrote the convolution's
// output, read and wrote it again for ReLU, read it for the pooling, and in training
// swept it twice more backward. Here the output of one image's convolution is pooled
// while it is still in L1, and the full-size activations exist only as a gradient.
//
// The pooling follows PyTorch's max_pool2d(relu(.)) exactly: relu is monotonic, so
// the max of relu(v) is relu of the max of v; the window's positions are tried in
// row-major order, a later one replacing the running maximum when it is larger or
// NaN. Only when the maximum is <= 0 can the chosen position differ from the one
// PyTorch records after the ReLU (a tie of zeros), and there the gradient is 0 either
// way. window[o] records the choice for the backward pass: bits 0-1 the position
// (dy*2 + dx), bit 2 whether the pooled value is > 0 (ReLU's gradient mask), so the
// backward needs neither the activations nor the pooled output (which a caller may
// then modify in place, as it may the three ops' output).
//
// Under bfloat16 autocast the block's convolution rounds its output to bfloat16
// before ReLU and pooling see it; with round_bf16 the float32 values are rounded to
// bfloat16 first here too (still held as floats), so ties between values that round
// alike pick the same position as the bfloat16 ops do.
#pragma once

namespace ember::cpu::conv2d_detail {
namespace {

// Lane selections over two vectors of L lanes (__builtin_shufflevector, which GCC
// and clang both take, with constant indices): the even and odd lanes of their
// concatenation, and the low and high halves of their interleaving.
template <class T, int B>
struct PairLanes {
  static constexpr int L = B / int(sizeof(T));
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef I VI __attribute__((vector_size(B)));
  typedef uint8_t VB __attribute__((vector_size(L)));  // one window byte per lane
  typedef T V __attribute__((vector_size(B)));
  using Idx = std::make_index_sequence<size_t(L)>;
  template <size_t... J>
  static V even(V a, V b, std::index_sequence<J...>) { return __builtin_shufflevector(a, b, int(2 * J)...); }
  template <size_t... J>
  static V odd(V a, V b, std::index_sequence<J...>) { return __builtin_shufflevector(a, b, int(2 * J + 1)...); }
  // a0 b0 a1 b1 ... from the first halves; then the same from the second halves.
  template <size_t... J>
  static V low(V a, V b, std::index_sequence<J...>) {
    return __builtin_shufflevector(a, b, int(J % 2 ? L + J / 2 : J / 2)...);
  }
  template <size_t... J>
  static V high(V a, V b, std::index_sequence<J...>) {
    return __builtin_shufflevector(a, b, int(J % 2 ? L + L / 2 + J / 2 : L / 2 + J / 2)...);
  }
  // L window bytes to and from lanes, as one narrowing or widening instruction
  // (vpmovdb, vpmovzxbd) instead of L scalar moves.
  static void store_bytes(uint8_t* p, VI k) {
    const VB b = __builtin_convertvector(k, VB);
    __builtin_memcpy(p, &b, sizeof(VB));
  }
  static VI load_bytes(const uint8_t* p) {
    VB b;
    __builtin_memcpy(&b, p, sizeof(VB));
    return __builtin_convertvector(b, VI);
  }
  static V even(V a, V b) { return even(a, b, Idx{}); }
  static V odd(V a, V b) { return odd(a, b, Idx{}); }
  static V low(V a, V b) { return low(a, b, Idx{}); }
  static V high(V a, V b) { return high(a, b, Idx{}); }
};

// Bit 2 of a window byte: the pooled value is > 0, so its gradient passes.
constexpr uint8_t kPasses = 4;

// v rounded to the nearest bfloat16 (ties to even), as a float: kernels/base/half.h's
// conversion there and back. The vector version does its add-and-mask on every lane
// and keeps a NaN as it is (the add could carry a NaN whose payload is all in the
// low bits into infinity); only NaN-ness matters to the pooling, and the op's final
// narrowing makes the same bfloat16 NaN of either.
inline float round_bf16(float v) { return bfloat16_bits_to_float(float_to_bfloat16_bits(v)); }
template <int B>
auto round_bf16(typename Vec<float, B>::V v) {
  typedef uint32_t VU __attribute__((vector_size(B)));
  using V = typename Vec<float, B>::V;
  const VU b = (VU)v;  // a cast between vector types of one size keeps the bits
  const VU r = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  return v != v ? v : (V)r;
}

// The scalar step both directions fall back to for the last pooled columns.
template <class T, bool kRound = false>
void relu_pool_one(const T* r0, const T* r1, T* y, uint8_t* win) {
  T v[4] = {r0[0], r0[1], r1[0], r1[1]};
  if constexpr (kRound)
    for (T& e : v) e = round_bf16(e);
  T m = v[0];
  uint8_t k = 0;
  for (uint8_t j = 1; j < 4; ++j)
    if (v[j] > m || v[j] != v[j]) m = v[j], k = j;
  *y = m > T(0) || m != m ? m : T(0);
  if (win) *win = uint8_t(k | (m > T(0) ? kPasses : 0));
}

// n pooled values of one output row from conv rows r0 and r1 (2n columns each), in
// vectors of B bytes, then of halving width for the tail.
template <class T, int B, bool kRound>
void relu_pool_row(const T* r0, const T* r1, T* y, uint8_t* win, int64_t n) {
  using S = Vec<T, B>;
  using V = typename S::V;
  using P = PairLanes<T, B>;
  using VI = typename P::VI;
  constexpr int L = S::L;
  int64_t j = 0;
  if constexpr (L >= 2) {
    for (; j + L <= n; j += L) {
      V a0 = S::load(r0 + 2 * j), a1 = S::load(r0 + 2 * j + L);
      V b0 = S::load(r1 + 2 * j), b1 = S::load(r1 + 2 * j + L);
      if constexpr (kRound) {
        a0 = round_bf16<B>(a0), a1 = round_bf16<B>(a1);
        b0 = round_bf16<B>(b0), b1 = round_bf16<B>(b1);
      }
      const V cand[3] = {P::odd(a0, a1), P::even(b0, b1), P::odd(b0, b1)};
      V m = P::even(a0, a1);
      VI k{};
#pragma GCC unroll 3
      for (int c = 0; c < 3; ++c) {
        const VI takes = (cand[c] > m) | (cand[c] != cand[c]);
        m = takes ? cand[c] : m;
        k = takes ? VI{} + (c + 1) : k;
      }
      const VI passes = m > V{};
      S::store(y + j, (passes | (m != m)) ? m : V{});
      if (win) {
        k |= passes & (VI{} + kPasses);
        P::store_bytes(win + j, k);
      }
    }
  }
  if constexpr (B / 2 >= 2 * int(sizeof(T))) {
    relu_pool_row<T, B / 2, kRound>(r0 + 2 * j, r1 + 2 * j, y + j, win ? win + j : nullptr, n - j);
  } else {
    for (; j < n; ++j) relu_pool_one<T, kRound>(r0 + 2 * j, r1 + 2 * j, y + j, win ? win + j : nullptr);
  }
}

// The inference case of relu_pool_forward_planes (no window bytes, no rounding),
// attempted first: each window's maximum by plain max (`c > m ? c : m`, one vmaxps
// a pair instead of two compares, a mask merge and a blend). Without NaNs it gives
// the exact rule's value: the maximum is the maximum in any order, and the one tie
// whose choice shows, +0 against -0, ReLU turns into +0 either way. So each
// window's four values are also summed and the largest |sum| bit pattern kept; if
// it is a NaN's (a NaN input, or Inf - Inf), false is returned and the caller redoes
// every plane by the exact rule.
//
// One vector of L pooled values per step, starting a row's last step even when
// fewer than L values are left: its extra lanes read past the row's 2*pw columns
// and are stored past its pw values, into the next row's place, which that row
// overwrites (rows go in order). Their lanes are left out of the sum. The last rows,
// whose steps would read past the planes' last value or store past the end of y,
// take relu_pool_one. The seed network's batch-1 blocks (12 and 4 pooled values a
// row) went from 520 and 190 ns to 190 and 72 (one thread, AVX-512, the
// conv2 block with B = 16 bytes).
template <class T, int B>
bool relu_pool_forward_no_nan(const T* conv, int64_t planes, int64_t plane_stride, int64_t row_stride,
                              int64_t h_out, int64_t w_out, T* y) {
  using S = Vec<T, B>;
  using V = typename S::V;
  using P = PairLanes<T, B>;
  using U = std::make_unsigned_t<typename P::I>;
  typedef U VU __attribute__((vector_size(B)));
  constexpr int L = S::L;
  const int64_t ph = h_out / 2, pw = w_out / 2;
  if (ph == 0 || pw == 0) return true;
  const int64_t steps = cdiv(pw, L), rows = planes * ph;
  // Rows whose steps all stay inside the planes and y: all but the last few. (In
  // offsets, so that no pointer past the buffers is formed.)
  const int64_t conv_end = (planes - 1) * plane_stride + (h_out - 1) * row_stride + w_out;
  auto r0_at = [&](int64_t r) { return r / ph * plane_stride + 2 * (r % ph) * row_stride; };
  int64_t fits = rows;
  while (fits > 0 && (r0_at(fits - 1) + row_stride + 2 * steps * L > conv_end ||
                      (fits - 1) * pw + steps * L > rows * pw))
    --fits;
  // |x|'s bits in lanes that hold the row's values: all of a whole step's, the
  // first pw - (steps - 1) * L of its last step's.
  const U abs_bits = std::numeric_limits<U>::max() >> 1;
  VU last_lanes{};
  for (int l = 0; l < L; ++l) last_lanes[l] = (steps - 1) * L + l < pw ? abs_bits : 0;
  VU worst{};  // the largest |sum| bits seen
  auto step = [&](const T* r0, const T* r1, T* yo, VU lanes) {
    const V a0 = S::load(r0), a1 = S::load(r0 + L), b0 = S::load(r1), b1 = S::load(r1 + L);
    const V e0 = P::even(a0, a1), o0 = P::odd(a0, a1), e1 = P::even(b0, b1), o1 = P::odd(b0, b1);
    const V m0 = o0 > e0 ? o0 : e0, m1 = o1 > e1 ? o1 : e1;
    const V m = m1 > m0 ? m1 : m0;
    S::store(yo, m > V{} ? m : V{});
    const VU bits = (VU)((e0 + o0) + (e1 + o1)) & lanes;
    worst = bits > worst ? bits : worst;
  };
  int64_t r = 0;
  for (int64_t p = 0; p < planes && r < fits; ++p)
    for (int64_t py = 0; py < ph && r < fits; ++py, ++r) {
      const T* r0 = conv + p * plane_stride + 2 * py * row_stride;
      T* yo = y + r * pw;
      int64_t j = 0;
      for (; j < steps - 1; ++j) step(r0 + 2 * j * L, r0 + row_stride + 2 * j * L, yo + j * L, VU{} + abs_bits);
      step(r0 + 2 * j * L, r0 + row_stride + 2 * j * L, yo + j * L, last_lanes);
    }
  // The last rows by the exact rule (NaNs there need no second pass).
  for (; r < rows; ++r)
    for (int64_t j = 0; j < pw; ++j)
      relu_pool_one<T>(conv + r0_at(r) + 2 * j, conv + r0_at(r) + row_stride + 2 * j, y + r * pw + j, nullptr);
  const U inf_bits = std::bit_cast<U>(std::numeric_limits<T>::infinity());  // |NaN|'s bits are larger
  for (int l = 0; l < L; ++l)
    if (worst[l] > inf_bits) return false;
  return true;
}

// `planes` planes of a convolution's output (plane p at conv + p*plane_stride, row
// oy at + oy*row_stride, h_out x w_out values) into y [planes][h_out/2][w_out/2] and
// window (nullable) of the same shape. An odd last row or column is dropped, as
// max_pool2d's floor mode does. round_bf16 (float only) rounds each value to
// bfloat16 first.
template <class T>
void relu_pool_forward_planes(const T* conv, int64_t planes, int64_t plane_stride, int64_t row_stride,
                              int64_t h_out, int64_t w_out, T* y, uint8_t* window, bool round_bf16) {
  if (!window && !round_bf16) {
    // Steps as narrow as the rows allow (down to 16 bytes): the seed network's conv2
    // has 4 pooled values a row.
    constexpr int L = Vec<T>::L;
    const int64_t pw = w_out / 2;
    auto no_nan = [&]<int B>() {
      return relu_pool_forward_no_nan<T, B>(conv, planes, plane_stride, row_stride, h_out, w_out, y);
    };
    bool done;
    if (kBytes >= 64 && pw <= L / 4) done = no_nan.template operator()<16>();
    else if (kBytes >= 32 && pw <= L / 2) done = no_nan.template operator()<kBytes / 2>();
    else done = no_nan.template operator()<kBytes>();
    if (done) return;
  }
  const int64_t ph = h_out / 2, pw = w_out / 2;
  auto run = [&]<bool kRound>() {
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t py = 0; py < ph; ++py) {
        const T* r0 = conv + p * plane_stride + 2 * py * row_stride;
        const int64_t o = (p * ph + py) * pw;
        relu_pool_row<T, kBytes, kRound>(r0, r0 + row_stride, y + o, window ? window + o : nullptr, pw);
      }
  };
  if constexpr (std::is_same_v<T, float>) {
    if (round_bf16) return run.template operator()<true>();
  }
  run.template operator()<false>();
}

// The gradient of one pooled row's 2n conv columns in rows g0 and g1: the pooled
// gradient where the pooled value was > 0 (ReLU's rule: not where it is 0 or NaN) at
// the position its window chose, 0 at the other three. The gradient gets + 0, as the
// three ops' max-pool backward adds it to a zero, so a -0 arrives as +0 there too.
template <class T, int B>
void relu_pool_grad_row(const T* gy, const uint8_t* win, T* g0, T* g1, int64_t n) {
  using S = Vec<T, B>;
  using V = typename S::V;
  using P = PairLanes<T, B>;
  using VI = typename P::VI;
  constexpr int L = S::L;
  int64_t j = 0;
  if constexpr (L >= 2) {
    for (; j + L <= n; j += L) {
      const VI w = P::load_bytes(win + j);
      const V g = (w & kPasses) != 0 ? S::load(gy + j) + V{} : V{};
      const VI k = w & 3;
      const V v0 = k == 0 ? g : V{}, v1 = k == 1 ? g : V{}, v2 = k == 2 ? g : V{}, v3 = k == 3 ? g : V{};
      S::store(g0 + 2 * j, P::low(v0, v1));
      S::store(g0 + 2 * j + L, P::high(v0, v1));
      S::store(g1 + 2 * j, P::low(v2, v3));
      S::store(g1 + 2 * j + L, P::high(v2, v3));
    }
  }
  if constexpr (B / 2 >= 2 * int(sizeof(T))) {
    relu_pool_grad_row<T, B / 2>(gy + j, win + j, g0 + 2 * j, g1 + 2 * j, n - j);
  } else {
    for (; j < n; ++j) {
      const T g = win[j] & kPasses ? gy[j] + T(0) : T(0);
      T* const at[4] = {g0 + 2 * j, g0 + 2 * j + 1, g1 + 2 * j, g1 + 2 * j + 1};
      for (int q = 0; q < 4; ++q) *at[q] = (win[j] & 3) == q ? g : T(0);
    }
  }
}

// grad_conv [planes][h_out][w_out] from gy and window [planes][h_out/2][w_out/2];
// every element is written, the dropped last row and column as 0.
template <class T>
void relu_pool_backward_planes(const T* gy, const uint8_t* window, int64_t planes, int64_t h_out,
                               int64_t w_out, T* grad_conv) {
  const int64_t ph = h_out / 2, pw = w_out / 2;
  for (int64_t p = 0; p < planes; ++p) {
    T* gp = grad_conv + p * h_out * w_out;
    for (int64_t py = 0; py < ph; ++py) {
      const int64_t o = (p * ph + py) * pw;
      T* g0 = gp + 2 * py * w_out;
      relu_pool_grad_row<T, kBytes>(gy + o, window + o, g0, g0 + w_out, pw);
      if (w_out % 2) g0[w_out - 1] = g0[2 * w_out - 1] = T(0);
    }
    if (h_out % 2) zero_n(gp + (h_out - 1) * w_out, w_out);
  }
}

// spread_rows (conv2d_direct_impl.h) for the fused block's backward: rows
// channels of the convolution's output gradient made from the pooled gradient gy
// and its window bytes ([rows][h_out/2][w_out/2]) straight onto the virtual grid
// (row oy at oy*Wv of each dst row of ld >= Pv, zeros elsewhere). The values are
// relu_pool_backward_planes' exactly; only the full-size plane is never stored.
template <class T>
void spread_pooled_rows(const Conv2dShape& s, const Direct& v, const T* gy, const uint8_t* window, int64_t rows,
                        T* dst, int64_t ld) {
  const int64_t ph = s.h_out / 2, pw = s.w_out / 2;
  for (int64_t r = 0; r < rows; ++r) {
    // The whole row zeroed in wide stores first (the grid's padding columns, an odd
    // last row or column), then each pair of conv rows written over it: cheaper
    // than a short zeroing call per conv row (the seed net's conv1 has 24 of them).
    T* d = dst + r * ld;
    zero_n(d, ld);
    for (int64_t py = 0; py < ph; ++py) {
      const int64_t o = (r * ph + py) * pw;
      T* row = d + 2 * py * v.Wv;
      relu_pool_grad_row<T, kBytes>(gy + o, window + o, row, row + v.Wv, pw);
    }
  }
}

template <class T>
constexpr ReluPool<T> relu_pool_table() {
  return {relu_pool_forward_planes<T>, relu_pool_backward_planes<T>};
}

}  // namespace
}  // namespace ember::cpu::conv2d_detail
