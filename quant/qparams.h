// Quantization parameters: a float range maps onto integer codes by
//   q = clamp(round(x / scale) + zero_point, qmin, qmax),   x ~ scale * (q - zero_point).
// The choosers follow PyTorch: affine parameters from a min and max
// (ChooseQuantizationParams, used for activations) and symmetric ones for int8
// weights (MinMaxObserver / PerChannelMinMaxObserver with a symmetric qscheme).
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <utility>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::quant {

struct QParams {
  float scale = 1;
  int32_t zero_point = 0;
  bool operator==(const QParams&) const = default;
};

// The smallest scale the affine chooser returns (PyTorch's SMALL_SCALE_THRESHOLD):
// a tinier scale would make 1 / scale overflow or lose the range's precision.
inline constexpr float kMinAffineScale = 6.1e-5f;
// The smallest symmetric scale: float32's machine epsilon, as PyTorch's observers.
inline constexpr float kMinSymmetricScale = 1.1920928955078125e-07f;

// Affine parameters covering [min, max] with codes [qmin, qmax]. The range is first
// widened to include 0, so that 0 (padding, ReLU outputs) is exactly representable;
// reduce_range halves the code range (PyTorch's option for CPUs whose int8 path
// saturates at 16 bits; Ember's VNNI kernel does not need it). A zero or tiny range
// gets a scale of 0.1 or kMinAffineScale; the zero point is rounded and clamped
// into [qmin, qmax]. ValueError when min > max or either is not finite.
QParams choose_qparams(float min, float max, int32_t qmin = 0, int32_t qmax = 255, bool reduce_range = false);

// Symmetric int8 parameters: scale = max(|min|, |max|) / 127.5 (half the code range
// [-128, 127]), at least kMinSymmetricScale; zero_point = 0. reduce_range uses [-64, 63].
QParams choose_symmetric_qparams(float min, float max, bool reduce_range = false);

// The same, from a float32 CPU tensor's own min and max.
QParams choose_qparams(const Tensor& x, int32_t qmin = 0, int32_t qmax = 255, bool reduce_range = false);
QParams choose_symmetric_qparams(const Tensor& x, bool reduce_range = false);
// Symmetric int8 parameters per slice along `axis` (output channels are axis 0 of a
// Linear weight): float32 scales [C] and int32 zero points [C] (all 0).
std::pair<Tensor, Tensor> choose_symmetric_qparams_per_channel(const Tensor& x, int64_t axis = 0,
                                                               bool reduce_range = false);

}  // namespace ember::quant

EMBER_API_END
