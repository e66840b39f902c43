// dequantize_sums (dequantize_sums.h): plain loops the compiler vectorizes. A
// matrix product's sums ([rows, columns], inner 1) go a row at a time against the
// per-column scales and biases; a convolution's ([images, channels, pixels]) a
// channel's pixels at a time against its one scale and bias.
#include "kernels/cpu/dequantize_sums.h"

#include <vector>

#include "kernels/base/functors.h"
#include "kernels/base/parallel.h"

// No fused multiply-add: the product and the sum round on their own, as the Mul and
// Add nodes this pass replaces do (GCC would otherwise contract them at -O3).
#if defined(__clang__)
#define EMBER_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define EMBER_NO_CONTRACT
#pragma GCC optimize("fp-contract=off")
#endif

namespace ember::cpu {
namespace {

// out[i] = relu?(float(sums[i]) * scale[i] (+ bias[i])). Without a bias nothing is
// added: -0 + 0 would be +0 where the ops apart keep -0.
template <bool Bias, bool Relu>
void each(const int32_t* __restrict sums, int64_t n, const float* __restrict scale, const float* __restrict bias,
          float* __restrict out) {
  EMBER_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(sums[i]) * scale[i];
    if constexpr (Bias) v = v + bias[i];
    out[i] = Relu ? functors::relu{}(v) : v;
  }
}

// The same with one scale and one bias for all n.
template <bool Bias, bool Relu>
void shared(const int32_t* __restrict sums, int64_t n, float scale, float bias, float* __restrict out) {
  EMBER_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(sums[i]) * scale;
    if constexpr (Bias) v = v + bias;
    out[i] = Relu ? functors::relu{}(v) : v;
  }
}

template <bool Bias, bool Relu>
void all(const int32_t* sums, int64_t outer, int64_t channels, int64_t inner, const float* s, const float* b,
         float* out) {
  // A team pays off from about 64K values (a quarter of a megabyte each way).
  const bool team = outer * channels * inner >= (int64_t(1) << 16);
  if (inner == 1) {
    parallel_rows(outer, team, [&](int64_t r) {
      each<Bias, Relu>(sums + r * channels, channels, s, b, out + r * channels);
    });
    return;
  }
  parallel_rows(outer * channels, team, [&](int64_t r) {
    const int64_t c = r % channels;
    shared<Bias, Relu>(sums + r * inner, inner, s[c], b[c], out + r * inner);
  });
}

}  // namespace

void dequantize_sums(const int32_t* sums, int64_t outer, int64_t channels, int64_t inner, const float* scale,
                     bool scale_per_channel, const float* bias, bool bias_per_channel, bool relu, float* out) {
  if (outer <= 0 || channels <= 0 || inner <= 0) return;
  // One scale and one bias per channel, spelled out.
  std::vector<float> sc(static_cast<size_t>(channels)), bi(static_cast<size_t>(channels), 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    sc[size_t(c)] = scale[scale_per_channel ? c : 0];
    if (bias) bi[size_t(c)] = bias[bias_per_channel ? c : 0];
  }
  const float *s = sc.data(), *b = bi.data();
  if (bias) {
    if (relu) all<true, true>(sums, outer, channels, inner, s, b, out);
    else all<true, false>(sums, outer, channels, inner, s, b, out);
  } else {
    if (relu) all<false, true>(sums, outer, channels, inner, s, b, out);
    else all<false, false>(sums, outer, channels, inner, s, b, out);
  }
}

}  // namespace ember::cpu
